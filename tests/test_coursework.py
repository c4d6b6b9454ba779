"""Coursework: exercise structure of every chapter, the student edition, running it.

Unit tests of the tools run on the fixture book in tests/fixtures/ (two small chapters in the
exact exercise format of DESIGN.md and CONVENTIONS section 4); the book tests run on every
chapter listed in _toc.yml.  Executing notebooks is slow, so each student edition is executed
once per session (in parallel sandboxes) and the per-cell results are shared by the tests.
Grading itself (the sandbox, the planted hostile class) is tests/test_grading.py.
"""

import concurrent.futures
import copy
import os
import pathlib
import shutil
import subprocess
import sys

import nbformat
import pytest

from coursework import book, grade, sandbox, student, xref

ROOT = pathlib.Path(__file__).resolve().parents[1]

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
    assert [(e.label, e.coding, e.by_hand, e.points) for e in exs] == [
        ("ex-fx-zero", True, False, 1.0),
        ("ex-fx-loglik", True, False, 3.0),
        ("ex-fx-paper", False, True, 2.0),
    ]
    assert exs[2].manual == [11]


def _mutate(fn):
    nb = book.read(FX_A)
    fn(nb)
    return book.structure_problems(nb, "fx")


@pytest.mark.parametrize(
    "mutation, expected",
    [
        (lambda nb: nb.cells.pop(4), "0 check cells"),
        (lambda nb: nb.cells.insert(4, nbformat.v4.new_code_cell("x = 1")), "does not immediately follow"),
        (lambda nb: nb.cells[4].metadata.nbgrader.update(points=0), "points=0"),
        (
            lambda nb: nb.cells[4].metadata.nbgrader.update(grade_id="ex-fx-other-check"),
            "grade_id='ex-fx-other-check'",
        ),
        (lambda nb: nb.cells[3].metadata.nbgrader.update(grade_id="zero"), "grade_id='zero'"),
        (lambda nb: nb.cells.insert(4, copy.deepcopy(nb.cells[3])), "2 answer cells"),
        (lambda nb: nb.cells[3].update(source="p0 = 0.5"), "BEGIN SOLUTION"),
        (lambda nb: nb.cells[3].metadata.update(tags=[]), "not tagged hide-input"),
        (
            lambda nb: nb.cells[1].update(source="### BEGIN SOLUTION\nx = 1\n### END SOLUTION"),
            "not an nbgrader solution cell",
        ),
        (lambda nb: nb.cells.pop(5), "no {solution} directive"),
        (
            lambda nb: nb.cells[4].update(source='check_values = {"p0": p0}  # eq-sigmoid at 0'),
            "names the label eq-sigmoid",
        ),
        # hidden tests: only in check cells, in closed regions, check_values outside them
        (
            lambda nb: nb.cells[1].update(source="### BEGIN HIDDEN TESTS\nx = 1\n### END HIDDEN TESTS"),
            "holds hidden tests but is not a check cell",
        ),
        (
            lambda nb: nb.cells[4].update(source='check_values = {"p0": p0}\n### BEGIN HIDDEN TESTS\nassert p0'),
            "needs each '### BEGIN HIDDEN TESTS' closed",
        ),
        (
            lambda nb: nb.cells[4].update(
                source='### BEGIN HIDDEN TESTS\ncheck_values = {"p0": p0}\n### END HIDDEN TESTS'
            ),
            "assigns check_values only inside its hidden tests",
        ),
        (lambda nb: nb.cells[2].update(source="```{exercise} No label\nText\n```"), "has no :label:"),
        # what the stub states, check_values, tolerances (CONVENTIONS section 4)
        (
            lambda nb: nb.cells[3].update(source="### BEGIN SOLUTION\np0 = 0.5\n### END SOLUTION"),
            "states nothing outside the solution markers",
        ),
        (
            lambda nb: nb.cells[3].update(
                source="# Answer here.\n### BEGIN SOLUTION\np0 = 0.5\n### END SOLUTION"
            ),
            "names none of the values the solution assigns (p0)",
        ),
        (
            lambda nb: nb.cells[7].update(
                source="### BEGIN SOLUTION\ndef my_log_likelihood(w, X, y):\n    return 0.0\n### END SOLUTION"
            ),
            "states nothing outside",
        ),
        (
            lambda nb: nb.cells[4].update(source="assert abs(p0 - 0.5) < 1e-12"),
            "does not assign check_values",
        ),
        (
            lambda nb: nb.cells[4].update(source='check_values = {}\ncheck_values["p0"] = p0'),
            "changes check_values after assigning it",
        ),
        (
            lambda nb: nb.cells[8].metadata.update(coursework={"rtol": -1.0}),
            "coursework.rtol must be a finite number >= 0",
        ),
        (lambda nb: nb.cells[8].metadata.update(coursework={"tol": 1e-3}), "keys rtol and/or atol"),
        # the pen-and-paper answer cell
        (lambda nb: nb.cells.pop(11), "no answer cell"),
        (lambda nb: nb.cells.insert(12, nb.cells.pop(11)), "does not immediately follow the exercise cell"),
        (lambda nb: nb.cells.insert(11, copy.deepcopy(nb.cells[11])), "2 markdown answer cells"),
        (lambda nb: nb.cells[11].metadata.nbgrader.update(points=0), "answer cell 11 has points=0"),
        (
            lambda nb: nb.cells[11].metadata.nbgrader.update(locked=True),
            "answer cell 11 has nbgrader locked=True",
        ),
        (lambda nb: nb.cells[11].metadata.nbgrader.update(grade_id="paper"), "grade_id='paper'"),
        (lambda nb: nb.cells[11].metadata.update(tags=[]), "not tagged remove-cell"),
        (lambda nb: nb.cells[11].update(source=" "), "is empty"),
        (lambda nb: nb.cells[11].metadata.nbgrader.update(grade=False), "is not a pen-and-paper answer cell"),
        (
            lambda nb: nb.cells[12].metadata.update(nbgrader=dict(nb.cells[11].metadata.nbgrader)),
            "2 markdown answer cells",
        ),
    ],
)
def test_structure_problems_are_found(mutation, expected):
    problems = _mutate(mutation)
    assert any(expected in p for p in problems), problems


