"""The student edition writes out what JupyterLab cannot resolve (coursework.student step 5,
coursework.xref): the website's numbers, references to other chapters, citations, answer
markers, and the metadata JupyterLab would otherwise change on opening."""

import re

import nbformat
import pytest

from coursework import book, student, xref

LAPLACE = book.ROOT / "book" / "05_laplace.ipynb"


@pytest.fixture(scope="module")
def index():
    return xref.book_index(book.ROOT)


@pytest.fixture(scope="module")
def laplace(index):
    return student.student_notebook(LAPLACE, index)


def test_numbers_follow_the_toc(index):
    chapters = list(index.chapters.values())
    numbered = [c for c in chapters if c.number]
    assert [c.number for c in numbered] == [str(i) for i in range(1, len(numbered) + 1)]
    assert index.chapters["05_laplace"].number == "5"
    # the first labelled equation and the first exercise of chapter 5
    src = book.read(LAPLACE)
    first_eq = xref.equation_labels(src)[0]
    first_ex = book.exercises(src)[0].label
    assert index.targets[first_eq].number == "5.1" and index.targets[first_ex].number == "5.1"
    assert index.targets[xref.equation_labels(src)[-1]].number == f"5.{len(xref.equation_labels(src))}"


def test_number_equations_nests_its_fences():
    text = "A\n\n$$\nx = 1\n$$ (eq-a)\n\n````{exercise} T\n:label: ex-a\n\n$$\ny\n$$\n````\n" \
           "```{note}\n$$\nz\n$$ (eq-b)\n```"
    out = student.number_equations(text, {"eq-a": "2.1", "eq-b": "2.2"})
    assert "```{math}\n:label: eq-a\n:enumerator: 2.1\n:enumerated: true\nx = 1\n```" in out
    assert "```{math}\n:enumerated: false\ny\n```\n````" in out          # inside ```` : ```
    assert ":::{math}\n:label: eq-b\n:enumerator: 2.2\n:enumerated: true\nz\n:::\n```" in out  # inside ```
    assert "$$" not in out


def test_citations_and_chapters_written_out(laplace, index):
    text = "\n".join(book.source(c) for c in laplace.cells if c.cell_type == "markdown")
    assert not re.search(r"\{(cite(:[a-z]+)?|doc|numref)\}`", text), "a role JupyterLab cannot resolve is left"
    assert "MacKay (1992)" in text and "[The ℓ₂ prior and the MAP estimate](04_map_prior.ipynb)" in text
    refs = laplace.cells[-1]
    assert refs.cell_type == "markdown" and book.source(refs).startswith("## References")
    assert "Bishop (2006). Christopher M. Bishop. Pattern Recognition and Machine Learning" in book.source(refs)
    # every {eq} left points at an equation of this notebook, numbered as on the website
    here = set(re.findall(r":label: (eq-[^\s]+)\n:enumerator: 5\.\d+", text))
    left = set(re.findall(r"\{eq\}`([^`]+)`", text))
    assert left and left <= here
    for label in here:
        assert f":label: {label}\n:enumerator: {index.targets[label].number}\n" in text


def test_exercises_numbered_and_answers_marked(laplace, index):
    exercises = book.exercises(book.read(LAPLACE))
    text = "\n".join(book.source(c) for c in laplace.cells)
    for e in exercises:
        assert f":label: {e.label}\n:enumerator: {index.targets[e.label].number}" in text
    for i, cell in enumerate(laplace.cells):
        if book.is_answer(cell) or book.is_manual_answer(cell):
            above = book.source(laplace.cells[i - 1])
            gid = book.nbgrader_meta(cell)["grade_id"]
            e = next(e for e in exercises if gid in (e.answer_id, e.written_id))
            assert "Your answer: Exercise " + index.targets[e.label].number in above
            points = e.written_points if gid == e.written_id else e.points
            assert f"{points:g} point" in above
            assert ("in words" in above.splitlines()[0]) == (gid == e.written_id)  # the title
    assert any(e.written for e in exercises)  # the written parts of chapter 5 are marked too


def test_metadata_as_jupyterlab_writes_it(laplace):
    spec, info = student.kernel_metadata()
    assert laplace.metadata["kernelspec"] == spec and laplace.metadata["language_info"] == info
    assert info["version"].count(".") == 2 and spec["name"] == "python3"
    nbformat.validate(laplace)


def test_code_names_equations_by_number(index):
    """Comments and docstrings in code cells name equations, exercises and figures as the
    reader sees them numbered, not by label (check cells carry no label:
    book.structure_problems)."""
    label_re = re.compile(r"\b(?:eq|ex|fig)-[a-z0-9]+(?:-[a-z0-9]+)*\b")
    seen = 0
    for path in book.toc_notebooks():
        src = book.read(path)
        seen += sum(len(label_re.findall(book.source(c))) for c in src.cells if c.cell_type == "code")
        nb = student.student_notebook(path, index)
        for cell in nb.cells:
            if cell.cell_type == "code":
                left = [m for m in label_re.findall(book.source(cell)) if m in index.targets]
                assert not left, f"{path.name}: labels left in a code cell: {left}"
    assert seen > 40  # the chapters do name labels in code; they are numbered above
    lap = student.student_notebook(LAPLACE, index)
    answer = next(c for c in lap.cells if book.nbgrader_meta(c).get("grade_id") == "ex-ch5-evidence-gradient-answer")
    number = index.targets["eq-ch5-evidence-derivative"].number
    assert f"the Laplace log evidence ({number}), a float" in book.source(answer)
