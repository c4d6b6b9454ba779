"""The student edition of the chapters (``make student``, ``python -m coursework.student [OUT_DIR]``).

nbconvert's :class:`~nbconvert.exporters.NotebookExporter` runs, in order:

1. :class:`RemoveSolutionDirectives` (here): deletes every ``{solution}`` directive block from
   the markdown cells, keeping any other text of the cell (a cell left empty is dropped);
2. nbgrader's ``ClearSolutions``: the code between ``### BEGIN SOLUTION`` and
   ``### END SOLUTION`` becomes ``# YOUR CODE HERE`` / ``raise NotImplementedError()`` (what the
   answer cell says outside the markers, the ``def`` line or the comment naming the value,
   stays), and the markdown answer cell of a pen-and-paper exercise becomes "YOUR ANSWER HERE";
3. nbgrader's ``LockCells``: check cells cannot be edited or deleted in Jupyter, answer cells
   (code and markdown) cannot be deleted;
4. nbgrader's ``ClearOutput``: no outputs, no execution counts.
"""

from __future__ import annotations

import argparse
import pathlib
import re
import sys

import nbformat
from nbconvert.exporters import NotebookExporter
from nbconvert.preprocessors import Preprocessor
from nbgrader.preprocessors import ClearOutput, ClearSolutions, LockCells

from . import book

FENCE_OPEN_RE = re.compile(r"^(?P<fence>`{3,}|:{3,})\{solution\}")


def remove_solution_directives(text):
    """``text`` without its ``{solution}`` directive blocks (fenced with backticks or colons)."""
    out, lines, i = [], text.split("\n"), 0
    while i < len(lines):
        m = FENCE_OPEN_RE.match(lines[i])
        if not m:
            out.append(lines[i])
            i += 1
            continue
        fence = m.group("fence")
        close = re.compile("^" + re.escape(fence[0]) + "{" + str(len(fence)) + r",}\s*$")
        j = i + 1
        while j < len(lines) and not close.match(lines[j]):
            j += 1
        i = j + 1  # skip the block and its closing fence
    cleaned = "\n".join(out)
    return re.sub(r"\n{3,}", "\n\n", cleaned).strip("\n")


class RemoveSolutionDirectives(Preprocessor):
    """Drop the ``{solution}`` explanations from markdown cells (and cells left empty)."""

    def preprocess(self, nb, resources):
        cells = []
        for cell in nb.cells:
            if cell.cell_type == "markdown" and book.SOLUTION_RE.search(book.source(cell)):
                cell.source = remove_solution_directives(book.source(cell))
                if not cell.source.strip():
                    continue
            cells.append(cell)
        nb.cells = cells
        return nb, resources


def exporter():
    exp = NotebookExporter()
    for pre in (
        RemoveSolutionDirectives(),
        ClearSolutions(enforce_metadata=True),
        LockCells(),
        ClearOutput(),
    ):
        exp.register_preprocessor(pre, enabled=True)
    return exp


def student_notebook(path):
    """The student edition of one chapter, as a NotebookNode."""
    body, _ = exporter().from_filename(str(path))
    nb = nbformat.reads(body, as_version=4)
    nbformat.validate(nb)
    return nb


def build(out_dir, root=book.ROOT, toc="_toc.yml"):
    """Write the student edition of every chapter in the toc to ``out_dir``; return the paths."""
    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for path in book.toc_notebooks(root, toc):
        target = out_dir / path.name
        nbformat.write(student_notebook(path), str(target))
        written.append(target)
    return written


def main(argv=None):
    ap = argparse.ArgumentParser(description="Write the student edition of every chapter in the toc.")
    ap.add_argument("out", nargs="?", default=str(book.ROOT / "_build" / "student"))
    ap.add_argument("--root", default=str(book.ROOT))
    ap.add_argument("--toc", default="_toc.yml")
    args = ap.parse_args(argv)
    written = build(args.out, args.root, args.toc)
    for p in written:
        print(f"student edition: {p}")
    if not written:
        print("no chapter notebooks found in the toc", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
