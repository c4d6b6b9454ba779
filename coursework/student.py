"""The student edition of the chapters (``make student``, ``python -m coursework.student [OUT_DIR]``).

nbconvert's :class:`~nbconvert.exporters.NotebookExporter` runs, in order:

1. :class:`RemoveSolutionDirectives` (here): deletes every ``{solution}`` directive block from
   the markdown cells, keeping any other text of the cell (a cell left empty is dropped);
2. nbgrader's ``ClearSolutions``: the code between ``### BEGIN SOLUTION`` and
   ``### END SOLUTION`` becomes ``# YOUR CODE HERE`` / ``raise NotImplementedError()`` (what the
   answer cell says outside the markers, the ``def`` line or the comment naming the value,
   stays), and the markdown answer cell of a pen-and-paper exercise, or of a coding exercise's
   written part, becomes "YOUR ANSWER HERE";
3. nbgrader's ``ClearHiddenTests``: the lines of a check cell between ``### BEGIN HIDDEN
   TESTS`` and ``### END HIDDEN TESTS`` (assertions that would give the answer away) are
   removed; the grader runs the whole check cell of the source
   (:func:`coursework.merging.merge`);
4. nbgrader's ``LockCells``: check cells cannot be edited or deleted in Jupyter, answer cells
   (code and markdown) cannot be deleted;
5. nbgrader's ``ClearOutput``: no outputs, no execution counts;
6. :class:`ResolveBookReferences` (here): what JupyterLab cannot know, written out from the whole
   book (:mod:`coursework.xref`): every equation and exercise carries the website's number
   (``:enumerator: 5.3``, so jupyterlab-myst shows (5.3), not (3)); a reference to another
   chapter, to its equations, exercises or figures, or to a solution that was removed becomes
   "chapter 8 (title)" or the number, linked to that notebook; a citation becomes
   "Rasmussen and Williams (2006)" and the cited works are listed in a last cell,
   "References"; a label in a code cell's comments or strings becomes its number ("(5.9)",
   "Exercise 6.2"); every answer cell gets a marked cell just above it saying what to write
   there and for how many points;
7. :func:`settle_metadata`: the kernel's own ``kernelspec`` and ``language_info``, so that
   JupyterLab, which writes them when the kernel starts, finds nothing to change and opens
   the notebook without unsaved changes.
"""

from __future__ import annotations

import argparse
import functools
import pathlib
import platform
import re
import sys

import nbformat
from nbconvert.exporters import NotebookExporter
from nbconvert.preprocessors import Preprocessor
from nbgrader.preprocessors import ClearHiddenTests, ClearOutput, ClearSolutions, LockCells

from . import book, xref

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


# ----------------------------------------------------------------- the book's numbers and references

FENCE_RE = re.compile(r"^(?P<fence>`{3,}|:{3,})(?P<rest>.*)$")


def _math_directive(label, number, body, outer):
    """A display equation as a MyST ``{math}`` directive with the website's number (or none),
    fenced so that it nests inside the directive ``outer`` (``None``, or its fence)."""
    if outer is None or outer[0] == ":":
        fence = "```"
    elif len(outer) > 3:
        fence = "`" * (len(outer) - 1)
    else:
        fence = ":::"
    opts = [f":label: {label}", f":enumerator: {number}", ":enumerated: true"] if label else \
        [":enumerated: false"]
    return [fence + "{math}", *opts, *body, fence]


def number_equations(text, numbers):
    """Every ``$$ ... $$`` display equation of ``text`` (its own lines) as a ``{math}``
    directive: a labelled one with its number from ``numbers`` (label -> "5.3"), an unlabelled
    one unnumbered, as on the website."""
    lines, out, fences, i = text.split("\n"), [], [], 0  # fences: [(fence, is_directive)]
    while i < len(lines):
        line = lines[i]
        m = FENCE_RE.match(line)
        if m:
            fence, rest = m.group("fence"), m.group("rest")
            if fences and fence[0] == fences[-1][0][0] and len(fence) >= len(fences[-1][0]) and not rest.strip():
                fences.pop()
            elif fences and fences[-1][0][0] == "`" and not fences[-1][1]:
                pass  # inside a code block
            else:
                fences.append((fence, rest.startswith("{")))
            out.append(line)
            i += 1
            continue
        in_code = bool(fences) and not fences[-1][1]
        if line.strip() == "$$" and not in_code:
            j = i + 1
            while j < len(lines) and not lines[j].strip().startswith("$$"):
                j += 1
            if j < len(lines):
                close = xref.EQ_LABEL_RE.match(lines[j])
                label = close.group("label") if close else None
                if label is None and lines[j].strip() != "$$":
                    out.append(line)
                    i += 1
                    continue
                outer = fences[-1][0] if fences else None
                out += _math_directive(label, numbers.get(label, ""), lines[i + 1 : j], outer)
                i = j + 1
                continue
        out.append(line)
        i += 1
    return "\n".join(out)


