"""Coursework: exercise structure of every chapter, the student edition, autograding.

Unit tests of the tools run on the fixture book in tests/fixtures/ (two small chapters in the
exact exercise format of DESIGN.md); the book tests run on every chapter listed in _toc.yml.
Executing notebooks is slow, so each notebook is executed once per session (in parallel
processes) and the per-cell results are shared by the tests.
"""

import concurrent.futures
import copy
import csv
import os
import pathlib
import shutil
import subprocess
import sys

import nbformat
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
from coursework import book, grade, runner, student

FIXTURES = ROOT / "tests" / "fixtures"
FX_A = FIXTURES / "book" / "fx_a_sigmoid.ipynb"
FX_B = FIXTURES / "book" / "fx_b_gradient.ipynb"
CHAPTERS = book.toc_notebooks(ROOT)
CHAPTER_IDS = [p.stem for p in CHAPTERS]
VENV_BIN = pathlib.Path(sys.executable).parent


def _jobs():
    return max(2, min(4, os.cpu_count() or 1))


# ----------------------------------------------------------------------------- structure

def test_fixture_book_follows_the_conventions():
    for path in book.toc_notebooks(FIXTURES):
        assert book.structure_problems(book.read(path), path.name) == []
    exs = book.exercises(book.read(FX_A))
    assert [(e.label, e.coding, e.points) for e in exs] == [
        ("ex-fx-zero", True, 1.0), ("ex-fx-loglik", True, 3.0), ("ex-fx-paper", False, 0.0)]


def _mutate(fn):
    nb = book.read(FX_A)
    fn(nb)
    return book.structure_problems(nb, "fx")


@pytest.mark.parametrize("mutation, expected", [
    (lambda nb: nb.cells.pop(4), "0 check cells"),
    (lambda nb: nb.cells.insert(4, nbformat.v4.new_code_cell("x = 1")), "does not immediately follow"),
    (lambda nb: nb.cells[4].metadata.nbgrader.update(points=0), "points=0"),
    (lambda nb: nb.cells[4].metadata.nbgrader.update(grade_id="ex-fx-other-check"), "grade_id='ex-fx-other-check'"),
    (lambda nb: nb.cells[3].metadata.nbgrader.update(grade_id="zero"), "grade_id='zero'"),
    (lambda nb: nb.cells.insert(4, copy.deepcopy(nb.cells[3])), "2 answer cells"),
    (lambda nb: nb.cells[3].update(source="p0 = 0.5"), "BEGIN SOLUTION"),
    (lambda nb: nb.cells[3].metadata.update(tags=[]), "not tagged hide-input"),
    (lambda nb: nb.cells[1].update(source="### BEGIN SOLUTION\nx = 1\n### END SOLUTION"), "not an nbgrader solution cell"),
    (lambda nb: nb.cells.pop(5), "no {solution} directive"),
    (lambda nb: nb.cells[2].update(source="```{exercise} No label\nText\n```"), "has no :label:"),
])
def test_structure_problems_are_found(mutation, expected):
    problems = _mutate(mutation)
    assert any(expected in p for p in problems), problems


def test_grade_ids_unique_in_the_fixture_book():
    ids = [g for p in book.toc_notebooks(FIXTURES) for g in book.grade_ids(book.read(p))]
    assert len(ids) == len(set(ids)) == 6


def test_book_has_chapters():
    if not CHAPTERS:
        pytest.skip("NO CHAPTER NOTEBOOK IN _toc.yml EXISTS YET: the chapter tests did not run")


@pytest.mark.parametrize("path", CHAPTERS, ids=CHAPTER_IDS)
def test_chapter_exercise_structure(path):
    nb = book.read(path)
    assert book.structure_problems(nb, path.name) == []
    assert any(e.coding for e in book.exercises(nb)), f"{path.name} has no coding exercise"


def test_grade_ids_unique_across_the_book():
    seen = {}
    for path in CHAPTERS:
        for gid in book.grade_ids(book.read(path)):
            assert gid not in seen, f"grade id {gid} is in {seen.get(gid)} and {path.name}"
            seen[gid] = path.name


