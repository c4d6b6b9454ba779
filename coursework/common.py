"""What the grader's modules share: a row of ``grades.csv``, the error that stops a grading
run, printable text, grade ids, and opening a folder without following a link."""

from __future__ import annotations

import dataclasses
import os

from . import book


FIELDS = ["student", "chapter", "exercise", "points", "max_points", "error", "notes"]
BY_HAND_CHARS = 20_000  # of a pen-and-paper answer, kept for by_hand.md and the feedback


UNSAFE_WARNING = (
    "graded WITHOUT the sandbox (--unsafe-no-sandbox): every notebook ran with the grader's "
    "own permissions and could read the solutions, change the book, the other submissions "
    "and these grades, reach the network and leave processes running; trust these grades "
    "only if you trust every submission"
)


class GradingError(RuntimeError):
    """Grading cannot start (broken instructor notebook, no sandbox, bad folder)."""


@dataclasses.dataclass
class Row:
    student: str
    chapter: str
    exercise: str
    points: float | None  # None: graded by hand
    max_points: float
    error: str = ""
    notes: str = ""


def grade_id(cell):
    gid = book.nbgrader_meta(cell).get("grade_id")
    return gid if isinstance(gid, str) else None


def shown(text, keep=""):
    """``text`` with every character that is not printable written as an escape (``\\n``,
    ``\\x1b``, ``\\u202e``; a byte that is not UTF-8, which Python reads as a lone surrogate,
    as ``\\xff``), except the characters in ``keep``.  Whatever a student names a file or
    prints, it then cannot break a line of the summary, move the terminal's cursor, or make
    ``grades.csv`` unwritable.

    >>> print(shown("ada\\nbob \\x1b[2J \\udcff \\u202eabc \\ud800"))
    ada\\nbob \\x1b[2J \\xff \\u202eabc \\ud800
    """
    out = []
    for c in str(text):
        if c.isprintable() or c in keep:
            out.append(c)
        elif "\udc80" <= c <= "\udcff":
            out.append(f"\\x{ord(c) - 0xDC00:02x}")
        else:
            out.append(c.encode("unicode_escape").decode("ascii"))
    return "".join(out)


def open_dir(name, dir_fd=None):
    return os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