def _mutate_b(fn):
    nb = book.read(FX_B)
    fn(nb)
    return book.structure_problems(nb, "fx")


def test_written_part_of_a_coding_exercise():
    """The fixture's ex-fx-grad asks a question in words: a markdown answer cell right after
    its check, graded by hand (grade id ex-fx-grad-written), beside the check's points."""
    (e,) = book.exercises(book.read(FX_B))
    assert (e.coding, e.by_hand, e.points, e.written, e.written_points) == (True, False, 2.0, [5], 1.0)
    assert e.hand_parts == [
        book.HandPart("ex-fx-grad (written)", "ex-fx-grad-written", 1.0, "The gradient", written=True)
    ]
    (paper,) = [e for e in book.exercises(book.read(FX_A)) if e.by_hand]
    assert paper.hand_parts == [book.HandPart("ex-fx-paper", "ex-fx-paper-answer", 2.0, paper.title)]
    assert all(not e.hand_parts for e in book.exercises(book.read(FX_A)) if e.coding)


@pytest.mark.parametrize(
    "mutation, expected",
    [
        (lambda nb: nb.cells.insert(5, nb.cells.pop(4)), "does not immediately follow"),
        (lambda nb: nb.cells.insert(3, nb.cells.pop(5)), "markdown answer cell before its code"),
        (lambda nb: nb.cells.insert(5, copy.deepcopy(nb.cells[5])), "2 markdown answer cells after its code"),
        (
            lambda nb: nb.cells[5].metadata.nbgrader.update(grade_id="ex-fx-grad-answer2"),
            "written answer cell 5 has nbgrader grade_id='ex-fx-grad-answer2', expected 'ex-fx-grad-written'",
        ),
        (lambda nb: nb.cells[5].metadata.nbgrader.update(points=0), "written answer cell 5 has points=0"),
        (lambda nb: nb.cells[5].metadata.update(tags=[]), "not tagged remove-cell"),
        (lambda nb: nb.cells[5].update(source=""), "is empty"),
    ],
)
def test_written_part_structure_problems_are_found(mutation, expected):
    assert _mutate_b(lambda nb: None) == []
    problems = _mutate_b(mutation)
    assert any(expected in p for p in problems), problems


