"""A bare machine: without bubblewrap the grading checks skip loudly (tests/_system.py), unless
BOOK_SYSTEM_REQUIRED=1 (CI) makes them fail; `make test` ends with one summary and the one
apt-get line.  The machine is simulated by a PATH on which bwrap is not found."""

import os
import pathlib
import subprocess
import sys

import _system

ROOT = pathlib.Path(__file__).resolve().parents[1]
# a few checks of each kind: the planted class (module fixture), the sandbox probe, the student
# editions (session fixture), and tests that need no sandbox and must still run
SUBSET = [
    "tests/test_grading.py::test_sandbox_probe_passes_and_detects_a_visible_path",
    "tests/test_grading.py::test_nothing_left_running",
    "tests/test_grading.py::test_grading_stops_without_a_sandbox",
    "tests/test_coursework.py::test_fixture_student_edition_fails_only_in_exercises",
]


def _path_without(tmp_path, tools):
    """PATH with every folder that holds one of ``tools`` replaced by a folder of links to
    everything else in it."""
    dirs = []
    for k, d in enumerate(os.environ.get("PATH", "").split(os.pathsep)):
        if not d or not any(os.path.exists(os.path.join(d, t)) for t in tools):
            dirs.append(d)
            continue
        shadow = tmp_path / f"bin{k}"
        shadow.mkdir()
        for name in os.listdir(d):
            if name not in tools:
                os.symlink(os.path.join(d, name), shadow / name)
        dirs.append(str(shadow))
    return os.pathsep.join(dirs)


def _run(args, env, timeout=600):
    return subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)


def test_without_bubblewrap_the_grading_checks_skip_loudly_once(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BOOK_SYSTEM", "PYTEST_XDIST"))}
    env.update(PATH=_path_without(tmp_path, ("bwrap",)), BOOK_SKIPS_FILE=str(tmp_path / "skips.jsonl"))
    pytest_cmd = [sys.executable, "-m", "pytest", "-p", "no:xdist", "-q", "-rs", "-o", "addopts="] + SUBSET
    proc = _run(pytest_cmd, env)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    skips = [line for line in out.splitlines() if line.startswith("SKIPPED")]
    assert skips and all("[missing system tool: bwrap]" in line for line in skips), out[-3000:]
    assert all("apt-get install -y bubblewrap" in line for line in skips)
    assert "1 passed" in out  # the test without a sandbox ran
    assert out.count("CHECKS SKIPPED") == 1  # a run on its own says it at its end
    # the runs of make test print nothing (BOOK_SYSTEM_SUMMARY=make); its last step, once:
    summary = _run([sys.executable, "tests/_system.py"], env)
    assert summary.returncode == 0, summary.stderr
    text = summary.stdout
    assert text.count("CHECKS SKIPPED") == 1 and text.count(_system.APT_LINE) == 1, text
    assert "bwrap: " in text and "tests/test_grading.py" in text and "tests/test_coursework.py" in text
    assert "apt-get install -y bubblewrap" in _system.APT_LINE and "chromium" in _system.APT_LINE
    for package in _system.TEX_PACKAGES.split():
        assert package in _system.APT_LINE
    assert _system.APT_LINE in (ROOT / "README.md").read_text()
    # under CI every such check is required: the same run fails
    env["BOOK_SYSTEM_REQUIRED"] = "1"
    proc = _run(pytest_cmd, env)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out[-3000:]
    assert "BOOK_SYSTEM_REQUIRED=1 and [missing system tool: bwrap]" in out, out[-3000:]


def test_the_summary_is_empty_when_nothing_was_skipped(tmp_path, monkeypatch):
    monkeypatch.setattr(_system, "available", lambda tool: True)
    assert _system.summary(_system.read(tmp_path / "none.jsonl")) == ""
    (tmp_path / "s.jsonl").write_text('{"tool": "chromium", "test": "tests/site/test_browser.py::test_x"}\n')
    text = _system.summary(_system.read(tmp_path / "s.jsonl"))
    assert "chromium: 1 checks skipped" in text and "tests/site/test_browser.py" in text