def test_chapter_summary_reads_goals_and_time():
    s = book.chapter_summary(book.read(FX_A))
    assert s["title"] == "Fixture chapter A: the sigmoid"
    assert s["goals"] == ["compute the sigmoid with `blrlib`", r"write the log-likelihood $\ell(\mathbf w)$ yourself"]
    assert (s["minutes"], s["stated"]) == (30, True)
    s = book.chapter_summary(book.read(FX_B))
    assert s["stated"] is False and s["minutes"] % 5 == 0 and s["minutes"] >= 15


@pytest.mark.parametrize("path", CHAPTERS, ids=CHAPTER_IDS)
def test_chapter_has_title_and_learning_goals(path):
    s = book.chapter_summary(book.read(path))
    assert s["title"], f"{path.name}: the first cell has no '# Title'"
    assert s["goals"], f"{path.name}: no 'Learning goals' list in the first cells"


# ----------------------------------------------------------------------------- student edition

@pytest.mark.parametrize("text, expected", [
    ("````{solution} ex-a\n:class: dropdown\n\nWork.\n\n```python\nx = 1\n```\n````", ""),
    ("```{solution} ex-a\n:class: dropdown\n\nWork.\n```", ""),
    (":::{solution} ex-a\nWork.\n:::", ""),
    ("Before.\n\n````{solution} ex-a\nWork.\n````\n\nAfter.", "Before.\n\nAfter."),
    ("````{exercise} T\n:label: ex-a\n\nDo it.\n````\n\n````{solution} ex-a\nWork.\n````",
     "````{exercise} T\n:label: ex-a\n\nDo it.\n````"),
])
def test_remove_solution_directives(text, expected):
    assert student.remove_solution_directives(text) == expected


def test_student_edition_of_a_fixture():
    src, nb = book.read(FX_A), student.student_notebook(FX_A)
    text = "\n".join(book.source(c) for c in nb.cells)
    assert "{solution}" not in text and "BEGIN SOLUTION" not in text and "logaddexp" not in text
    assert "Some text before the solution" in text and "Text after the solution" in text
    assert "{exercise}" in text
    by_id = {book.nbgrader_meta(c).get("grade_id"): c for c in nb.cells}
    assert book.source(by_id["ex-fx-zero-answer"]) == "# YOUR CODE HERE\nraise NotImplementedError()"
    assert book.source(by_id["ex-fx-loglik-answer"]).startswith("def my_log_likelihood(w, X, y):\n    # YOUR CODE HERE")
    for c in src.cells:
        if book.is_check(c):
            assert book.source(by_id[book.nbgrader_meta(c)["grade_id"]]) == book.source(c)
            assert by_id[book.nbgrader_meta(c)["grade_id"]].metadata.get("editable") is False
    assert all(c.outputs == [] and c.execution_count is None for c in nb.cells if c.cell_type == "code")
    nbformat.validate(nb)


def test_make_student_cli_writes_every_toc_chapter(tmp_path):
    out = tmp_path / "student"
    subprocess.run([sys.executable, "-m", "coursework.student", str(out), "--root", str(FIXTURES)], check=True)
    assert sorted(p.name for p in out.iterdir()) == ["fx_a_sigmoid.ipynb", "fx_b_gradient.ipynb"]


