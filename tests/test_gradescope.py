"""The Gradescope autograder (``make gradescope``, coursework/gradescope.py).

The bundle is built from the fixture book, unpacked into a fake ``/autograder`` under a
temporary folder (``AUTOGRADER_ROOT``; no root needed), and its ``run_autograder`` grades an
honest and a wrong submission; ``results.json`` is checked against Gradescope's documented
schema and for the points, the reasons and what it must not say (a reference value).
"""

from __future__ import annotations

import json
import os
import pathlib
import stat
import subprocess
import sys
import zipfile

import nbformat
import pytest

from coursework import book, gradescope, sandbox, student

ROOT = pathlib.Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
FX_A = FIXTURES / "book" / "fx_a_sigmoid.ipynb"
TIME_FACTOR = float(os.environ.get("COURSEWORK_TEST_TIME_FACTOR", "1"))
LIMITS = sandbox.Limits(
    cell_timeout=8 * TIME_FACTOR,
    notebook_timeout=25 * TIME_FACTOR,
    grace=5 * TIME_FACTOR,
    memory_bytes=2 << 30,
    disk_bytes=64 << 20,
    file_bytes=32 << 20,
    processes=128,
    notebook_memory_bytes=1 << 30,
)

# Gradescope's autograder specification, "Output format": the keys it reads
TOP_KEYS = {"score", "execution_time", "output", "output_format", "test_output_format",
            "test_name_format", "visibility", "stdout_visibility", "extra_data", "tests",
            "leaderboard"}
TEST_KEYS = {"score", "max_score", "status", "name", "name_format", "number", "output",
             "output_format", "tags", "visibility", "extra_data"}
VISIBILITY = {"hidden", "after_due_date", "after_published", "visible"}


def validate(results):
    """Raise AssertionError where ``results`` leaves Gradescope's documented schema."""
    assert isinstance(results, dict) and set(results) <= TOP_KEYS, set(results) - TOP_KEYS
    assert isinstance(results["tests"], list) and results["tests"]
    for key in ("visibility", "stdout_visibility"):
        if key in results:
            assert results[key] in VISIBILITY
    assert isinstance(results.get("output", ""), str)
    for t in results["tests"]:
        assert set(t) <= TEST_KEYS, set(t) - TEST_KEYS
        assert isinstance(t["name"], str) and t["name"]
        for key in ("score", "max_score"):
            assert isinstance(t[key], (int, float)) and not isinstance(t[key], bool)
        assert 0 <= t["score"] <= t["max_score"] or t["max_score"] == 0 == t["score"]
        assert isinstance(t["output"], str)
        assert t.get("visibility", "visible") in VISIBILITY
        assert t.get("status", "passed") in ("passed", "failed")
    json.dumps(results, allow_nan=False)  # Gradescope reads strict JSON


def _answers(path, answers):
    nb = student.student_notebook(path)
    for c in nb.cells:
        gid = book.nbgrader_meta(c).get("grade_id")
        if gid in answers:
            c.source = answers[gid]
    return nb


def _honest(path, **changed):
    """The student edition with the instructor's answers, those of ``changed`` replaced."""
    src = book.read(path)
    answers = {book.nbgrader_meta(c)["grade_id"]: book.source(c) for c in src.cells if book.is_answer(c)}
    return _answers(path, {**answers, **{k.replace("_", "-"): v for k, v in changed.items()}})


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    out = tmp_path_factory.mktemp("gs") / "autograder.zip"
    chapters = gradescope.build(out, FIXTURES, "_toc.yml", ["fx_a_sigmoid", "fx_b_gradient"], limits=LIMITS)
    assert chapters == ["fx_a_sigmoid", "fx_b_gradient"]
    return out


def _autograder(tmp_path, bundle, files):
    """A fake /autograder: the bundle unpacked in source/ (modes kept), the submission."""
    ag = tmp_path / "autograder"
    with zipfile.ZipFile(bundle) as zf:
        zf.extractall(ag / "source")
        for info in zf.infolist():
            mode = info.external_attr >> 16 & 0o777
            if mode:
                os.chmod(ag / "source" / info.filename, mode)
    (ag / "submission").mkdir()
    for name, nb in files.items():
        (ag / "submission" / name).parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, str(ag / "submission" / name))
    return ag