def test_student_edition_marks_the_written_part():
    nb = student.student_notebook(FX_B)
    by_id = {book.nbgrader_meta(c).get("grade_id"): i for i, c in enumerate(nb.cells)}
    i = by_id["ex-fx-grad-written"]
    assert book.source(nb.cells[i]) == "YOUR ANSWER HERE" and nb.cells[i].cell_type == "markdown"
    marker = book.source(nb.cells[i - 1])
    assert "answer-marker" in nb.cells[i - 1].metadata.get("tags", [])
    assert "in words" in marker.splitlines()[0] and "1 point, graded by hand" in marker
    code_marker = book.source(nb.cells[by_id["ex-fx-grad-answer"] - 1])
    assert "2 points, graded automatically" in code_marker and "own answer cell after the check" in code_marker
    assert "Marking guide" not in "\n".join(book.source(c) for c in nb.cells)


def test_grade_ids_unique_in_the_fixture_book():
    ids = [g for p in book.toc_notebooks(FIXTURES) for g in book.grade_ids(book.read(p))]
    assert len(ids) == len(set(ids)) == 8


def test_book_has_chapters_with_exercises():
    """The chapter tests below are parametrized over the toc: without chapters they would not
    run at all, so an empty or broken toc must fail here."""
    assert len(CHAPTERS) >= 9, f"_toc.yml lists {len(CHAPTERS)} existing chapter notebooks"
    assert all(any(e.coding for e in book.exercises(book.read(p))) for p in CHAPTERS)


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
    assert s["goals"] == [
        "compute the sigmoid with `blrlib`",
        r"write the log-likelihood $\ell(\mathbf w)$ yourself",
    ]
    assert (s["minutes"], s["stated"]) == (30, True)
    s = book.chapter_summary(book.read(FX_B))
    assert s["stated"] is False and s["minutes"] % 5 == 0 and s["minutes"] >= 15


@pytest.mark.parametrize("path", CHAPTERS, ids=CHAPTER_IDS)
def test_chapter_has_title_and_learning_goals(path):
    s = book.chapter_summary(book.read(path))
    assert s["title"], f"{path.name}: the first cell has no '# Title'"
    assert s["goals"], f"{path.name}: no 'Learning goals' list in the first cells"


# ----------------------------------------------------------------------------- student edition


@pytest.mark.parametrize(
    "text, expected",
    [
        ("````{solution} ex-a\n:class: dropdown\n\nWork.\n\n```python\nx = 1\n```\n````", ""),
        ("```{solution} ex-a\n:class: dropdown\n\nWork.\n```", ""),
        (":::{solution} ex-a\nWork.\n:::", ""),
        ("Before.\n\n````{solution} ex-a\nWork.\n````\n\nAfter.", "Before.\n\nAfter."),
        (
            "````{exercise} T\n:label: ex-a\n\nDo it.\n````\n\n````{solution} ex-a\nWork.\n````",
            "````{exercise} T\n:label: ex-a\n\nDo it.\n````",
        ),
    ],
)
def test_remove_solution_directives(text, expected):
    assert student.remove_solution_directives(text) == expected