def _generate_assignment(tmp_path, notebooks):
    course = tmp_path / "course"
    (course / "source" / "hw").mkdir(parents=True)
    for nb in notebooks:
        shutil.copy(nb, course / "source" / "hw" / nb.name)
    env = dict(os.environ, PATH=f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    proc = subprocess.run([str(VENV_BIN / "nbgrader"), "generate_assignment", "hw", "--force"],
                          cwd=course, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "[ERROR]" not in proc.stderr, proc.stderr[-3000:]
    return course / "release" / "hw"


def test_nbgrader_generate_assignment_accepts_the_sources(tmp_path):
    """nbgrader itself turns the fixtures and every chapter, as they are, into the same stubs
    and checks as our student edition (one nbgrader run for all: it takes ~20 s to start)."""
    notebooks = book.toc_notebooks(FIXTURES) + CHAPTERS
    release = _generate_assignment(tmp_path, notebooks)
    for path in notebooks:
        released = nbformat.read(str(release / path.name), as_version=4)
        ours = student.student_notebook(path)
        theirs = {book.nbgrader_meta(c)["grade_id"]: book.source(c) for c in released.cells if book.nbgrader_meta(c).get("grade_id")}
        mine = {book.nbgrader_meta(c)["grade_id"]: book.source(c) for c in ours.cells if book.nbgrader_meta(c).get("grade_id")}
        assert theirs == mine, path.name


# ----------------------------------------------------------------------------- running student editions

def _execute_student_editions(paths, tmp):
    def one(path):
        target = pathlib.Path(tmp) / path.name
        nbformat.write(student.student_notebook(path), str(target))
        work = pathlib.Path(tmp) / f"work-{path.stem}"
        work.mkdir()
        cells, problem = runner.run_isolated(target, cell_timeout=300, notebook_timeout=900, workdir=work)
        return path, (nbformat.read(str(target), as_version=4), cells, problem)

    with concurrent.futures.ThreadPoolExecutor(_jobs()) as pool:
        return dict(pool.map(one, paths))


@pytest.fixture(scope="session")
def executed_student_editions(tmp_path_factory):
    """Every student edition (fixtures and chapters) executed once, cell errors tolerated."""
    tmp = tmp_path_factory.mktemp("student-run")
    return _execute_student_editions(book.toc_notebooks(FIXTURES) + CHAPTERS, tmp)


def _assert_only_exercises_fail(path, result):
    nb, cells, problem = result
    assert problem is None, f"{path.name}: {problem}"
    graded = {i for i, c in enumerate(nb.cells) if book.is_answer(c) or book.is_check(c)}
    code = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    missing = [i for i in code if i not in cells]
    assert not missing, f"{path.name}: cells {missing} did not run"
    bad = [f"cell {i}: {cells[i]['error']}" for i in code if i not in graded and cells[i]["status"] != "ok"]
    assert not bad, f"{path.name}: cells outside the exercises fail in the student edition: {bad}"
    passing = [nb.cells[i].metadata.nbgrader.grade_id for i in graded if cells[i]["status"] == "ok"
               and book.is_check(nb.cells[i])]
    assert not passing, f"{path.name}: checks pass on the empty student answer (free points): {passing}"


@pytest.mark.parametrize("path", book.toc_notebooks(FIXTURES), ids=lambda p: p.stem)
def test_fixture_student_edition_fails_only_in_exercises(path, executed_student_editions):
    _assert_only_exercises_fail(path, executed_student_editions[path])


@pytest.mark.parametrize("path", CHAPTERS, ids=CHAPTER_IDS)
def test_student_edition_fails_only_in_exercises(path, executed_student_editions):
    _assert_only_exercises_fail(path, executed_student_editions[path])


def test_runner_truncates_megabytes_of_output(tmp_path):
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("for _ in range(50):\n    print('x' * 100_000)"),
        nbformat.v4.new_code_cell("print('after')")], metadata=book.read(FX_B).metadata)
    src, executed = tmp_path / "big.ipynb", tmp_path / "executed.ipynb"
    nbformat.write(nb, str(src))
    cells, problem = runner.run_isolated(src, 60, 120, max_output_bytes=50_000, executed=executed)
    assert problem is None and [c["status"] for c in cells.values()] == ["ok", "ok"]
    assert executed.stat().st_size < 200_000
    out = nbformat.read(str(executed), as_version=4)
    assert "truncated" in "".join(o.get("text", "") for o in out.cells[0].outputs)
    assert out.cells[1].outputs[0].text == "after\n"


def test_a_broken_student_edition_is_caught(tmp_path):
    nb = student.student_notebook(FX_B)
    nb.cells[1].source += "\nraise RuntimeError('setup broken')"
    target = tmp_path / "fx_b_gradient.ipynb"
    nbformat.write(nb, str(target))
    with pytest.raises(AssertionError, match="cells outside the exercises fail"):
        _assert_only_exercises_fail(FX_B, (nb, *runner.run_isolated(target, 60, 120)))


