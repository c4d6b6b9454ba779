"""The Gradescope autograder (``make gradescope``, coursework/gradescope.py).

The bundle is built from the fixture book, unpacked into a fake ``/autograder`` under a
temporary folder (``AUTOGRADER_ROOT``; no root needed), and its ``run_autograder`` grades an
honest and a wrong submission; ``results.json`` is checked against Gradescope's documented
schema and for the points, the reasons and what it must not say (a reference value).

The bundle's wheels are built for the Python running the tests (3.11), not for Gradescope's
image (Ubuntu 24.04's 3.12, the default of ``make gradescope``): only wheels for this Python
install here.  Its install step (``install.sh``, what ``setup.sh`` runs after apt-get) runs
into a fresh virtual environment in a network namespace without network, which proves the
bundle holds everything; ``run_autograder`` then grades with that environment alone.
"""

from __future__ import annotations

import json
import os
import pathlib
import platform
import stat
import subprocess
import sys
import zipfile

import _system
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


PYTHON = platform.python_version()  # the wheels' Python: this one, so that they install here
MINOR = f"{sys.version_info[0]}.{sys.version_info[1]}"


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    out = tmp_path_factory.mktemp("gs") / "autograder.zip"
    chapters = gradescope.build(out, FIXTURES, "_toc.yml", ["fx_a_sigmoid", "fx_b_gradient"], limits=LIMITS,
                                python=PYTHON, log=lambda text: None)
    assert chapters == ["fx_a_sigmoid", "fx_b_gradient"]
    return out


def _autograder(tmp_path, bundle, files, wheels=False):
    """A fake /autograder: the bundle unpacked in source/ (modes kept; the wheels only when
    ``wheels``), the submission."""
    ag = tmp_path / "autograder"
    with zipfile.ZipFile(bundle) as zf:
        infos = [i for i in zf.infolist() if wheels or not i.filename.startswith(gradescope.WHEELS + "/")]
        zf.extractall(ag / "source", members=infos)
        for info in infos:
            mode = info.external_attr >> 16 & 0o777
            if mode:
                os.chmod(ag / "source" / info.filename, mode)
    (ag / "submission").mkdir()
    for name, nb in files.items():
        (ag / "submission" / name).parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, str(ag / "submission" / name))
    return ag


def _run_autograder(ag, python=sys.executable):
    """Run ``run_autograder`` of ``ag`` with ``python`` (None: the bundle's ``venv``)."""
    env = {k: v for k, v in os.environ.items() if k != "AUTOGRADER_PYTHON"}
    env["AUTOGRADER_ROOT"] = str(ag)
    if python:
        env["AUTOGRADER_PYTHON"] = python
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
        requirements = zf.read(gradescope.REQUIREMENTS).decode().split()
        install = zf.read("install.sh").decode()
        setup = zf.read("setup.sh").decode()
        wheels = {n.split("/", 1)[1]: zf.getinfo(n) for n in names if n.startswith("wheels/")}
        blrlib_wheel = next(n for n in wheels if n.startswith("blrlib-"))
        with zf.open(f"wheels/{blrlib_wheel}") as fh, zipfile.ZipFile(fh) as whl:
            in_wheel = set(whl.namelist())
    # Gradescope unpacks the zip into /autograder/source and needs these two at its top level
    assert {"setup.sh", "run_autograder", "install.sh", gradescope.REQUIREMENTS} <= names
    for script in ("setup.sh", "run_autograder", "install.sh"):
        assert modes[script] & stat.S_IXUSR, script
    assert "book/fx_a_sigmoid.ipynb" in names and "book/fx_b_gradient.ipynb" in names
    # the grader comes as blrlib's wheel, built from this repository
    assert not any(n.startswith(("coursework/", "blrlib/")) for n in names)
    assert {"coursework/grade.py", "coursework/gradescope.py", "blrlib/__init__.py"} <= in_wheel
    assert not any("__pycache__" in n for n in names | in_wheel)
    # the pins of requirements.txt of what the grader and the kernel need, and blrlib
    pins = gradescope.pinned((ROOT / "requirements.txt").read_text())
    assert requirements == pins + ["blrlib==0.1.0"]
    assert len(pins) == len(gradescope.BUNDLE_REQUIREMENTS)
    tag = f"cp{MINOR.replace('.', '')}"
    for pin in pins:
        name, version = pin.split("==")
        match = [w for w in wheels if w.split("-")[0].lower() == name.replace("-", "_").lower()]
        assert [w.split("-")[1] for w in match] == [version], (pin, match)
        assert match[0].endswith("-none-any.whl") or f"-{tag}-" in match[0], match
    assert all(w.endswith(".whl") and wheels[w].compress_type == zipfile.ZIP_STORED for w in wheels)
    assert not any(n.startswith(("jupyter_book", "sphinx", "pytest", "playwright", "ruff")) for n in wheels)
    # setup.sh installs from the wheels alone
    assert "bash /autograder/source/install.sh" in setup and "-m pip" not in setup
    assert "--no-index --find-links" in install and f"want={MINOR}\n" in install
    assert config["chapters"] == ["fx_a_sigmoid", "fx_b_gradient"] and config["sandbox"] == "auto"
    assert config["python"] == PYTHON
    assert config["limits"]["notebook_timeout"] == LIMITS.notebook_timeout
    assert [f for f in book.toc_files(__import__("yaml").safe_load(toc)) if "fx_" in f] == [
        "book/fx_a_sigmoid",
        "book/fx_b_gradient",
    ]


