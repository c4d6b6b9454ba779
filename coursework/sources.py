"""The instructor's chapters, each read and hashed once at the start of a grading run."""

from __future__ import annotations

import dataclasses
import pathlib

import nbformat

from . import book
from .hashing import sha256


@dataclasses.dataclass
class Chapter:
    """One instructor chapter, read and hashed once."""

    name: str
    path: pathlib.Path
    data: bytes
    nb: nbformat.NotebookNode
    expected: dict = dataclasses.field(default_factory=dict)  # label -> values.loads result

    @property
    def sha256(self):
        return sha256(self.data)

    @property
    def coding(self):
        return [e for e in book.exercises(self.nb) if e.coding]

    @property
    def by_hand(self):
        return [e for e in book.exercises(self.nb) if e.by_hand]

    @property
    def hand_parts(self):
        """The answers graded by hand (:class:`coursework.book.HandPart`): pen-and-paper
        exercises and the written parts of coding exercises."""
        return [p for e in book.exercises(self.nb) for p in e.hand_parts]

    def tolerances(self, e):
        return book.tolerances(self.nb.cells[e.checks[0]])


def load_chapters(root, toc):
    chapters = {}
    for path in book.toc_notebooks(root, toc):
        data = path.read_bytes()
        chapters[path.stem] = Chapter(
            path.stem, path, data, nbformat.reads(data.decode("utf-8"), as_version=4)
        )
    return chapters