# ----------------------------------------------------------------------------- grading

def _with_answers(path, answers):
    """A submission: the student edition of ``path`` with answer cells replaced (by grade id)."""
    nb = student.student_notebook(path)
    for c in nb.cells:
        gid = book.nbgrader_meta(c).get("grade_id")
        if gid in answers:
            c.source = answers[gid]
    return nb


def _correct(path):
    src = book.read(path)
    return _with_answers(path, {book.nbgrader_meta(c)["grade_id"]: book.source(c) for c in src.cells if book.is_answer(c)})


def _deleted():
    nb = _correct(FX_A)
    nb.cells = [c for c in nb.cells if book.nbgrader_meta(c).get("grade_id") not in ("ex-fx-zero-check", "ex-fx-loglik-answer")]
    return nb


def _tampered():
    nb = _with_answers(FX_A, {"ex-fx-zero-answer": "p0 = 0.25"})
    for c in nb.cells:
        if book.nbgrader_meta(c).get("grade_id") == "ex-fx-zero-check":
            c.source = "pass  # trust me"
    return nb


LOGLIK = book.source(book.read(FX_A).cells[7])
PLANTED = {   # student -> (fx_a notebook or raw text, expected points of ex-fx-zero / ex-fx-loglik)
    "correct": (lambda: _correct(FX_A), (1, 3)),
    "wrong": (lambda: _with_answers(FX_A, {"ex-fx-zero-answer": "p0 = 0.4", "ex-fx-loglik-answer":
                                           "def my_log_likelihood(w, X, y):\n    return 0.0"}), (0, 0)),
    "empty": (lambda: student.student_notebook(FX_A), (0, 0)),
    "loops": (lambda: _with_answers(FX_A, {"ex-fx-zero-answer": "while True:\n    pass",
                                           "ex-fx-loglik-answer": LOGLIK}), (0, 3)),
    "syntax": (lambda: _with_answers(FX_A, {"ex-fx-zero-answer": "p0 = = 0.5", "ex-fx-loglik-answer": LOGLIK}), (0, 3)),
    "megabytes": (lambda: _with_answers(FX_A, {"ex-fx-zero-answer": "for _ in range(40):\n    print('x' * 500_000)\np0 = 0.5"}), (1, 0)),
    "deleted": (_deleted, (1, 0)),
    "tampered": (_tampered, (0, 0)),
    "crash": (lambda: _with_answers(FX_A, {"ex-fx-zero-answer": "import os\nos._exit(1)"}), (0, 0)),
    "garbage": (lambda: "this is not a notebook {", (0, 0)),
}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    subs = tmp_path_factory.mktemp("submissions")
    for name, (make, _) in PLANTED.items():
        (subs / name).mkdir()
        nb = make()
        target = subs / name / "fx_a_sigmoid.ipynb"
        target.write_text(nb if isinstance(nb, str) else nbformat.writes(nb))
    # a notebook that hangs ignoring interrupts: the hard per-notebook limit must stop it
    (subs / "hangs").mkdir()
    hang = _with_answers(FX_B, {"ex-fx-grad-answer": "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    time.sleep(0.1)"})
    nbformat.write(hang, str(subs / "hangs" / "fx_b_gradient.ipynb"))
    nbformat.write(_correct(FX_B), str(subs / "correct" / "fx_b_gradient.ipynb"))
    nbformat.write(_correct(FX_B), str(subs / "correct" / "99_not_a_chapter.ipynb"))
    out = tmp_path_factory.mktemp("grades")
    import time
    t0 = time.monotonic()
    rows, text = grade.grade_folder(subs, out, root=FIXTURES, cell_timeout=8, notebook_timeout=20,
                                    grace=10, jobs=_jobs())
    elapsed = time.monotonic() - t0
    with open(out / "grades.csv") as fh:
        table = list(csv.DictReader(fh))
    print(f"\nplanted submissions graded in {elapsed:.0f} s:\n{text}{(out / 'grades.csv').read_text()}")
    return {"rows": rows, "text": text, "table": table, "elapsed": elapsed, "out": out}