def test_a_second_build_takes_the_wheels_from_the_cache_alone(tmp_path, bundle, monkeypatch):
    # the bundle fixture filled the cache: pip is not asked to reach an index again
    calls, real_pip = [], gradescope._pip

    def pip(args, offline):
        calls.append((args[0], offline, "--no-index" in args))
        return real_pip(args, offline) if offline else (False, "no network here")

    monkeypatch.setattr(gradescope, "_pip", pip)
    lines = gradescope.wheels(tmp_path / "w", PYTHON, log=lambda text: None)
    assert lines == gradescope.pinned((ROOT / "requirements.txt").read_text()) + ["blrlib==0.1.0"]
    assert calls and all(offline and no_index for _, offline, no_index in calls), calls
    assert {n.name for n in (tmp_path / "w").glob("*.whl")} == {
        n.split("/", 1)[1] for n in zipfile.ZipFile(bundle).namelist() if n.startswith("wheels/")
    }


def test_without_the_wheels_it_says_what_it_needs(tmp_path, monkeypatch):
    monkeypatch.setattr(gradescope, "_pip", lambda args, offline: (False, "ERROR: no route to pypi.org"))
    with pytest.raises(gradescope.WheelsUnavailable) as info:
        gradescope.wheels(tmp_path / "w", "3.12", cache=tmp_path / "cache", log=lambda text: None)
    text = str(info.value)
    assert "CPython 3.12 on Linux x86-64" in text
    assert all(pin in text for pin in gradescope.pinned((ROOT / "requirements.txt").read_text()))
    assert "network access to the package index" in text and str(tmp_path / "cache" / "cp312") in text
    assert text.endswith("ERROR: no route to pypi.org")
    proc = subprocess.run([sys.executable, "-m", "coursework.gradescope", "build", "--python", "3.1x",
                           "--out", str(tmp_path / "a.zip")], capture_output=True, text=True, check=False)
    assert proc.returncode == 2 and "version like 3.12" in proc.stderr and not (tmp_path / "a.zip").exists()


def test_install_stops_on_an_image_of_another_python(tmp_path, bundle):
    ag = _autograder(tmp_path, bundle, {})
    fake = tmp_path / "python3"
    fake.write_text("#!/bin/sh\necho 3.99\n")
    fake.chmod(0o755)
    env = {**os.environ, "AUTOGRADER_ROOT": str(ag), "AUTOGRADER_SYSTEM_PYTHON": str(fake)}
    proc = subprocess.run(["bash", str(ag / "source" / "install.sh")], env=env, capture_output=True, text=True,
                          timeout=60, check=False)
    assert proc.returncode == 1, proc.stderr
    assert f"wheels are for Python {MINOR}, but {fake} is Python 3.99" in proc.stderr
    assert "make gradescope GRADESCOPE_PYTHON=3.99" in proc.stderr
    assert not (ag / "venv").exists()


def test_unknown_chapter_or_policy_is_refused(tmp_path):
    with pytest.raises(ValueError, match="not chapters of the book: nope"):
        gradescope.build(tmp_path / "a.zip", FIXTURES, "_toc.yml", ["nope"])
    with pytest.raises(ValueError, match="sandbox policy"):
        gradescope.build(tmp_path / "a.zip", FIXTURES, "_toc.yml", None, "never")
    with pytest.raises(ValueError, match="target Python must be a version like 3.12 "):
        gradescope.build(tmp_path / "a.zip", FIXTURES, "_toc.yml", None, python="python3")
    assert not (tmp_path / "a.zip").exists()