def test_student_edition_of_a_fixture():
    src, nb = book.read(FX_A), student.student_notebook(FX_A)
    text = "\n".join(book.source(c) for c in nb.cells)
    assert "{solution}" not in text and "BEGIN SOLUTION" not in text and "logaddexp" not in text
    assert "Some text before the solution" in text and "Text after the solution" in text
    assert "{exercise}" in text and "Marking guide" not in text
    by_id = {book.nbgrader_meta(c).get("grade_id"): c for c in nb.cells}
    assert book.source(by_id["ex-fx-zero-answer"]) == (
        "# Compute p0: the sigmoid at a = 0 (a float).\n# YOUR CODE HERE\nraise NotImplementedError()"
    )
    assert book.source(by_id["ex-fx-loglik-answer"]) == (
        "def my_log_likelihood(w, X, y):\n"
        '    """The Bernoulli log-likelihood sum_n y_n a_n - log(1 + e^a_n), a = X w."""\n'
        "    # YOUR CODE HERE\n    raise NotImplementedError()"
    )
    paper = by_id["ex-fx-paper-answer"]
    assert paper.cell_type == "markdown" and book.source(paper) == "YOUR ANSWER HERE"
    assert paper.metadata.get("deletable") is False and paper.metadata.get("editable", True) is True
    for c in src.cells:
        if book.is_check(c):
            shown = book.source(by_id[book.nbgrader_meta(c)["grade_id"]])
            assert shown == book.without_hidden_tests(book.source(c))
            assert by_id[book.nbgrader_meta(c)["grade_id"]].metadata.get("editable") is False
    # the soft-label assertion of ex-fx-loglik is a hidden test: the student does not see it
    loglik = book.source(by_id["ex-fx-loglik-check"])
    assert "HIDDEN" not in loglik and "y_soft * blrlib.log_sigmoid" not in loglik
    assert "y_soft * blrlib.log_sigmoid" in book.source(src.cells[8])
    assert all(c.outputs == [] and c.execution_count is None for c in nb.cells if c.cell_type == "code")
    nbformat.validate(nb)


def test_make_student_cli_writes_every_toc_chapter(tmp_path):
    out = tmp_path / "student"
    subprocess.run(
        [sys.executable, "-m", "coursework.student", str(out), "--root", str(FIXTURES)], check=True
    )
    assert sorted(p.name for p in out.iterdir()) == ["fx_a_sigmoid.ipynb", "fx_b_gradient.ipynb"]