def number_exercises(text, numbers):
    """Each ``{exercise}`` directive with a ``:label:`` gets ``:enumerator:`` its number."""
    def add(m):
        number = numbers.get(m.group("label"))
        return m.group(0) + (f"\n:enumerator: {number}" if number else "")

    return book.LABEL_RE.sub(add, text) if book.EXERCISE_RE.search(text) else text


class ResolveBookReferences(Preprocessor):
    """Write out, with the whole book's numbers, what jupyterlab-myst cannot resolve in one
    notebook (see the module docstring, step 6)."""

    def __init__(self, index, path, source_nb, **kw):
        super().__init__(**kw)
        self.index, self.stem, self.source_nb = index, pathlib.Path(path).stem, source_nb

    # --- references
    def link(self, text, target):
        return text if target.doc == self.stem else f"[{text}]({target.doc}.ipynb)"

    def resolve(self, m, here_labels, cited):
        role, body = m.group("role"), m.group("body").strip()
        explicit = xref.EXPLICIT_RE.match(body)
        text, label = (explicit.group("text"), explicit.group("target").strip()) if explicit else (None, body)
        if role.startswith("cite"):
            keys = [k.strip() for k in body.split(",")]
            if any(k not in self.index.bib for k in keys):
                return m.group(0)
            cited.update(keys)
            if role == "cite:t":
                return ", ".join(xref.cite_text(self.index.bib[k], "t") for k in keys)
            inner = "; ".join(xref.cite_text(self.index.bib[k], "p") for k in keys)
            return inner if role == "cite:ps" else f"({inner})"
        if role == "doc":
            stem = self.index.chapter_of(label)
            page = self.index.pages.get(pathlib.PurePosixPath(label).name)
            if stem is None and page is not None:
                return text or page.title  # a page of the website only, not a notebook
            if stem is None:
                return m.group(0)
            chapter = self.index.chapters[stem]
            return f"[{text or chapter.title}]({stem}.ipynb)"
        target = self.index.targets.get(label)
        if target is None:
            return m.group(0)
        if role == "eq":
            if target.doc == self.stem and label in here_labels and text is None:
                return m.group(0)  # jupyterlab-myst numbers it as the website does
            return self.link(text or f"({target.number})", target)
        # {ref} and {numref}: exercises and figures, named as the website names them
        name = {"exercise": "Exercise", "figure": "Fig."}.get(target.kind, "")
        if text is not None:
            shown = text.replace("%s", target.number).replace("{number}", target.number)
        else:
            shown = f"{name} {target.number}".strip()
        return self.link(shown, target)

    def preprocess(self, nb, resources):
        numbers = {label: t.number for label, t in self.index.targets.items() if t.doc == self.stem}
        here_labels = {m.group("label") for c in nb.cells if c.cell_type == "markdown"
                       for m in xref.EQ_LABEL_RE.finditer(book.source(c))}
        cited = set()
        for cell in nb.cells:
            if cell.cell_type == "code" and not book.is_check(cell):  # labels in comments
                # (a check cell is shown as the grader runs it: book.structure_problems keeps
                # labels out of it)
                cell.source = xref.number_code_labels(book.source(cell), self.index.targets)
                continue
            if cell.cell_type != "markdown" or book.is_manual_answer(cell):
                continue
            text = xref.ROLE_RE.sub(lambda m: self.resolve(m, here_labels, cited), book.source(cell))
            text = number_equations(text, numbers)
            cell.source = number_exercises(text, numbers)
        nb.cells = self.mark_answer_cells(nb.cells)
        if cited:
            entries = sorted((self.index.bib[k] for k in cited),
                             key=lambda e: (xref.cite_authors(e), e.fields.get("year", "")))
            nb.cells.append(nbformat.v4.new_markdown_cell(
                "## References\n\n" + "\n".join(f"- {xref.reference_entry(e)}" for e in entries),
                metadata={"editable": False, "deletable": False}))
        return nb, resources

    # --- answer cells
    def mark_answer_cells(self, cells):
        exercises = {}
        for e in book.exercises(self.source_nb):
            number = self.index.targets[e.label].number if e.label in self.index.targets else ""
            exercises[e.answer_id] = (e, number, "code" if e.coding else "paper")
            if e.written:
                exercises[e.written_id] = (e, number, "written")
        out = []
        for cell in cells:
            gid = book.nbgrader_meta(cell).get("grade_id")
            if gid in exercises and (book.is_answer(cell) or book.is_manual_answer(cell)):
                out.append(answer_marker(*exercises[gid]))
            out.append(cell)
        return out