def _points(graded, student_name, chapter="fx_a_sigmoid"):
    return {r["exercise"]: float(r["points"]) for r in graded["table"]
            if r["student"] == student_name and r["chapter"] == chapter}


@pytest.mark.parametrize("student_name", sorted(PLANTED))
def test_planted_submission_scores(graded, student_name):
    zero, loglik = PLANTED[student_name][1]
    assert _points(graded, student_name) == {"ex-fx-zero": zero, "ex-fx-loglik": loglik}, graded["text"]


def test_grade_csv_and_summary(graded):
    table = graded["table"]
    assert list(table[0]) == grade.FIELDS
    assert all(float(r["max_points"]) == {"ex-fx-zero": 1, "ex-fx-loglik": 3, "ex-fx-grad": 2}[r["exercise"]]
               for r in table if r["exercise"])
    assert (graded["out"] / "summary.txt").read_text() == graded["text"]
    assert "graded 13 notebooks of 11 students" in graded["text"]
    assert _points(graded, "correct", "fx_b_gradient") == {"ex-fx-grad": 2}


def _row(graded, student_name, exercise, chapter="fx_a_sigmoid"):
    return next(r for r in graded["table"] if (r["student"], r["chapter"], r["exercise"]) == (student_name, chapter, exercise))


def test_grade_errors_and_notes_are_reported(graded):
    assert _row(graded, "correct", "ex-fx-zero")["error"] == ""
    assert _row(graded, "empty", "ex-fx-zero")["error"] == "unanswered (NotImplementedError)"
    assert _row(graded, "empty", "ex-fx-loglik")["error"] == "unanswered (NotImplementedError)"
    assert "AssertionError" in _row(graded, "wrong", "ex-fx-zero")["error"]
    assert "timeout" in _row(graded, "loops", "ex-fx-zero")["error"].lower() or "longer than" in _row(graded, "loops", "ex-fx-zero")["error"]
    assert "SyntaxError" in _row(graded, "syntax", "ex-fx-zero")["error"]
    assert "died" in _row(graded, "crash", "ex-fx-zero")["error"]
    assert "died" in _row(graded, "crash", "ex-fx-loglik")["error"]
    assert "unreadable" in _row(graded, "garbage", "ex-fx-zero")["error"]
    assert "time limit" in _row(graded, "hangs", "ex-fx-grad", "fx_b_gradient")["error"] or \
        "longer than" in _row(graded, "hangs", "ex-fx-grad", "fx_b_gradient")["error"]
    assert "deleted" in _row(graded, "deleted", "ex-fx-zero")["notes"]
    assert "deleted" in _row(graded, "deleted", "ex-fx-loglik")["notes"]
    assert "modified" in _row(graded, "tampered", "ex-fx-zero")["notes"]
    assert "not a chapter" in next(r for r in graded["table"] if r["chapter"] == "99_not_a_chapter")["error"]
    assert "cells deleted or modified by students" in graded["text"]


def test_grading_is_bounded_in_time(graded):
    # 13 notebooks, two of which run into their limits (20 s + 10 s grace at most)
    assert graded["elapsed"] < 240, graded["elapsed"]


def test_merge_restores_checks_from_the_source():
    nb, notes = grade.merge(book.read(FX_A), _deleted())
    ids = [book.nbgrader_meta(c).get("grade_id") for c in nb.cells if book.nbgrader_meta(c).get("grade_id")]
    assert ids == ["ex-fx-zero-answer", "ex-fx-zero-check", "ex-fx-loglik-answer", "ex-fx-loglik-check"]
    stub = next(c for c in nb.cells if book.nbgrader_meta(c).get("grade_id") == "ex-fx-loglik-answer")
    assert "raise NotImplementedError()" in book.source(stub)
    assert set(notes) == {"ex-fx-zero", "ex-fx-loglik"}
    nb, notes = grade.merge(book.read(FX_A), _tampered())
    check = next(c for c in nb.cells if book.nbgrader_meta(c).get("grade_id") == "ex-fx-zero-check")
    assert book.source(check) == book.source(book.read(FX_A).cells[4])