WRONG = {"work/fx_a_sigmoid.ipynb": {"ex_fx_zero_answer": "p0 = 0.4"}}  # in a folder, as a zip unpacks


def _check_honest(got):
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


def _check_wrong(got):
    tests = {t["name"]: t for t in got["tests"]}
    assert tests["fx_a_sigmoid ex-fx-zero"]["score"] == 0
    assert tests["fx_a_sigmoid ex-fx-zero"]["status"] == "failed"
    # the check cell's assertion failed: its kind is said, not its message (which may print
    # the reference value, as numpy's assert_allclose does)
    assert tests["fx_a_sigmoid ex-fx-zero"]["output"] == "check: the check failed (AssertionError)"
    assert "0.5" not in tests["fx_a_sigmoid ex-fx-zero"]["output"]  # the reference value
    assert tests["fx_a_sigmoid ex-fx-loglik"]["score"] == 3
    assert "graded work/fx_a_sigmoid.ipynb" in got["output"]


def test_run_autograder_grades_honest_and_wrong_submissions(tmp_path, bundle, bwrap):
    honest = _autograder(tmp_path / "honest", bundle, {"fx_a_sigmoid.ipynb": _honest(FX_A)})
    wrong = _autograder(tmp_path / "wrong", bundle, {n: _honest(FX_A, **a) for n, a in WRONG.items()})
    _check_honest(_run_autograder(honest))
    _check_wrong(_run_autograder(wrong))


@pytest.fixture(scope="module")
def installed(tmp_path_factory, bundle):
    """A fake /autograder with the wheels, whose ``venv`` the bundle's install step (what
    setup.sh runs after apt-get) made in a network namespace without network."""
    _system.require("netns")
    prefix = _system.offline_prefix()
    ag = _autograder(tmp_path_factory.mktemp("installed"), bundle, {}, wheels=True)
    env = {**os.environ, "AUTOGRADER_ROOT": str(ag), "AUTOGRADER_SYSTEM_PYTHON": sys.executable,
           "AUTOGRADER_NO_COMPILE": "1"}  # Gradescope's image byte-compiles; the test skips that
    # the image's pip settings must not reach install.sh: this one would make it fail
    (ag.parent / "impossible.txt").write_text("numpy==0.0.1\n")
    env["PIP_CONSTRAINT"] = str(ag.parent / "impossible.txt")
    probe = ("import socket\ntry:\n    socket.create_connection(('pypi.org', 443), timeout=10)\n"
             "except OSError:\n    print('no network')")
    cut = subprocess.run(prefix + [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120,
                         check=False)
    assert cut.stdout.strip() == "no network", "the namespace has network"
    proc = subprocess.run(prefix + ["bash", str(ag / "source" / "install.sh")], env=env, capture_output=True,
                          text=True, timeout=1200 * TIME_FACTOR, check=False)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    return ag


def _resubmit(ag, files):
    for folder in ("submission", "results"):
        if (ag / folder).exists():
            subprocess.run(["rm", "-rf", str(ag / folder)], check=True)
    for name, nb in files.items():
        (ag / "submission" / name).parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, str(ag / "submission" / name))


def test_the_bundle_installs_offline_and_grades_with_its_own_environment(installed, bwrap):
    python = installed / "venv" / "bin" / "python"
    # a fresh environment: the pinned versions, the grader from the bundle's wheel
    show = ("import coursework, importlib.metadata as m, sys; print(coursework.__file__); "
            "print(*(f'{n.split(\"==\")[0]}=={m.version(n.split(\"==\")[0])}' for n in sys.argv[1:]))")
    pins = (installed / "source" / gradescope.REQUIREMENTS).read_text().split()
    out = subprocess.run([python, "-I", "-c", show, *pins], capture_output=True, text=True, check=True).stdout
    where, *versions = out.split()
    assert pathlib.Path(where).is_relative_to(installed / "venv") and versions == pins, out
    assert subprocess.run([python, "-I", "-c", "import pytest"], capture_output=True, check=False).returncode
    # run_autograder with the bundle's venv (no AUTOGRADER_PYTHON), on both controls
    _resubmit(installed, {"fx_a_sigmoid.ipynb": _honest(FX_A)})
    _check_honest(_run_autograder(installed, python=None))
    _resubmit(installed, {n: _honest(FX_A, **a) for n, a in WRONG.items()})
    _check_wrong(_run_autograder(installed, python=None))


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