def _points(p):
    return f"{p:g} point" + ("" if p == 1 else "s")


def answer_marker(exercise, number, kind):
    """The marked cell above an answer cell of ``kind`` ``"code"``, ``"written"`` (the part of a
    coding exercise answered in words) or ``"paper"``: which exercise, what to write, how many
    points."""
    title = f"Exercise {number}".strip() + (f" ({exercise.title})" if exercise.title else "")
    if kind == "code":
        what = ("Write your code in the cell below, in place of `raise NotImplementedError()`, "
                "keeping the names its first lines state. The check cell after it compares your "
                f"values with the instructor's: {_points(exercise.points)}, graded automatically.")
        if exercise.written:
            what += " The questions in words have their own answer cell after the check."
    elif kind == "written":
        title += ", in words"
        what = ("Answer the questions of this exercise that ask for words (why, what you "
                "see, how it compares) in the cell below, in place of YOUR ANSWER HERE "
                "(Markdown, with `$...$` for mathematics; quote the numbers your code printed): "
                f"{_points(exercise.written_points)}, graded by hand.")
    else:
        what = ("Write your answer in the cell below, in place of YOUR ANSWER HERE (Markdown, "
                "with `$...$` for mathematics): "
                f"{_points(exercise.points)}, graded by hand.")
    text = f"```{{admonition}} ✎ Your answer: {title}\n:class: important\n\n{what}\n```"
    return nbformat.v4.new_markdown_cell(text, metadata={"editable": False, "deletable": False,
                                                         "tags": ["answer-marker"]})


@functools.lru_cache(maxsize=None)
def kernel_metadata(kernel="python3"):
    """``(kernelspec, language_info)`` as JupyterLab writes them once the kernel of this
    environment starts (the kernel runs this Python)."""
    try:
        from jupyter_client.kernelspec import KernelSpecManager

        display = KernelSpecManager().get_kernel_spec(kernel).display_name
    except Exception:  # no kernel installed here: the name ipykernel gives it
        display = "Python 3 (ipykernel)"
    spec = {"display_name": display, "language": "python", "name": kernel}
    info = {
        "codemirror_mode": {"name": "ipython", "version": 3},
        "file_extension": ".py",
        "mimetype": "text/x-python",
        "name": "python",
        "nbconvert_exporter": "python",
        "pygments_lexer": "ipython3",
        "version": platform.python_version(),
    }
    return spec, info


def settle_metadata(nb):
    """Give ``nb`` the metadata JupyterLab would write on opening it (see the module docstring)."""
    spec, info = kernel_metadata()
    nb.metadata["kernelspec"] = dict(spec)
    nb.metadata["language_info"] = dict(info)
    return nb


def exporter():
    exp = NotebookExporter()
    for pre in (
        RemoveSolutionDirectives(),
        ClearSolutions(enforce_metadata=True),
        ClearHiddenTests(enforce_metadata=True),
        LockCells(),
        ClearOutput(),
    ):
        exp.register_preprocessor(pre, enabled=True)
    return exp


def _book_root(path):
    """The book a chapter belongs to: the nearest folder above it with a ``_toc.yml``."""
    for parent in pathlib.Path(path).resolve().parents:
        if (parent / "_toc.yml").exists():
            return parent
    return None


def student_notebook(path, index=None):
    """The student edition of one chapter, as a NotebookNode; ``index`` (a
    :class:`coursework.xref.BookIndex`) defaults to the book the chapter belongs to."""
    body, _ = exporter().from_filename(str(path))
    nb = nbformat.reads(body, as_version=4)
    if index is None:
        root = _book_root(path)
        index = xref.book_index(root) if root else xref.BookIndex({}, {}, {})
    nb, _ = ResolveBookReferences(index, path, book.read(path)).preprocess(nb, {})
    settle_metadata(nb)
    nbformat.validate(nb)
    return nb


def build(out_dir, root=book.ROOT, toc="_toc.yml"):
    """Write the student edition of every chapter in the toc to ``out_dir``; return the paths."""
    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    index = xref.book_index(root, toc)
    written = []
    for path in book.toc_notebooks(root, toc):
        target = out_dir / path.name
        nbformat.write(student_notebook(path, index), str(target))
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
