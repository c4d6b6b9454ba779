"""The book's notebooks through nbgrader itself (DESIGN.md: nbgrader-compatible since the start).

nbgrader's ``generate_assignment`` must accept every chapter and release, cell for cell of its
graded cells, what ``make student`` gives students (same grade ids, points, stubs and check
cells); ``autograde`` must give the instructor's answers full marks and the empty student
edition none, and ``generate_feedback`` must write each student's feedback.  nbgrader runs as
its command line, in a course folder of its own under a temporary folder.
"""

from __future__ import annotations

import os
import pathlib
import re
import shutil
import subprocess
import sys

import nbformat
import pytest

from coursework import book, student, xref

ROOT = pathlib.Path(__file__).resolve().parents[1]
FX_A = ROOT / "tests" / "fixtures" / "book" / "fx_a_sigmoid.ipynb"
CHAPTERS = book.toc_notebooks(ROOT)
ROUND_TRIP = [FX_A, ROOT / "book" / "01_log_odds.ipynb"]  # the fixture and the shortest chapter
TIME_FACTOR = float(os.environ.get("COURSEWORK_TEST_TIME_FACTOR", "1"))

pytest.importorskip("nbgrader")


def _nbgrader(course, *args):
    # nbgrader runs alembic (its database migrations) from PATH: the environment's bin folder
    env = {**os.environ, "PATH": f"{pathlib.Path(sys.executable).parent}:{os.environ['PATH']}"}
    proc = subprocess.run(
        [sys.executable, "-m", "nbgrader", *args, "--force"], cwd=course, env=env, capture_output=True,
        text=True, timeout=900 * TIME_FACTOR,
    )
    assert proc.returncode == 0 and "ERROR" not in proc.stderr, proc.stderr[-4000:]
    return proc.stderr


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    course = tmp_path_factory.mktemp("course")
    (course / "nbgrader_config.py").write_text(
        "c = get_config()\n"
        "c.CourseDirectory.course_id = 'blr'\n"
        f"c.CourseDirectory.root = {str(course)!r}\n"
        f"c.CourseDirectory.db_url = 'sqlite:///{course}/gradebook.db'\n"
        f"c.ExecutePreprocessor.timeout = {int(300 * TIME_FACTOR)}\n"
    )
    for assignment, paths in (("book", CHAPTERS), ("ps1", ROUND_TRIP)):
        (course / "source" / assignment).mkdir(parents=True)
        for p in paths:
            shutil.copy(p, course / "source" / assignment / p.name)
        _nbgrader(course, "generate_assignment", assignment, "--create")
    return course


def _graded_cells(nb, targets=None):
    """``(type, source, nbgrader metadata)`` of the cells with a grade id; nbgrader adds the
    cell type and a checksum to the metadata of the cells it releases.  With ``targets``, the
    labels in answer code are numbered as the student edition numbers them (only that differs)."""
    out = []
    for c in nb.cells:
        meta = book.nbgrader_meta(c)
        if meta.get("grade_id"):
            src = book.source(c)
            if targets is not None and c.cell_type == "code" and not book.is_check(c):
                src = xref.number_code_labels(src, targets)
            out.append((c.cell_type, src, {k: v for k, v in meta.items() if k not in ("cell_type", "checksum")}))
    return out


def test_nbgrader_releases_the_student_edition(course):
    assert len(CHAPTERS) >= 10
    targets = xref.book_index(book.ROOT).targets
    for path in CHAPTERS:
        released = nbformat.read(course / "release" / "book" / path.name, as_version=4)
        ours = _graded_cells(student.student_notebook(path))
        assert ours and _graded_cells(released, targets) == ours, path.name
        exercises = book.exercises(book.read(path))
        ids = {e.answer_id for e in exercises} | {e.check_id for e in exercises if e.coding}
        ids |= {e.written_id for e in exercises if e.written}
        assert ids == {meta["grade_id"] for _, _, meta in ours}, path.name


def _with_answers(path):
    src = book.read(path)
    answers = {book.nbgrader_meta(c)["grade_id"]: book.source(c) for c in src.cells if book.is_answer(c)}
    nb = student.student_notebook(path)
    for c in nb.cells:
        gid = book.nbgrader_meta(c).get("grade_id")
        if gid in answers:
            c.source = answers[gid]
    return nb


def test_nbgrader_autogrades_and_writes_feedback(course):
    from nbgrader.api import Gradebook

    for name, make in (("ada", _with_answers), ("bob", student.student_notebook)):
        folder = course / "submitted" / name / "ps1"
        folder.mkdir(parents=True)
        for p in ROUND_TRIP:
            nbformat.write(make(p), str(folder / p.name))
    _nbgrader(course, "autograde", "ps1", "--create")
    _nbgrader(course, "generate_feedback", "ps1")
    with Gradebook(f"sqlite:///{course}/gradebook.db") as gb:
        for p in ROUND_TRIP:
            coding = [e for e in book.exercises(book.read(p)) if e.coding]
            points = {e.check_id: e.points for e in coding}
            for name, full in (("ada", True), ("bob", False)):
                nb = gb.find_submission_notebook(p.stem, "ps1", name)
                got = {g.name: g.score for g in nb.grades if g.name in points}
                assert got == {gid: (pts if full else 0) for gid, pts in points.items()}, (name, p.name)
                assert all(g.max_score == points[g.name] for g in nb.grades if g.name in points)
                page = course / "feedback" / name / "ps1" / f"{p.stem}.html"
                # its heading: "Score: <points> / <max>", the points graded by hand (pen and paper, written parts) not yet given
                total = re.search(r"Score: ([0-9.]+) / ([0-9.]+)", page.read_text())
                assert total, page
                everything = sum(e.points + e.written_points for e in book.exercises(book.read(p)))
                assert (float(total[1]), float(total[2])) == (sum(got.values()), everything)