def _run_autograder(ag):
    env = {**os.environ, "AUTOGRADER_ROOT": str(ag), "AUTOGRADER_PYTHON": sys.executable}
    proc = subprocess.run(
        ["bash", str(ag / "source" / "run_autograder")], env=env, capture_output=True, text=True,
        timeout=600 * TIME_FACTOR,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads((ag / "results" / "results.json").read_text())
    validate(results)
    return results


def test_bundle_follows_the_autograder_specification(bundle):
    with zipfile.ZipFile(bundle) as zf:
        names = set(zf.namelist())
        modes = {i.filename: i.external_attr >> 16 for i in zf.infolist()}
        config = json.loads(zf.read("gradescope.json"))
        toc = zf.read("_toc.yml").decode()
    # Gradescope unpacks the zip into /autograder/source and needs these two at its top level
    assert {"setup.sh", "run_autograder", "requirements.txt", "pyproject.toml"} <= names
    for script in ("setup.sh", "run_autograder"):
        assert modes[script] & stat.S_IXUSR, script
    assert "book/fx_a_sigmoid.ipynb" in names and "book/fx_b_gradient.ipynb" in names
    assert "coursework/grade.py" in names and "blrlib/__init__.py" in names
    assert not any("__pycache__" in n for n in names)
    assert config["chapters"] == ["fx_a_sigmoid", "fx_b_gradient"] and config["sandbox"] == "auto"
    assert config["limits"]["notebook_timeout"] == LIMITS.notebook_timeout
    assert [f for f in book.toc_files(__import__("yaml").safe_load(toc)) if "fx_" in f] == [
        "book/fx_a_sigmoid",
        "book/fx_b_gradient",
    ]


def test_unknown_chapter_or_policy_is_refused(tmp_path):
    with pytest.raises(ValueError, match="not chapters of the book: nope"):
        gradescope.build(tmp_path / "a.zip", FIXTURES, "_toc.yml", ["nope"])
    with pytest.raises(ValueError, match="sandbox policy"):
        gradescope.build(tmp_path / "a.zip", FIXTURES, "_toc.yml", None, "never")
    assert not (tmp_path / "a.zip").exists()


def test_run_autograder_grades_honest_and_wrong_submissions(tmp_path, bundle, bwrap):
    honest = _autograder(tmp_path / "honest", bundle, {"fx_a_sigmoid.ipynb": _honest(FX_A)})
    # the wrong one hands its notebook in inside a folder (as an uploaded zip unpacks)
    wrong = _autograder(
        tmp_path / "wrong", bundle, {"work/fx_a_sigmoid.ipynb": _honest(FX_A, ex_fx_zero_answer="p0 = 0.4")}
    )
    got = _run_autograder(honest)
    tests = {t["name"]: t for t in got["tests"]}
    assert {n: (t["score"], t["max_score"]) for n, t in tests.items() if t["max_score"]} == {
        "fx_a_sigmoid ex-fx-zero": (1, 1),
        "fx_a_sigmoid ex-fx-loglik": (3, 3),
        "fx_b_gradient ex-fx-grad": (0, 2),
    }
    assert tests["fx_a_sigmoid ex-fx-zero"]["status"] == "passed"
    assert tests["fx_b_gradient ex-fx-grad"]["output"].startswith("not handed in")
    assert "ran in the grader's sandbox" in got["output"]
    by_hand = [t for t in got["tests"] if t["max_score"] == 0]
    assert by_hand and all("graded by hand" in t["output"] for t in by_hand)

    got = _run_autograder(wrong)
    tests = {t["name"]: t for t in got["tests"]}
    assert tests["fx_a_sigmoid ex-fx-zero"]["score"] == 0
    assert tests["fx_a_sigmoid ex-fx-zero"]["status"] == "failed"
    # the check cell's assertion failed: its kind is said, not its message (which may print
    # the reference value, as numpy's assert_allclose does)
    assert tests["fx_a_sigmoid ex-fx-zero"]["output"] == "check: the check failed (AssertionError)"
    assert "0.5" not in tests["fx_a_sigmoid ex-fx-zero"]["output"]  # the reference value
    assert tests["fx_a_sigmoid ex-fx-loglik"]["score"] == 3
    assert "graded work/fx_a_sigmoid.ipynb" in got["output"]


def test_without_the_sandbox_it_says_what_it_fell_back_to(tmp_path, bundle, monkeypatch):
    real_which = sandbox.shutil.which
    monkeypatch.setattr(sandbox.shutil, "which", lambda tool: None if tool == "bwrap" else real_which(tool))
    ag = _autograder(tmp_path, bundle, {"fx_a_sigmoid.ipynb": _honest(FX_A)})
    got = gradescope.run(ag, log=lambda text: None)
    validate(got)
    assert json.loads((ag / "results" / "results.json").read_text()) == got
    assert "WITHOUT the sandbox" in got["output"]
    assert sum(t["score"] for t in got["tests"]) == 4

    config = json.loads((ag / "source" / "gradescope.json").read_text())
    (ag / "source" / "gradescope.json").write_text(json.dumps({**config, "sandbox": "require"}))
    got = gradescope.run(ag, log=lambda text: None)
    validate(got)
    assert sum(t["score"] for t in got["tests"]) == 0
    assert "requires the sandbox" in got["output"]
    assert all(t["output"].startswith("not graded") for t in got["tests"])