def _generate_assignment(tmp_path, notebooks):
    course = tmp_path / "course"
    (course / "source" / "hw").mkdir(parents=True)
    for nb in notebooks:
        shutil.copy(nb, course / "source" / "hw" / nb.name)
    env = dict(os.environ, PATH=f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    proc = subprocess.run(
        [str(VENV_BIN / "nbgrader"), "generate_assignment", "hw", "--force"],
        cwd=course,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "[ERROR]" not in proc.stderr, proc.stderr[-3000:]
    return course / "release" / "hw"


def test_nbgrader_generate_assignment_accepts_the_sources(tmp_path):
    """nbgrader itself turns the fixtures and every chapter, as they are, into the same stubs
    and checks as our student edition (one nbgrader run for all: it takes ~20 s to start)."""
    notebooks = book.toc_notebooks(FIXTURES) + CHAPTERS
    release = _generate_assignment(tmp_path, notebooks)
    targets = xref.book_index(book.ROOT).targets
    for path in notebooks:
        released = nbformat.read(str(release / path.name), as_version=4)
        ours = student.student_notebook(path)
        # ours differs in one way: labels in answer code are written as numbers
        theirs = {
            book.nbgrader_meta(c)["grade_id"]: (
                book.source(c) if book.is_check(c) or c.cell_type != "code"
                else xref.number_code_labels(book.source(c), targets)
            )
            for c in released.cells
            if book.nbgrader_meta(c).get("grade_id")
        }
        mine = {
            book.nbgrader_meta(c)["grade_id"]: book.source(c)
            for c in ours.cells
            if book.nbgrader_meta(c).get("grade_id")
        }
        assert theirs == mine, path.name


# ----------------------------------------------------------------------------- running student editions


UID_BASE = sandbox.DEFAULT_UID_BASE + 2048


def run_sandboxed(nb, name, slot=0, unsafe=False, extra=(), **limits):
    """Run the notebook ``nb`` in the grader's sandbox; ``(cells, problem)`` as the grader sees
    them (``cells`` maps a code cell's index to its record)."""
    lim = sandbox.Limits(**{"cell_timeout": 300, "notebook_timeout": 900, **limits})
    # uids of their own, far above the graders of tests/test_grading.py: with pytest-xdist
    # both modules run at once, and that module checks no process is left under its uids
    with sandbox.Sandbox(unsafe=unsafe, slots=_jobs(), uid_base=UID_BASE, limits=lim) as box:
        run = box.execute(nbformat.writes(nb).encode(), name, grade.runner_args(lim, nb) + list(extra), slot=slot)
    return {r["index"]: r for r in run.records if r.get("kind") == "cell"}, run.problem


def _execute_student_editions(paths):
    slots = list(range(_jobs()))

    def one(path):
        nb = student.student_notebook(path)
        slot = slots.pop()
        try:
            return path, (nb, *run_sandboxed(nb, path.name, slot=slot))
        finally:
            slots.append(slot)

    with concurrent.futures.ThreadPoolExecutor(_jobs()) as pool:
        return dict(pool.map(one, paths))


@pytest.fixture(scope="session")
def executed_student_editions(bwrap):
    """Every student edition (fixtures and chapters) executed once, cell errors tolerated."""
    return _execute_student_editions(book.toc_notebooks(FIXTURES) + CHAPTERS)


def _assert_only_exercises_fail(path, result):
    nb, cells, problem = result
    assert problem is None, f"{path.name}: {problem}"
    graded = {i for i, c in enumerate(nb.cells) if book.is_answer(c) or book.is_check(c)}
    code = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    missing = [i for i in code if i not in cells]
    assert not missing, f"{path.name}: cells {missing} did not run"
    bad = [f"cell {i}: {cells[i]['error']}" for i in code if i not in graded and cells[i]["status"] != "ok"]
    assert not bad, f"{path.name}: cells outside the exercises fail in the student edition: {bad}"
    passing = [
        nb.cells[i].metadata.nbgrader.grade_id
        for i in graded
        if cells[i]["status"] == "ok" and book.is_check(nb.cells[i])
    ]
    assert not passing, f"{path.name}: checks pass on the empty student answer (free points): {passing}"


@pytest.mark.parametrize("path", book.toc_notebooks(FIXTURES), ids=lambda p: p.stem)
def test_fixture_student_edition_fails_only_in_exercises(path, executed_student_editions):
    _assert_only_exercises_fail(path, executed_student_editions[path])


@pytest.mark.parametrize("path", CHAPTERS, ids=CHAPTER_IDS)
def test_student_edition_fails_only_in_exercises(path, executed_student_editions):
    _assert_only_exercises_fail(path, executed_student_editions[path])


def test_runner_truncates_megabytes_of_output(tmp_path):
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell("for _ in range(50):\n    print('x' * 100_000)"),
            nbformat.v4.new_code_cell("print('after')"),
        ],
        metadata=book.read(FX_B).metadata,
    )
    executed = tmp_path / "executed.ipynb"
    # --executed writes to a host path, so this runs without the sandbox (trusted code)
    cells, problem = run_sandboxed(
        nb,
        "big.ipynb",
        unsafe=True,
        extra=["--executed", str(executed)],
        cell_timeout=60,
        notebook_timeout=120,
        max_output_bytes=50_000,
    )
    assert problem is None and [c["status"] for c in cells.values()] == ["ok", "ok"]
    assert executed.stat().st_size < 200_000
    out = nbformat.read(str(executed), as_version=4)
    assert "truncated" in "".join(o.get("text", "") for o in out.cells[0].outputs)
    assert out.cells[1].outputs[0].text == "after\n"


def test_a_broken_student_edition_is_caught(bwrap):
    nb = student.student_notebook(FX_B)
    nb.cells[1].source += "\nraise RuntimeError('setup broken')"
    with pytest.raises(AssertionError, match="cells outside the exercises fail"):
        _assert_only_exercises_fail(
            FX_B, (nb, *run_sandboxed(nb, FX_B.name, cell_timeout=60, notebook_timeout=120))
        )
