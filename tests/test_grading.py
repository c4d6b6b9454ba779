"""Grading a hostile class: the sandbox, the trusted comparison of check_values, intake, output.

The centre is one grading run (module fixture ``graded``) over a planted class built from the
fixture book: controls (the instructor's own notebooks score full marks, the untouched student
edition scores 0), honest mistakes (wrong, looping, crashing, deleted or edited cells), the
attacks of tests/hostile_class.py, and files the intake must reject or ignore.  While it runs,
the test process listens on TCP, UDP and Unix sockets and for SIGUSR1; afterwards the tests
check, for every attack, that it scored 0 on the attacked exercise, that the other students'
scores and files are unchanged, that no file outside the grader's output changed, that no
process is left and that nothing arrived on the network.  A second, small run without the
sandbox (``unsafe=True``) shows that the same attacks do succeed there, so these checks can fail.

These tests run as root on CI, as on a course server; bubblewrap must be installed
(``.ci/run`` installs it).
"""

import csv
import fcntl
import hashlib
import json
import os
import pathlib
import selectors
import shutil
import signal
import socket
import stat
import subprocess
import sys
import threading
import time

import nbformat
import pytest

from coursework import book, cgroup, grade, sandbox, student, values
from coursework import common, feedback, intake, names, reports
import hostile_class

ROOT = pathlib.Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
FX_A = FIXTURES / "book" / "fx_a_sigmoid.ipynb"
FX_B = FIXTURES / "book" / "fx_b_gradient.ipynb"
JOBS = max(2, min(4, os.cpu_count() or 1))
# time limits x TIME_FACTOR on a machine shared with other work (the fixture notebook took 45 s
# instead of 10 with a load of 18 on 2 cores): COURSEWORK_TEST_TIME_FACTOR=3
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
MAX_NOTEBOOK = 8_000_000
UID_BASE = sandbox.DEFAULT_UID_BASE


def _has_cap_sys_resource():
    """Whether this (root) process may lower oom_score_adj; a container may drop the capability."""
    for line in pathlib.Path("/proc/self/status").read_text().splitlines():
        if line.startswith("CapEff:"):
            return bool(int(line.split()[1], 16) >> 24 & 1)  # CAP_SYS_RESOURCE = 24
    return False


CAP_SYS_RESOURCE = _has_cap_sys_resource()


def _cgroups_work():
    try:
        # as many groups, as large, as the graders below make
        groups = cgroup.open_slots(JOBS, LIMITS.notebook_memory_bytes, tag=f"coursework-test.{os.getpid()}")
    except cgroup.Unavailable:
        return False
    for g in groups:
        g.remove()
    return True


CGROUPS = _cgroups_work()  # as root on CI and on a course server


# ----------------------------------------------------------------------------- check_values


def test_values_doctests():
    """coursework/ is not among pytest's doctest paths; its examples run here."""
    import doctest

    for module in (values, book, grade, sandbox, common, intake, names, reports, feedback):
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert result.failed == 0, module.__name__
    assert doctest.testmod(values).attempted >= 1
    # the grader's examples moved with its functions when grade.py was split
    for module in (common, intake, names, reports, feedback):
        assert doctest.testmod(module).attempted >= 1, module.__name__


def test_values_round_trip_and_compare():
    text = values.dumps({"t": 0.25, "g": [[1, 2], [3, 4.5]], "n": 3, "b": True})
    got = values.loads(text)
    assert got == {
        "t": ((), (0.25,)),
        "g": ((2, 2), (1.0, 2.0, 3.0, 4.5)),
        "n": ((), (3.0,)),
        "b": ((), (1.0,)),
    }
    assert values.compare(got, got, 0.0, 0.0) is None
    near = values.loads(values.dumps({"t": 0.25 * (1 + 1e-7), "g": [[1, 2], [3, 4.5]], "n": 3, "b": 1}))
    assert values.compare(got, near, 1e-6, 0.0) is None
    assert "check_values['t'] differs (relative difference 1.0e-07)" in values.compare(got, near, 1e-8, 0.0)


@pytest.mark.parametrize(
    "expected, got, rtol, atol, match",
    [
        ({"x": 1.0}, {"x": 1.0 + 2e-9}, 1e-9, 0.0, "differs"),
        ({"x": 1.0}, {"x": 1.0 + 2e-9}, 1e-9, 1e-9, None),  # atol + rtol |e|
        ({"x": 0.0}, {"x": 1e-10}, 1e-6, 1e-9, None),
        ({"x": 0.0}, {"x": 1e-8}, 1e-6, 1e-9, "differs"),
        ({"x": [1.0, 2.0]}, {"x": [1.0, 2.0, 3.0]}, 1e-6, 1e-9, "has shape (3,), expected (2,)"),
        ({"x": [[1.0, 2.0]]}, {"x": [1.0, 2.0]}, 1e-6, 1e-9, "has shape (2,), expected (1, 2)"),
        ({"x": 1.0}, {"y": 1.0}, 1e-6, 1e-9, "has no 'x'"),
        ({"x": 1.0}, {"x": 1.0, "y": 2.0}, 1e-6, 1e-9, "unexpected keys 'y'"),
        ({"x": 1.0}, {"x": float("nan")}, 1e-6, 1e-9, "is NaN"),
        ({"x": float("nan")}, {"x": float("nan")}, 1e-6, 1e-9, "is NaN"),  # NaN never matches
        ({"x": float("inf")}, {"x": float("inf")}, 1e-6, 1e-9, None),
        ({"x": float("inf")}, {"x": 1e308}, 1e-6, 1e-9, "differs"),
        ({"x": [1.0, 5.0, 7.0]}, {"x": [1.0, 6.0, 8.0]}, 1e-6, 1e-9, "[1] differs"),
    ],
)
def test_values_compare_cases(expected, got, rtol, atol, match):
    e, g = values.loads(values.dumps(expected)), values.loads(values.dumps(got))
    diff = values.compare(e, g, rtol, atol)
    assert (diff is None) if match is None else (match in diff), diff


@pytest.mark.parametrize(
    "text, match",
    [
        ("[1, 2]", "expected a dict"),
        ('{"x": 1}', "is not {shape, data}"),
        ('{"x": {"shape": [2], "data": [1]}}', "do not fill the shape"),
        ('{"x": {"shape": [-1], "data": []}}', "invalid shape"),
        ('{"x": {"shape": [1.5], "data": [1]}}', "invalid shape"),
        ('{"x": {"shape": [], "data": [true]}}', "expected a number, got bool"),
        ('{"x": {"shape": [], "data": ["0.5"]}}', "expected a number, got str"),
        ('{"x": {"shape": [], "data": [[0.5]]}}', "expected a number, got list"),
        ('{"x": {"shape": [], "data": [1e999999]}}', None),  # inf is a number
        ('{"x": {"shape": [], "data": [' + "9" * 5000 + "]}}", "not valid JSON"),
        ("[" * 100_000 + "]" * 100_000, "not valid JSON (RecursionError)"),
        ('{"x": {"shape": [1000001], "data": []}}', "invalid shape"),
        (
            "{" + ", ".join(f'"k{i}": {{"shape": [], "data": [1]}}' for i in range(65)) + "}",
            "more than 64 keys",
        ),
        ('{"__class__": {"shape": [], "data": [1]}}', None),  # just a key
        ("not json", "not valid JSON"),
    ],
)
def test_values_loads_is_defensive(text, match):
    if match is None:
        values.loads(text)
    else:
        with pytest.raises(
            values.MalformedValues,
            match=match.replace("(", r"\(")
            .replace(")", r"\)")
            .replace("[", r"\[")
            .replace("{", r"\{")
            .replace("}", r"\}"),
        ):
            values.loads(text)


def test_values_loads_size_limits():
    with pytest.raises(values.MalformedValues, match="longer than"):
        values.loads(" " * (values.MAX_TEXT + 1))
    with pytest.raises(values.MalformedValues, match="more than 1000000 numbers"):
        values.loads(
            json.dumps(
                {
                    "a": {"shape": [600_000], "data": [0] * 600_000},
                    "b": {"shape": [600_000], "data": [0] * 600_000},
                }
            )
        )


def test_values_dumps_refuses_what_is_not_numbers():
    import numpy as np

    for bad, match in (
        ([1, 2], "must be a dict"),
        ({1: 2.0}, "keys must be strings"),
        ({"x": "0.5"}, "must be a number"),
        ({"x": 1 + 2j}, "must be a number"),
        ({"x": [object()]}, "must be a number"),
        ({"x": [[1], [2, 3]]}, None),
    ):
        with pytest.raises((TypeError, ValueError), match=match):
            values.dumps(bad)

    class Rigged(float):
        def __eq__(self, other):
            return True

        __hash__ = float.__hash__

    assert values.loads(values.dumps({"x": Rigged(0.4), "a": np.arange(3.0)})) == {
        "x": ((), (0.4,)),
        "a": ((3,), (0.0, 1.0, 2.0)),
    }


# ----------------------------------------------------------------------------- what the conventions require


@pytest.mark.parametrize(
    "src, ok",
    [
        ("def f(x):\n    ### BEGIN SOLUTION\n    return x\n    ### END SOLUTION", True),
        ("# Compute p0: the sigmoid at 0 (a float).\n### BEGIN SOLUTION\np0 = 0.5\n### END SOLUTION", True),
        ("### BEGIN SOLUTION\np0 = 0.5\n### END SOLUTION\n# p0 is the sigmoid at 0", True),
        ("# Compute w_map, the MAP weights.\n### BEGIN SOLUTION\nw_map, info = 1, 2\n### END SOLUTION", True),
        ("### BEGIN SOLUTION\np0 = 0.5\n### END SOLUTION", False),
        ("# Do the exercise.\n### BEGIN SOLUTION\np0 = 0.5\n### END SOLUTION", False),
        ("# Compute p0x\n### BEGIN SOLUTION\np0 = 0.5\n### END SOLUTION", False),
        ("### BEGIN SOLUTION\ndef f(x):\n    return x\n### END SOLUTION", False),
    ],
)
def test_stub_must_state_what_to_write(src, ok):
    assert (book.stub_statement_problem(src) is None) == ok


@pytest.mark.parametrize(
    "src, ok",
    [
        ('check_values = {"t": t}\nassert t > 0', True),
        ('x = 1\ncheck_values: dict = {"t": t}', True),
        ("assert t > 0", False),
        ("def f():\n    check_values = {}\n", False),
        ('check_values["t"] = t', False),
    ],
)
def test_check_cell_must_assign_check_values(src, ok):
    assert book.assigns_check_values(src) == ok


def test_tolerances_come_from_the_check_cell():
    nb = book.read(FX_A)
    assert book.tolerances(nb.cells[4]) == (1e-6, 1e-9)  # defaults
    assert book.tolerances(nb.cells[8]) == (1e-10, 1e-12)  # "coursework" metadata


# ----------------------------------------------------------------------------- intake and output


def _student_with_answers(path, answers):
    nb = student.student_notebook(path)
    for c in nb.cells:
        gid = book.nbgrader_meta(c).get("grade_id")
        if gid in answers:
            c.source = answers[gid]
    return nb


def _correct(path):
    src = book.read(path)
    return _student_with_answers(
        path, {book.nbgrader_meta(c)["grade_id"]: book.source(c) for c in src.cells if book.is_answer(c)}
    )


def test_intake_rejects_links_and_special_files_and_ignores_the_rest(tmp_path):
    chapters = grade.load_chapters(FIXTURES, "_toc.yml")
    subs = tmp_path / "subs"
    (subs / "ada").mkdir(parents=True)
    good = nbformat.writes(_correct(FX_A)).encode()
    (subs / "ada" / "fx_a_sigmoid.ipynb").write_bytes(good)
    (subs / "ada" / "fx_b_gradient.ipynb.txt").write_bytes(good)
    (subs / "ada" / "FX_B_GRADIENT.IPYNB").write_bytes(good)
    (subs / "ada" / "notes.txt").write_text("hello")
    (subs / "ada" / "99_extra.ipynb").write_bytes(good)
    (subs / "ada" / ".ipynb_checkpoints").mkdir()
    (subs / "bob").mkdir()
    os.symlink(FX_B, subs / "bob" / "fx_b_gradient.ipynb")
    os.mkfifo(subs / "bob" / "fx_a_sigmoid.ipynb")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(subs / "bob" / "sock.ipynb"))
    (subs / "cyd").mkdir()
    (tmp_path / "elsewhere.ipynb").write_bytes(good)
    os.link(tmp_path / "elsewhere.ipynb", subs / "cyd" / "fx_a_sigmoid.ipynb")
    (subs / "cyd" / "fx_b_gradient.ipynb").write_bytes(b"x" * 2000)
    os.symlink(subs / "ada", subs / "dan")
    (subs / "README.md").write_text("top-level file")
    t0 = time.monotonic()
    (tmp_path / "spool").mkdir()
    found, rows = grade.intake(subs, chapters, max_bytes=MAX_NOTEBOOK, spool=tmp_path / "spool")
    assert time.monotonic() - t0 < 5  # the FIFO did not block
    assert [(s.student, s.name) for s in found] == [
        ("ada", "fx_a_sigmoid.ipynb"),
        ("cyd", "fx_b_gradient.ipynb"),
    ]
    assert found[0].sha256 == hashlib.sha256(good).hexdigest()
    assert found[0].cells() == grade.parse_submission(good)  # only what grading needs is spooled
    errors = {(r.student, r.chapter): r.error for r in rows}
    assert errors[("ada", "fx_b_gradient.ipynb.txt")].startswith(
        "ignored: 'fx_b_gradient.ipynb.txt' is not named like a notebook"
    )
    assert "in lower case" in errors[("ada", "FX_B_GRADIENT.IPYNB")]
    assert errors[("ada", "notes.txt")].startswith("ignored: 'notes.txt' is not a chapter notebook")
    assert "not a chapter of the book" in errors[("ada", "99_extra")]
    assert errors[("ada", ".ipynb_checkpoints")].startswith("ignored: '.ipynb_checkpoints' is a folder")
    assert errors[("bob", "fx_b_gradient")].startswith("rejected: 'fx_b_gradient.ipynb' is a symbolic link")
    assert errors[("bob", "fx_a_sigmoid")] == "rejected: 'fx_a_sigmoid.ipynb' is a named pipe (FIFO)"
    assert errors[("bob", "sock")] == "rejected: 'sock.ipynb' is a socket"
    assert "is a hard link" in errors[("cyd", "fx_a_sigmoid")]
    assert errors[("dan", "")] == "rejected: the student folder is a symbolic link"
    assert errors[("", "README.md")].startswith("ignored: 'README.md' is not a student folder")
    assert all(r.points == 0 and r.max_points == 0 for r in rows)
    (tmp_path / "spool2").mkdir()
    found, rows = grade.intake(subs, chapters, max_bytes=1500, spool=tmp_path / "spool2")
    sock.close()
    assert [(s.student, s.name) for s in found] == []
    errors = {(r.student, r.chapter): r.error for r in rows}
    assert errors[("ada", "fx_a_sigmoid")].startswith(
        "rejected: 'fx_a_sigmoid.ipynb' is larger than 0.0015 MB"
    )
    assert errors[("cyd", "fx_b_gradient")].startswith("rejected: 'fx_b_gradient.ipynb' is larger than")


@pytest.mark.parametrize(
    "data, match",
    [
        (b"[" * 200_000 + b"]" * 200_000, "nested too deeply"),
        (b"\xc3\x28 not utf-8", "not UTF-8"),  # (b"\xff\xfe..." is UTF-16's byte-order mark)
        (b"{", "not valid JSON"),
        (b'{"cells": {}}', "no list of cells"),
        (
            json.dumps({"cells": [{"cell_type": "code", "source": ""}] * (grade.MAX_CELLS + 1)}).encode(),
            "more than 5000 cells",
        ),
        (
            json.dumps({"cells": [{"cell_type": "evil", "source": ""}]}).encode(),
            "not a code, markdown or raw",
        ),
        (json.dumps({"cells": [{"cell_type": "code", "source": 7}]}).encode(), "source is not text"),
        (
            json.dumps(
                {"cells": [{"cell_type": "code", "source": "x" * (grade.MAX_CELL_CHARS + 1)}]}
            ).encode(),
            "longer than",
        ),
    ],
)
def test_parse_submission_is_defensive(data, match):
    with pytest.raises(ValueError, match=match):
        grade.parse_submission(data)


def test_merge_restores_checks_and_keeps_nothing_but_sources():
    sub = _student_with_answers(FX_A, {"ex-fx-zero-answer": "p0 = 0.25", "ex-fx-paper-answer": "My proof."})
    for c in sub.cells:
        c.metadata["huge"] = "x" * 1000
        if book.nbgrader_meta(c).get("grade_id") == "ex-fx-zero-check":
            c.source = "check_values = {'p0': 0.5}  # trust me"
            c.metadata["nbgrader"]["points"] = 100
            c.metadata["coursework"] = {"rtol": 1e9, "atol": 1e9}  # any answer within tolerance
        if c.cell_type == "code":
            c.outputs = [nbformat.v4.new_output("stream", text="y" * 1000)]
    sub.metadata["kernelspec"] = {"name": "evil", "display_name": "x", "language": "python"}
    bonus = nbformat.v4.new_markdown_cell("My own exercise.")  # points of its own?
    bonus.metadata["nbgrader"] = {"grade": True, "solution": True, "grade_id": "bonus", "points": 100}
    sub.cells.append(bonus)
    nb, notes = grade.merge(book.read(FX_A), grade.parse_submission(nbformat.writes(sub).encode()))
    src = book.read(FX_A)
    assert [e.label for e in book.exercises(nb)] == [e.label for e in book.exercises(src)]
    assert book.tolerances(nb.cells[4]) == (1e-6, 1e-9)  # the source's (its defaults)
    assert nb.metadata == src.metadata  # the source's kernelspec (the runner names python3 anyway)
    by_id = {grade._gid(c): c for c in nb.cells if grade._gid(c)}
    assert book.source(by_id["ex-fx-zero-check"]) == book.source(src.cells[4])
    assert by_id["ex-fx-zero-check"].metadata == src.cells[4].metadata
    assert book.source(by_id["ex-fx-zero-answer"]) == "p0 = 0.25"
    assert by_id["ex-fx-zero-answer"].metadata == src.cells[3].metadata
    assert book.source(by_id["ex-fx-paper-answer"]) == "My proof."
    assert all("huge" not in c.metadata for c in nb.cells)
    assert all(c.outputs == [] for c in nb.cells if c.cell_type == "code")
    assert notes == {"ex-fx-zero": ["check cell ex-fx-zero-check was modified; graded with the original"]}
    # the student's check cell lacks the hidden tests: not a modification, and they run
    assert book.source(by_id["ex-fx-loglik-check"]) == book.source(src.cells[8])
    assert "BEGIN HIDDEN TESTS" in book.source(src.cells[8])
    nbformat.validate(nb)


def test_merge_puts_back_deleted_cells():
    nb = _correct(FX_A)
    nb.cells = [
        c
        for c in nb.cells
        if book.nbgrader_meta(c).get("grade_id")
        not in ("ex-fx-zero-check", "ex-fx-loglik-answer", "ex-fx-paper-answer")
    ]
    nb, notes = grade.merge(book.read(FX_A), nb)
    ids = [grade._gid(c) for c in nb.cells if grade._gid(c)]
    assert ids == [
        "ex-fx-zero-answer",
        "ex-fx-zero-check",
        "ex-fx-loglik-answer",
        "ex-fx-loglik-check",
        "ex-fx-paper-answer",
    ]
    stub = next(c for c in nb.cells if grade._gid(c) == "ex-fx-loglik-answer")
    assert "raise NotImplementedError()" in book.source(stub)
    assert set(notes) == {"ex-fx-zero", "ex-fx-loglik", "ex-fx-paper"}


def test_merge_keeps_the_written_part_and_puts_it_back():
    """A written answer is the student's (like a pen-and-paper answer); deleted, its empty stub
    goes back right after the check cell; only the chapter's own answer ids reach by_hand.md."""
    sub = _student_with_answers(FX_B, {"ex-fx-grad-written": "Because it is a maximum."})
    nb, notes = grade.merge(book.read(FX_B), sub)
    by_id = {grade._gid(c): c for c in nb.cells if grade._gid(c)}
    assert book.source(by_id["ex-fx-grad-written"]) == "Because it is a maximum." and notes == {}
    chapter = grade.load_chapters(FIXTURES, "_toc.yml")["fx_b_gradient"]
    cells = grade.parse_submission(nbformat.writes(sub).encode())
    assert grade.by_hand_answers(chapter, cells) == {"ex-fx-grad-written": "Because it is a maximum."}
    sub.cells = [c for c in sub.cells if grade._gid(c) != "ex-fx-grad-written"]
    nb, notes = grade.merge(book.read(FX_B), sub)
    ids = [grade._gid(c) for c in nb.cells if grade._gid(c)]
    assert ids == ["ex-fx-grad-answer", "ex-fx-grad-check", "ex-fx-grad-written"]
    written = next(c for c in nb.cells if grade._gid(c) == "ex-fx-grad-written")
    assert written.cell_type == "markdown" and book.source(written) == "YOUR ANSWER HERE"
    assert notes == {"ex-fx-grad": ["answer cell ex-fx-grad-written was deleted; the empty stub was graded"]}


def test_write_fresh_never_follows_links(tmp_path):
    decoy = tmp_path / "decoy"
    decoy.mkdir()
    (decoy / "grades.csv").write_text("DECOY")
    out = tmp_path / "grades"
    os.symlink(decoy, out)
    grade.write_fresh(out, {"grades.csv": "a\n", "summary.txt": "b\n"})
    assert out.is_dir() and not out.is_symlink()
    assert (out / "grades.csv").read_text() == "a\n"
    assert (decoy / "grades.csv").read_text() == "DECOY"
    previous = [p for p in tmp_path.iterdir() if p.name.startswith("grades.previous-")]
    assert len(previous) == 1 and previous[0].is_symlink()  # the planted link, moved aside
    grade.write_fresh(out, {"grades.csv": "c\n"})  # twice in the same second
    assert (out / "grades.csv").read_text() == "c\n" and not (out / "summary.txt").exists()
    assert len([p for p in tmp_path.iterdir() if p.name.startswith("grades.previous-")]) == 2
    assert oct(stat.S_IMODE(out.stat().st_mode)) == "0o755"
    assert not [p for p in tmp_path.iterdir() if ".new-" in p.name]


def test_results_stream_must_be_signed():
    key = b"k" * 32
    lines = [
        sandbox.sign(key, i, json.dumps(r).encode()).encode() + b" " + json.dumps(r).encode()
        for i, r in enumerate([{"kind": "start"}, {"kind": "end", "cells": 0}])
    ]
    assert sandbox.verify(lines, key) == ([{"kind": "start"}, {"kind": "end", "cells": 0}], None)
    assert "line 1 is not signed" in sandbox.verify(lines, b"x" * 32)[1]
    assert "line 1 is not signed" in sandbox.verify(lines[::-1], key)[1]  # reordered
    assert "line 2 is not signed" in sandbox.verify(lines[:1] + [b"00 {}"], key)[1]  # injected
    assert "line 2 is not signed" in sandbox.verify([lines[0], lines[0]], key)[1]  # replayed
    forged = [sandbox.sign(key, 0, b"[1]").encode() + b" [1]"]
    assert "malformed line 1" in sandbox.verify(forged, key)[1]


# ----------------------------------------------------------------------------- the sandbox itself


def test_sandbox_probe_passes_and_detects_a_visible_path(tmp_path, bwrap):
    with sandbox.Sandbox(limits=LIMITS) as box:
        box.check(hidden=[ROOT / "book", ROOT / "tests", tmp_path])
        with pytest.raises(sandbox.SandboxUnavailable, match="visible inside"):
            box.check(hidden=[sys.prefix])  # the venv is bound: the probe must notice


def test_sandbox_command_of_a_grader_that_is_not_root(bwrap):
    """The command used when the grader runs as an ordinary user (bubblewrap makes the user
    namespace itself).  Run as root it maps the sandbox to root's uid, so this checks that the
    command works end to end (probe, a notebook, its check_values), not the uid."""
    with sandbox.Sandbox(limits=LIMITS) as box:
        box.root = False
        box.check(hidden=[ROOT / "book", ROOT / "tests"])
        run = box.execute(FX_B.read_bytes(), FX_B.name, grade.runner_args(LIMITS, book.read(FX_B)))
    checks = [r for r in run.records if r.get("index") == 4]
    assert run.problem is None and checks[0]["status"] == "ok", run
    assert set(values.loads(checks[0]["values"])) == {"g", "g_soft"}


def test_grading_stops_without_a_sandbox(tmp_path, monkeypatch):
    (tmp_path / "subs" / "ada").mkdir(parents=True)
    nbformat.write(_correct(FX_A), str(tmp_path / "subs" / "ada" / "fx_a_sigmoid.ipynb"))
    real_which = shutil.which
    monkeypatch.setattr(sandbox.shutil, "which", lambda tool: None if tool == "bwrap" else real_which(tool))
    with pytest.raises(grade.GradingError, match="'bwrap' is not installed.*--unsafe-no-sandbox"):
        grade.grade_folder(tmp_path / "subs", tmp_path / "out", root=FIXTURES, limits=LIMITS, jobs=1)
    assert not (tmp_path / "out").exists()


def test_only_the_chapters_asked_for_are_graded(tmp_path, bwrap):
    (tmp_path / "subs" / "ada").mkdir(parents=True)
    nbformat.write(_correct(FX_A), str(tmp_path / "subs" / "ada" / "fx_a_sigmoid.ipynb"))
    with pytest.raises(grade.GradingError, match="not chapters of the book: 05_laplace"):
        grade.grade_folder(tmp_path / "subs", tmp_path / "out", root=FIXTURES, chapters_to_grade=["05_laplace"])
    result = grade.grade_folder(
        tmp_path / "subs", tmp_path / "out", root=FIXTURES, limits=LIMITS, jobs=1, chapters_to_grade=["fx_b_gradient"]
    )
    assert [(r.student, r.chapter, r.exercise, r.error) for r in result.rows] == [
        ("ada", "fx_a_sigmoid", "", "ignored: not among the chapters graded this time (--chapters)")
    ]


def test_cli_refuses_to_grade_without_bubblewrap(tmp_path):
    (tmp_path / "subs" / "ada").mkdir(parents=True)
    env = dict(os.environ, PATH=str(tmp_path))  # no bwrap, prlimit or setpriv on PATH
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "coursework.grade",
            str(tmp_path / "subs"),
            "--out",
            str(tmp_path / "out"),
            "--root",
            str(FIXTURES),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    assert "grading stopped" in proc.stderr and "--unsafe-no-sandbox" in proc.stderr
    assert not (tmp_path / "out").exists()


def test_sandbox_command():
    with sandbox.Sandbox(slots=3, limits=LIMITS) as box:
        cmd = box.command("x.ipynb", [], (5, 6, 7, 8), slot=2)
        uids = box.uids
    joined = " ".join(cmd)
    assert cmd[0] == "prlimit" and f"--as={2 << 30}" in cmd and "--core=0" in cmd
    flags = [
        "--unshare-pid",
        "--unshare-net",
        "--unshare-ipc",
        "--unshare-uts",
        "--die-with-parent",
        "--clearenv",
        "--remount-ro /",
        "--unshare-user --uid 65534 --gid 65534 --disable-userns",
        f"--tmpfs {sandbox.WORK}",
        f"--size {64 << 20} --tmpfs /tmp",
        "-I -m coursework.runner",
    ]
    if os.geteuid() == 0:  # as on CI: a host uid per slot, no capabilities, then a user namespace
        flags += [f"--reuid={uids[2]}", "--no-new-privs", "--bounding-set=-all", "--nproc=128"]
        assert len(set(uids)) == 3 and min(uids) >= UID_BASE
    for flag in flags:
        assert flag in joined, flag
    binds = [cmd[i + 1] for i, a in enumerate(cmd) if a == "--ro-bind"]
    assert str(ROOT / "blrlib") in binds and str(ROOT / "coursework") in binds
    assert not [b for b in binds if b in (str(ROOT), str(ROOT / "book"), str(ROOT / "tests"))]


def test_sandbox_sees_an_environment_that_lives_under_tmp(tmp_path, monkeypatch, bwrap):
    """A checkout in /tmp (CI clones anywhere): the environment's read-only bind must not be
    hidden by the sandbox's private /tmp (it was: 'bwrap: execvp .../.venv/bin/python')."""
    env = tmp_path / "checkout" / ".venv"
    env.mkdir(parents=True)
    (env / "marker").write_text("inside\n")
    secret = tmp_path / "checkout" / "book.txt"
    secret.write_text("instructor only\n")
    assert str(env).startswith("/tmp/")
    monkeypatch.setattr(sandbox, "read_only_paths", lambda: [str(env)])
    script = f"cat {env}/marker; cat {secret} 2>/dev/null || echo hidden; ls /tmp"
    cmd = ["bwrap", "--unshare-user", "--unshare-pid"] + sandbox._mounts(LIMITS) + ["--", "/bin/sh", "-c", script]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.split()
    assert lines[:2] == ["inside", "hidden"], proc.stdout
    assert lines[2:] == [str(tmp_path).split("/")[2]], proc.stdout  # only the bound path's top


def test_sandbox_command_of_a_grader_that_is_not_root_limits_each_sandbox_apart():
    """Not root, every sandbox runs as the grader's uid; RLIMIT_NPROC counted all of them
    together, so a fork bomb beside an honest notebook kept its kernel from starting.  Since
    Linux 5.14 the limit is checked per user namespace: bubblewrap gets room for every sandbox,
    the runner inside the sandbox's own limit (measured as an ordinary user: the honest
    notebook then starts its processes while the bomb holds 126)."""
    with sandbox.Sandbox(slots=4, limits=LIMITS) as box:
        box.root = False
        cmd = box.command("x.ipynb", [], (5, 6, 7, 8), slot=0)
    outer = int(next(a for a in cmd if a.startswith("--nproc=")).split("=")[1])
    assert cmd[0] == "prlimit" and outer >= 5 * LIMITS.processes
    inner = cmd.index("--", cmd.index("--disable-userns"))
    assert cmd[inner + 1 : inner + 4] == ["prlimit", f"--nproc={LIMITS.processes}", "--"]
    assert cmd[inner + 4 :][:3] == [sys.executable, "-I", "-m"]
    assert not sandbox._nproc_per_userns("5.13.0") and sandbox._nproc_per_userns("5.14.0")


# ----------------------------------------------------------------------------- the planted class


class Listeners:
    """TCP, UDP, Unix (path and abstract) listeners on the host that record what arrives."""

    def __init__(self, folder, token):
        self.received, self.hosts = [], ["127.0.0.1"]
        ip = _host_ip()
        if ip:
            self.hosts.append(ip)
        self.tcp = socket.create_server(("0.0.0.0", 0))
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("0.0.0.0", 0))
        self.unix_path = str(folder / "host.sock")
        self.unix = socket.socket(socket.AF_UNIX)
        self.unix.bind(self.unix_path)
        self.unix.listen()
        self.abstract_name = f"cw-hostile-{token}"
        self.abstract = socket.socket(socket.AF_UNIX)
        self.abstract.bind("\0" + self.abstract_name)
        self.abstract.listen()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        sel = selectors.DefaultSelector()
        for s in (self.tcp, self.unix, self.abstract):
            sel.register(s, selectors.EVENT_READ, "accept")
        sel.register(self.udp, selectors.EVENT_READ, "udp")
        while not self.stop.is_set():
            for key, _ in sel.select(0.2):
                if key.data == "udp":
                    self.received.append(("udp", key.fileobj.recv(65536)))
                elif key.data == "accept":
                    conn, _ = key.fileobj.accept()
                    conn.settimeout(2)
                    try:
                        self.received.append(("stream", conn.recv(65536)))
                    except OSError:
                        self.received.append(("stream", b"<connected>"))
                    conn.close()

    def close(self):
        self.stop.set()
        self.thread.join()
        for s in (self.tcp, self.udp, self.unix, self.abstract):
            s.close()


def _host_ip():
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("10.255.255.255", 1))  # no packet is sent
            ip = s.getsockname()[0]
    except OSError:
        return None
    return None if ip.startswith("127.") else ip


def _snapshot(paths, content=True):
    """{path: sha256 or (size, mtime)} of every file under ``paths``."""
    out = {}
    for root in paths:
        root = pathlib.Path(root)
        for dirpath, dirs, files in os.walk(root):
            dirs[:] = [d for d in dirs if d not in ("__pycache__", ".pytest_cache")]
            for f in files + [d for d in dirs if os.path.islink(os.path.join(dirpath, d))]:
                p = os.path.join(dirpath, f)
                st = os.lstat(p)
                if stat.S_ISREG(st.st_mode) and content:
                    with open(p, "rb") as fh:
                        out[p] = hashlib.sha256(fh.read()).hexdigest()
                else:
                    out[p] = (stat.S_IFMT(st.st_mode), st.st_size, st.st_mtime_ns)
    return out


def _token_processes(token):
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as fh:
                    if token.encode() in fh.read():
                        found.append(int(pid))
            except OSError:
                pass
    return found


def _uid_processes(uids):
    """``{uid: pids}`` of the processes left running as the sandbox ``uids`` a grading run
    gave back.  Each uid is looked at while holding its lock (as ``sandbox.claim_uids`` takes
    it): a uid that another grader on the machine has claimed since (the test suite runs
    graders in parallel) is that grader's, and its processes are not survivors of this run."""
    found = {}
    for uid in uids:
        fd = os.open(os.path.join(sandbox._lock_dir(), str(uid)), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                continue  # claimed again by another grader
            pids = sandbox._uid_processes(uid)
            if pids:
                found[uid] = pids
        finally:
            os.close(fd)
    return found


def _write(path, nb):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(nb if isinstance(nb, str) else nbformat.writes(nb))


LOGLIK = book.source(book.read(FX_A).cells[7])

ATTACKS = {
    name: attack
    for name, attack in hostile_class.ATTACKS.items()
    if CGROUPS or name not in hostile_class.NEEDS_CGROUPS
}
ON_DISK_MARK = "# CW-ON-DISK "
SENT = ("duplicates", "manyanswers", "remote", *hostile_class.ENCODINGS, *hostile_class.ON_DISK)
LOOKALIKE_NAMES = [name for pair in hostile_class.LOOKALIKES.items() for name in pair]
# student -> {chapter: (points of its exercises, in order)}; the controls and honest mistakes
EXPECTED = {
    "instructor": {"fx_a_sigmoid": (1, 3), "fx_b_gradient": (2,)},
    "empty": {"fx_a_sigmoid": (0, 0)},
    "victim": {"fx_a_sigmoid": (1, 3), "fx_b_gradient": (2,)},
    "wrong": {"fx_a_sigmoid": (0, 0)},
    "loops": {"fx_a_sigmoid": (0, 3)},
    "syntax": {"fx_a_sigmoid": (0, 3)},
    "megabytes": {"fx_a_sigmoid": (1, 0)},
    "deleted": {"fx_a_sigmoid": (1, 0)},
    "tampered": {"fx_a_sigmoid": (0, 0)},
    "crash": {"fx_a_sigmoid": (0, 0)},
    "garbage": {"fx_a_sigmoid": (0, 0)},
    "hangs": {"fx_b_gradient": (0,)},
    "nested": {"fx_a_sigmoid": (0, 0)},
    "manycells": {"fx_a_sigmoid": (0, 0)},
    "bloated": {"fx_a_sigmoid": (1, 3)},
    "lone": {"fx_a_sigmoid": (0, 0)},
    **{name: {"fx_a_sigmoid": attack[2]} for name, attack in ATTACKS.items()},
    # without CAP_SYS_RESOURCE the sandbox's oom_score_adj of 1000 is no floor: the notebook can
    # lower it again (its attack then 'succeeds'; the grader says so in its log)
    **({} if CAP_SYS_RESOURCE else {"unkillable": {"fx_a_sigmoid": (1, 3)}}),
    **{name: {"fx_a_sigmoid": (1, 3)} for name in SENT + tuple(LOOKALIKE_NAMES)},
}
NOT_GRADED = ("linker", "alias", "hardlinker", "fifo", "renamed", "huge", "newline", "bytes", "junk")
FORMULA = '=HYPERLINK("evil.example";"full marks")'  # a folder name a spreadsheet would run


def _build_class(folder, ctx):
    """The planted class: ``EXPECTED`` students plus files the intake must not grade."""
    subs = pathlib.Path(ctx["subs"])
    instructor = pathlib.Path(ctx["instructor"]) / "book"
    (subs / "instructor").mkdir(parents=True)
    shutil.copy(instructor / "fx_a_sigmoid.ipynb", subs / "instructor" / "fx_a_sigmoid.ipynb")
    shutil.copy(instructor / "fx_b_gradient.ipynb", subs / "instructor" / "fx_b_gradient.ipynb")
    _write(subs / "empty" / "fx_a_sigmoid.ipynb", student.student_notebook(FX_A))
    _write(subs / "victim" / "fx_a_sigmoid.ipynb", _correct(FX_A))
    _write(subs / "victim" / "fx_b_gradient.ipynb", _correct(FX_B))
    answers = {
        "wrong": {"ex-fx-zero-answer": "p0 = 0.4", "ex-fx-loglik-answer": hostile_class.WRONG_LOGLIK},
        "loops": {"ex-fx-zero-answer": "while True:\n    pass", "ex-fx-loglik-answer": LOGLIK},
        "syntax": {"ex-fx-zero-answer": "p0 = = 0.5", "ex-fx-loglik-answer": LOGLIK},
        "megabytes": {"ex-fx-zero-answer": "for _ in range(40):\n    print('x' * 500_000)\np0 = 0.5"},
        "crash": {"ex-fx-zero-answer": "import os\nos._exit(1)"},
    }
    for name, ans in answers.items():
        _write(subs / name / "fx_a_sigmoid.ipynb", _student_with_answers(FX_A, ans))
    nb = _correct(FX_A)
    nb.cells = [
        c
        for c in nb.cells
        if book.nbgrader_meta(c).get("grade_id") not in ("ex-fx-zero-check", "ex-fx-loglik-answer")
    ]
    _write(subs / "deleted" / "fx_a_sigmoid.ipynb", nb)
    nb = _student_with_answers(FX_A, {"ex-fx-zero-answer": "p0 = 0.25"})
    next(
        c for c in nb.cells if book.nbgrader_meta(c).get("grade_id") == "ex-fx-zero-check"
    ).source = "check_values = {'p0': 0.5}"
    _write(subs / "tampered" / "fx_a_sigmoid.ipynb", nb)
    _write(subs / "garbage" / "fx_a_sigmoid.ipynb", "this is not a notebook {")
    _write(
        subs / "hangs" / "fx_b_gradient.ipynb",
        _student_with_answers(
            FX_B,
            {
                "ex-fx-grad-answer": (
                    "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
                    "while True:\n    time.sleep(0.1)"
                )
            },
        ),
    )
    _write(subs / "victim" / "99_not_a_chapter.ipynb", _correct(FX_B))
    # the attacks
    for name, (zero, loglik, _, _) in ATTACKS.items():
        ans = {
            "ex-fx-zero-answer": hostile_class.attack_cell(zero, ctx),
            "ex-fx-loglik-answer": loglik or LOGLIK,
        }
        _write(subs / name / "fx_a_sigmoid.ipynb", _student_with_answers(FX_A, ans))
    # what the intake must reject or ignore
    (subs / "linker").mkdir()
    os.symlink(instructor / "fx_a_sigmoid.ipynb", subs / "linker" / "fx_a_sigmoid.ipynb")
    os.symlink(subs / "victim", subs / "alias")
    (subs / "hardlinker").mkdir()
    os.link(instructor / "fx_a_sigmoid.ipynb", subs / "hardlinker" / "fx_a_sigmoid.ipynb")
    (subs / "fifo").mkdir()
    os.mkfifo(subs / "fifo" / "fx_a_sigmoid.ipynb")
    _write(subs / "renamed" / "fx_a_sigmoid.ipynb.txt", _correct(FX_A))
    _write(subs / "renamed" / "FX_B_GRADIENT.IPYNB", _correct(FX_B))
    _write(subs / "nested" / "fx_a_sigmoid.ipynb", '{"cells": ' + "[" * 300_000 + "]" * 300_000 + "}")
    _write(subs / "huge" / "fx_a_sigmoid.ipynb", '{"cells": [], "x": "' + "y" * (MAX_NOTEBOOK + 10) + '"}')
    nb = _correct(FX_A)
    nb.cells = nb.cells + [nbformat.v4.new_code_cell("x = 1") for _ in range(grade.MAX_CELLS)]
    _write(subs / "manycells" / "fx_a_sigmoid.ipynb", nb)
    nb = _correct(FX_A)  # enormous outputs and metadata, right answers
    nb.metadata["junk"] = ["m" * 1000] * 2000
    nb.cells[1].outputs = [nbformat.v4.new_output("stream", text="o" * 5_000_000)]
    nb.cells[1].metadata["junk"] = {"deep": [[["x"] * 10] * 10] * 100}
    _write(subs / "bloated" / "fx_a_sigmoid.ipynb", nb)
    # names and texts that used to stop the whole grading run (nothing graded, or no grades.csv
    # written): a chapter name followed by a newline, names that are not UTF-8, a lone surrogate
    _write(subs / "newline" / "fx_a_sigmoid.ipynb\n", _correct(FX_A))
    (subs / "bytes").mkdir()
    for raw in (b"fx_b_gradient\xff.ipynb", b"notes\xe9.txt"):
        (subs / "bytes" / os.fsdecode(raw)).write_text(nbformat.writes(_correct(FX_B)))
    _write(subs / os.fsdecode(b"caf\xe9") / "fx_a_sigmoid.ipynb", _correct(FX_A))
    _write(subs / "rtl\u202ekcab" / "fx_a_sigmoid.ipynb", _correct(FX_A))
    nb = json.loads(nbformat.writes(_student_with_answers(FX_A, {"ex-fx-zero-answer": "p0 = 0.5  # \ud800"})))
    _write(subs / "lone" / "fx_a_sigmoid.ipynb", json.dumps(nb))  # JSON escapes it: "\\ud800"
    _write(subs / FORMULA / "fx_a_sigmoid.ipynb", "not a notebook")
    (subs / "junk").mkdir()
    for i in range(grade.MAX_LISTED + 150):  # a zip of junk: rows for the first 100, then a count
        (subs / "junk" / f"junk{i:04d}.txt").write_text("x")
    # what a student sends, rather than what their code does (tests/hostile_class.py)
    honest = nbformat.writes(_correct(FX_A))
    for name, attack in (
        ("duplicates", hostile_class.many_duplicates),
        ("manyanswers", hostile_class.many_answers),
        ("remote", hostile_class.remote_by_hand),
    ):
        _write(subs / name / "fx_a_sigmoid.ipynb", json.dumps(attack(json.loads(honest)), ensure_ascii=False))
    for name, encode in hostile_class.ENCODINGS.items():
        (subs / name).mkdir()
        (subs / name / "fx_a_sigmoid.ipynb").write_bytes(encode(honest))
    for pair in hostile_class.LOOKALIKES.items():
        for name in pair:
            _write(subs / name / "fx_a_sigmoid.ipynb", honest)
    for name in hostile_class.ON_DISK:  # the file changes on disk while it is graded
        nb = _correct(FX_A)
        nb.cells.append(nbformat.v4.new_code_cell(f"{ON_DISK_MARK}{name}"))
        _write(subs / name / "fx_a_sigmoid.ipynb", nb)


def _book_with_broken_chapters(root):
    """The fixture book and two more chapters: fx_c_failing, whose check fails with the
    instructor's own answer, and fx_d_unconventional, whose check cell assigns no check_values."""
    shutil.copytree(FIXTURES, root)
    toc = (root / "_toc.yml").read_text()
    (root / "_toc.yml").write_text(
        toc + "      - file: book/fx_c_failing\n      - file: book/fx_d_unconventional\n"
    )
    for name, old, new in (
        ("fx_c_failing", "assert np.shape(", "assert False, 'the check is wrong'\nassert np.shape("),
        ("fx_d_unconventional", "check_values = {", "values = {"),
    ):
        nb = book.read(FX_B)
        check = next(c for c in nb.cells if book.is_check(c))
        assert old in check.source
        check.source = check.source.replace(old, new)
        nbformat.write(nb, str(root / "book" / f"{name}.ipynb"))
    return root


@pytest.fixture(scope="module")
def graded(tmp_path_factory, bwrap):
    folder = tmp_path_factory.mktemp("class")
    token = f"tok{os.getpid()}x{time.monotonic_ns() % 10**9}"
    shutil.copytree(FIXTURES, folder / "instructor")
    (folder / "decoy").mkdir()
    (folder / "decoy" / "grades.csv").write_text("DECOY\n")
    (folder / "markers").mkdir()
    out = folder / "grades"
    os.symlink(folder / "decoy", out)  # planted before grading: must not be followed
    net = Listeners(folder, token)
    signals = []
    old = signal.signal(signal.SIGUSR1, lambda *a: signals.append(a))
    ctx = {
        "token": token,
        "instructor": str(folder / "instructor"),
        "subs": str(folder / "submissions"),
        "victim": str(folder / "submissions" / "victim" / "fx_a_sigmoid.ipynb"),
        "out": str(out),
        "decoy": str(folder / "decoy"),
        "marker_dir": str(folder / "markers"),
        "repo": str(ROOT),
        "hosts": net.hosts,
        "tcp_port": net.tcp.getsockname()[1],
        "udp_port": net.udp.getsockname()[1],
        "unix_path": net.unix_path,
        "unix_abstract": net.abstract_name,
        "grader_pid": os.getpid(),
        "memory_target": 2 * LIMITS.notebook_memory_bytes,
    }
    _build_class(folder, ctx)
    # a second grader, started while the first runs, with the same uid base (an instructor
    # grading another course, or the test suite on the course server), and a notebook that
    # trips the grader itself
    second, root2 = folder / "second", _book_with_broken_chapters(folder / "instructor2")
    _write(second / "ada" / "fx_b_gradient.ipynb", _correct(FX_B))
    _write(second / "trip" / "fx_b_gradient.ipynb", _student_with_answers(FX_B, {"ex-fx-grad-answer": "# TRIP"}))
    # chapters nobody was asked to hand in, whose instructor notebook cannot grade: before, one
    # such notebook handed in stopped the grading of the whole class
    _write(second / "eve" / "fx_c_failing.ipynb", _correct(FX_B))
    _write(second / "eve" / "fx_b_gradient.ipynb", _correct(FX_B))
    _write(second / "mal" / "fx_d_unconventional.ipynb", _correct(FX_B))
    watched = [
        ROOT / "blrlib",
        ROOT / "coursework",
        ROOT / "book",
        ROOT / "tests" / "fixtures",
        folder / "instructor",
        folder / "submissions",
        folder / "decoy",
        folder / "markers",
    ]
    before = _snapshot(watched)
    venv_before = _snapshot([sys.prefix], content=False)
    tmp_before = set(os.listdir("/tmp"))
    real_merge, parallel = grade.merge, {}

    on_disk = {}  # path -> bytes, put back after grading

    def tripping_merge(source_nb, submitted):
        if any(src == "# TRIP" for _, src, _ in submitted):
            raise RuntimeError("a bug the notebook found in the grader")
        parallel.setdefault("oom_score_adj", pathlib.Path("/proc/self/oom_score_adj").read_text().strip())
        for _, src, _ in submitted:
            if src.startswith(ON_DISK_MARK):
                name = src[len(ON_DISK_MARK) :]
                path = folder / "submissions" / name / "fx_a_sigmoid.ipynb"
                on_disk[path] = path.read_bytes()
                hostile_class.ON_DISK[name](path)
        return real_merge(source_nb, submitted)

    def grade_second():
        time.sleep(3)  # the first grader has claimed its uids and is running notebooks
        try:
            parallel["result"] = grade.grade_folder(
                second, folder / "second-grades", root=root2, limits=LIMITS, jobs=1
            )
        except Exception as exc:  # noqa: BLE001 - reported by the test
            parallel["error"] = exc

    t0 = time.monotonic()
    grade.merge = tripping_merge
    thread = threading.Thread(target=grade_second)
    thread.start()
    try:
        result = grade.grade_folder(
            folder / "submissions",
            out,
            root=folder / "instructor",
            limits=LIMITS,
            jobs=JOBS,
            max_notebook_bytes=MAX_NOTEBOOK,
        )
        elapsed = time.monotonic() - t0
        thread.join()
        uids = result.isolation["uids"] + parallel["result"].isolation["uids"] if "result" in parallel else []
        survivors = _token_processes(token), _uid_processes(uids)
        grades_now = (out / "grades.csv").read_text()
        time.sleep(1.0)  # a survivor would rewrite the grades meanwhile
    finally:
        thread.join()
        grade.merge = real_merge
        for path, data in on_disk.items():  # the class as it was handed in, for the snapshots
            path.unlink()
            path.write_bytes(data)
        signal.signal(signal.SIGUSR1, old)
        net.close()
        for pid in _token_processes(token):  # clean up after a failure (the tests then fail)
            os.kill(pid, signal.SIGKILL)
    rows, text, tampered = result.rows, result.text, result.tampered
    with open(out / "grades.csv") as fh:
        table = list(csv.DictReader(fh))
    print(f"\nplanted class graded in {elapsed:.0f} s:\n{text}")
    return {
        "rows": rows,
        "text": text,
        "table": table,
        "elapsed": elapsed,
        "out": out,
        "folder": folder,
        "tampered": tampered,
        "before": before,
        "after": _snapshot(watched),
        "watched": watched,
        "venv": (venv_before, _snapshot([sys.prefix], content=False)),
        "survivors": survivors,
        "grades_then": grades_now,
        "signals": signals,
        "received": net.received,
        "token": token,
        "tmp": (tmp_before, set(os.listdir("/tmp"))),
        "isolation": result.isolation,
        "uids": uids,
        "parallel": parallel,
        "on_disk": sorted(str(p) for p in on_disk),
    }


def _points(graded, name, chapter):
    return {
        r["exercise"]: float(r["points"])
        for r in graded["table"]
        if r["student"] == name and r["chapter"] == chapter and r["exercise"] and r["points"] != ""
    }


def _row(graded, name, exercise, chapter="fx_a_sigmoid"):
    return next(
        r for r in graded["table"] if (r["student"], r["chapter"], r["exercise"]) == (name, chapter, exercise)
    )


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_planted_scores(graded, name):
    for chapter, pts in EXPECTED[name].items():
        labels = [
            e.label for e in book.exercises(book.read(FIXTURES / "book" / f"{chapter}.ipynb")) if e.coding
        ]
        assert _points(graded, name, chapter) == dict(zip(labels, map(float, pts))), (
            name,
            chapter,
            [r for r in graded["table"] if r["student"] == name],
        )


@pytest.mark.parametrize("name", sorted(n for n in ATTACKS if CAP_SYS_RESOURCE or n != "unkillable"))
def test_attack_scores_zero_and_says_why(graded, name):
    _, _, (zero, loglik), reason = ATTACKS[name]
    row = _row(graded, name, "ex-fx-zero")
    assert float(row["points"]) == 0 and reason in row["error"], row


def test_controls_and_honest_mistakes_are_reported(graded):
    assert all(
        r["error"] == ""
        for r in graded["table"]
        if r["student"] in ("instructor", "victim")
        and r["points"] != ""
        and r["chapter"] != "99_not_a_chapter"
    )
    assert _row(graded, "empty", "ex-fx-zero")["error"] == "unanswered (NotImplementedError)"
    assert _row(graded, "empty", "ex-fx-loglik")["error"] == "unanswered (NotImplementedError)"
    assert "AssertionError" in _row(graded, "wrong", "ex-fx-zero")["error"]
    assert (
        "the check cell ran, but check_values['hard'] differs"
        in _row(graded, "wrong", "ex-fx-loglik")["error"]
        or "AssertionError" in _row(graded, "wrong", "ex-fx-loglik")["error"]
    )
    assert "longer than" in _row(graded, "loops", "ex-fx-zero")["error"]
    assert "SyntaxError" in _row(graded, "syntax", "ex-fx-zero")["error"]
    assert "died" in _row(graded, "crash", "ex-fx-zero")["error"]
    assert "died" in _row(graded, "crash", "ex-fx-loglik")["error"]
    assert "unreadable notebook: not valid JSON" in _row(graded, "garbage", "ex-fx-zero")["error"]
    hang = _row(graded, "hangs", "ex-fx-grad", "fx_b_gradient")["error"]
    assert "longer than" in hang, hang
    assert "deleted" in _row(graded, "deleted", "ex-fx-zero")["notes"]
    assert "deleted" in _row(graded, "deleted", "ex-fx-loglik")["notes"]
    assert "modified" in _row(graded, "tampered", "ex-fx-zero")["notes"]
    assert "not a chapter of the book" in _row(graded, "victim", "", "99_not_a_chapter")["error"]
    assert "unreadable notebook: nested too deeply" in _row(graded, "nested", "ex-fx-zero")["error"]
    assert "more than 5000 cells" in _row(graded, "manycells", "ex-fx-zero")["error"]


def test_files_that_are_not_graded_get_a_row(graded):
    def err(name, chapter):
        return _row(graded, name, "", chapter)["error"]

    assert err("linker", "fx_a_sigmoid").startswith("rejected: 'fx_a_sigmoid.ipynb' is a symbolic link")
    assert _row(graded, "alias", "", "")["error"] == "rejected: the student folder is a symbolic link"
    assert "is a hard link" in err("hardlinker", "fx_a_sigmoid")
    assert err("fifo", "fx_a_sigmoid") == "rejected: 'fx_a_sigmoid.ipynb' is a named pipe (FIFO)"
    assert err("renamed", "fx_a_sigmoid.ipynb.txt").startswith("ignored:")
    assert err("renamed", "FX_B_GRADIENT.IPYNB").startswith("ignored:")
    assert "is larger than 8 MB" in err("huge", "fx_a_sigmoid")
    for name in NOT_GRADED:
        assert not [r for r in graded["table"] if r["student"] == name and r["exercise"]], name


def test_pen_and_paper_exercises_are_listed_for_grading_by_hand(graded):
    rows = [r for r in graded["table"] if r["exercise"] == "ex-fx-paper"]
    assert rows and all(
        r["points"] == "" and r["max_points"] == "2" and "graded by hand" in r["notes"] for r in rows
    )
    text = (graded["out"] / "by_hand.md").read_text()
    assert "## instructor, fx_a_sigmoid, ex-fx-paper (2 points)" in text
    assert "Marking guide" in text  # the instructor's own notebook holds the guide
    assert "## empty, fx_a_sigmoid, ex-fx-paper (2 points)\n\n(no answer)" in text


def test_written_parts_are_listed_for_grading_by_hand(graded):
    """ex-fx-grad also asks a question in words: beside its automatic row (the check's 2
    points) every graded fx_b notebook has a row "ex-fx-grad (written)" of 1 point left empty,
    and its answer goes to by_hand.md and the student's feedback page."""
    table = [r for r in graded["table"] if r["chapter"] == "fx_b_gradient"]
    auto = [r for r in table if r["exercise"] == "ex-fx-grad"]
    hand = [r for r in table if r["exercise"] == "ex-fx-grad (written)"]
    assert auto and {r["student"] for r in hand} == {r["student"] for r in auto}
    assert all(r["max_points"] == "2" for r in auto)
    assert all(r["points"] == "" and r["max_points"] == "1" and "graded by hand" in r["notes"] for r in hand)
    text = (graded["out"] / "by_hand.md").read_text()
    guide = "## instructor, fx_b_gradient, ex-fx-grad (written) (1 point)\n\n> Marking guide (1 point)"
    assert guide in text  # the instructor's own notebook holds the guide
    assert "## victim, fx_b_gradient, ex-fx-grad (written) (1 point)\n\n(no answer)" in text
    page = (graded["out"] / "feedback" / "instructor" / "fx_b_gradient.html").read_text()
    assert "2 of 2 points graded automatically; 1 more to be graded by hand" in page
    assert "ex-fx-grad (written): your written answer, as text" in page


def test_no_file_outside_the_grades_changed(graded):
    before, after = graded["before"], graded["after"]
    changed = sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p))
    assert changed == [], changed
    assert graded["venv"][0] == graded["venv"][1]
    new_tmp = [n for n in graded["tmp"][1] - graded["tmp"][0] if graded["token"] in n]
    assert new_tmp == []
    assert not graded["tampered"]
    warnings = [l for l in graded["text"].splitlines() if l.startswith("WARNING")]
    assert warnings == ["WARNING: student folder names to check (they may be mistaken for another):"]
    out = graded["out"]
    assert out.is_dir() and not out.is_symlink()
    assert sorted(os.listdir(out)) == ["by_hand.md", "exercises.csv", "feedback", "grades.csv", "hashes.csv", "summary.txt"]
    assert (graded["folder"] / "decoy" / "grades.csv").read_text() == "DECOY\n"
    moved = [p for p in graded["folder"].iterdir() if p.name.startswith("grades.previous-")]
    assert len(moved) == 1 and moved[0].is_symlink()
    assert graded["grades_then"] == (out / "grades.csv").read_text()


def test_other_students_files_unchanged(graded):
    hashes = {row[0]: row[1] for row in csv.reader((graded["out"] / "hashes.csv").read_text().splitlines())}
    subs = graded["folder"] / "submissions"
    for name in ("victim", "instructor", "empty"):
        for f in (subs / name).iterdir():
            if f.name.endswith(".ipynb") and f.stem != "99_not_a_chapter":
                assert hashes[f"submission {name}/{f.name}"] == hashlib.sha256(f.read_bytes()).hexdigest()
    changed = {r["student"] for r in graded["table"] if "changed while it was being graded" in r["notes"]}
    assert changed == set(hostile_class.ON_DISK)  # only the files changed on disk, below


def test_nothing_left_running(graded):
    token_procs, uid_procs = graded["survivors"]
    assert token_procs == [] and uid_procs == {}
    assert _token_processes(graded["token"]) == [] and _uid_processes(graded["uids"]) == {}
    if os.geteuid() == 0:  # else the notebooks run as the grader's own uid, mapped
        assert len(set(graded["uids"])) == JOBS + 1  # the two graders never shared a uid
    assert not [d for d in graded["isolation"]["cgroups"] if os.path.exists(d)]  # removed


def test_names_and_texts_that_used_to_stop_grading(graded):
    """Each of these made the grader raise for the whole class before: a KeyError (a chapter
    name with a newline after it matched the chapter pattern), a UnicodeEncodeError when
    writing grades.csv (file and folder names that are not UTF-8) or when running the merged
    notebook (a lone surrogate, valid JSON)."""
    assert _row(graded, "newline", "", "fx_a_sigmoid.ipynb\\n")["error"].startswith(
        "rejected: 'fx_a_sigmoid.ipynb\\n' has characters that are not printable"
    )
    assert _row(graded, "bytes", "", "fx_b_gradient\\xff")["error"].startswith("rejected:")
    for folder in ("caf\\xe9", "rtl\\u202ekcab"):
        row = _row(graded, folder, "", "")
        assert row["error"].startswith("rejected: the student folder has characters that are not printable")
    lone = _row(graded, "lone", "ex-fx-zero")["error"]
    assert lone == "unreadable notebook: a cell holds text that is not valid Unicode (a lone surrogate)"
    junk = [r for r in graded["table"] if r["student"] == "junk"]
    assert len(junk) == grade.MAX_LISTED + 1
    more = "ignored: 150 more entries that are not chapter notebooks (not listed one by one)"
    assert [r["error"] for r in junk].count(more) == 1
    # a folder named like a spreadsheet formula is written as text (a leading quote)
    formula = [r for r in graded["table"] if "HYPERLINK" in r["student"]]
    assert formula and all(r["student"] == "'" + FORMULA for r in formula)
    # the kernel's error text cannot move the terminal's cursor or hide in the file
    for name in ("grades.csv", "summary.txt", "by_hand.md", "hashes.csv"):
        text = (graded["out"] / name).read_bytes().decode("utf-8")  # valid UTF-8
        assert not [c for c in text if not c.isprintable() and c != "\n"], name
    assert "\\x1b[2J\\x1b[H\\x1b[32mall 12 / 12 points" in _row(graded, "screamer", "ex-fx-zero")["error"]
    assert "unexpected keys '\\udcff\\x1b[31m\\n=1+1'" in _row(graded, "screamer", "ex-fx-loglik")["error"]


def test_a_kernel_cannot_copy_the_references_of_the_checks(graded):
    """'copycat' disables the assertions and, after each check cell, swaps into check_values the
    references its assertions compared with (blrlib's values, which ex-fx-loglik's check cell
    computes in the kernel).  Read after the whole cell, check_values then held the
    instructor's numbers: 3 of 3 points for an answer returning garbage.  The runner reads it
    right after the statement that assigns it, before the assertions run; and the notebook is
    no file the kernel could read the check cells from ahead of their turn."""
    row = _row(graded, "copycat", "ex-fx-loglik")
    assert float(row["points"]) == 0 and "check_values['hard'] differs" in row["error"], row
    assert "differs" in _row(graded, "copycat", "ex-fx-zero")["error"]  # no notebook to read


def test_a_second_grader_at_the_same_time(graded):
    """Two graders on one machine (a second course, or the test suite on the course server):
    each claims its own sandbox uids, so neither kills the other's notebooks (the first
    grader's scores are checked by test_planted_scores); a notebook that trips the grader
    itself costs its student the points, not the class its grading."""
    assert "error" not in graded["parallel"], graded["parallel"]
    second = graded["parallel"]["result"]
    assert not set(second.isolation["uids"]) & set(graded["isolation"]["uids"])
    points = {(r.student, r.chapter, r.exercise): (r.points, r.error) for r in second.rows if r.exercise}
    assert points[("ada", "fx_b_gradient", "ex-fx-grad")] == (2.0, "")
    assert points[("eve", "fx_b_gradient", "ex-fx-grad")] == (2.0, "")
    assert set(second.not_graded) == {"fx_c_failing", "fx_d_unconventional"}
    failing = points[("eve", "fx_c_failing", "ex-fx-grad")]
    assert failing[0] == 0 and "not graded: the instructor's notebook of this chapter cannot grade" in failing[1]
    assert "AssertionError: the check is wrong" in failing[1]
    assert "does not assign check_values" in points[("mal", "fx_d_unconventional", "ex-fx-grad")][1]
    assert "WARNING: chapter fx_c_failing was not graded" in second.text
    assert points[("trip", "fx_b_gradient", "ex-fx-grad")] == (
        0.0,
        "not graded: the grader failed on this notebook (RuntimeError: a bug the notebook found in the grader)",
    )


@pytest.mark.skipif(not CGROUPS, reason="no memory control group here (not root, or no writable cgroup)")
def test_memory_of_a_notebook_is_bounded(graded):
    """memfd files and System V segments are in no process's address space: only the slot's
    control group stops them (the attack 'memhog' scores 0 and says why)."""
    isolation = next((l for l in graded["text"].splitlines() if l.startswith("isolation:")), "")
    # the probe at import made a control group, so the grader must have made its own too
    assert "memory 1024 MiB per notebook (all its processes" in isolation, isolation
    row = _row(graded, "memhog", "ex-fx-zero")
    assert "the notebook went over its memory limit of 1024 MiB" in row["error"], row


def test_values_far_too_large_are_refused_unparsed():
    chapter = grade.load_chapters(FIXTURES, "_toc.yml")["fx_a_sigmoid"]
    e = chapter.coding[0]
    chapter.expected[e.label] = values.loads(values.dumps({"p0": 0.5}))
    assert grade._compare(chapter, e, {"values": values.dumps({"p0": 0.5})}) == ""
    huge = {"values": values.dumps({"p0": [0.5] * 100_000})}
    assert grade._compare(chapter, e, huge).startswith("check: check_values is far larger than")


@pytest.mark.skipif(not CGROUPS, reason="no memory control group here (not root, or no writable cgroup)")
def test_two_graders_in_one_process_each_get_their_control_groups():
    """The groups were named by the pid alone: a second grader in the same process (the
    planted class runs two) found its names taken ("File exists") and graded without any,
    so whichever grader came second let the attack 'memhog' fill the memory."""
    first = cgroup.open_slots(2, 64 << 20)
    try:
        second = cgroup.open_slots(2, 64 << 20)
        try:
            dirs = [{d for g in groups for d in g.dirs} for groups in (first, second)]
            assert all(len(d) == len(first[0].dirs) * 2 for d in dirs) and not dirs[0] & dirs[1]
        finally:
            for g in second:
                g.remove()
    finally:
        for g in first:
            g.remove()
    assert not [d for g in first + second for d in g.dirs if os.path.exists(d)]


def test_stale_groups_of_dead_graders_are_removed(tmp_path):
    """Groups of a grader that was killed (its pid gone) are removed, both name forms; a live
    grader's groups and other names are kept."""
    h = cgroup.Hierarchy(2, str(tmp_path), frozenset({"memory", "cpu"}), str(tmp_path))
    dead = 2**22 + 12345  # above pid_max's default, so no process has it
    names = [
        f"coursework-grade.{dead}.0.slot0",
        f"coursework-test.{dead}.slot1",
        f"coursework-grade.{os.getpid()}.3.slot0",
        "coursework-grade.notapid.slot0",
        "somebody-else",
    ]
    for name in names:
        (tmp_path / name).mkdir()
    cgroup._remove_stale(h)
    assert sorted(os.listdir(tmp_path)) == sorted(names[2:])


def test_cgroup_hierarchies_are_read_from_proc(tmp_path):
    """cgroup v1 (one hierarchy per controller, as here in a VM) and v2 (unified, the grader
    in a systemd scope or a container's namespace) are both found, with the grader's own
    cgroup as a directory."""
    (tmp_path / "v2").mkdir()
    (tmp_path / "v2" / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
    mountinfo = tmp_path / "mountinfo"
    mountinfo.write_text(
        "31 23 0:28 / /sys/fs/cgroup rw - tmpfs tmpfs rw\n"
        "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
        "32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct\n"
        f"41 31 0:38 / {tmp_path}/v2 rw,relatime - cgroup2 cgroup2 rw\n"
    )
    own = tmp_path / "cgroup"
    own.write_text("4:memory:/process_api/abc\n1:cpu,cpuacct:/\n0::/user.slice/session-1.scope\n")
    found = {(h.version, h.mount): h for h in cgroup.hierarchies(str(mountinfo), str(own))}
    assert found[(1, "/sys/fs/cgroup/memory")].own == "/sys/fs/cgroup/memory/process_api/abc"
    assert found[(1, "/sys/fs/cgroup/cpu,cpuacct")].controllers == {"cpu", "cpuacct"}
    v2 = found[(2, str(tmp_path / "v2"))]
    assert v2.controllers >= {"memory", "cpu"} and v2.own == str(tmp_path / "v2" / "user.slice/session-1.scope")
    assert cgroup._unescape("/a\\040b") == "/a b"


def test_nothing_received_on_the_network_and_no_signal(graded):
    assert graded["received"] == []
    assert graded["signals"] == []


def test_grade_files_and_summary(graded):
    table, text = graded["table"], graded["text"]
    assert list(table[0]) == grade.FIELDS
    assert (graded["out"] / "summary.txt").read_text() == text
    students = {r["student"] for r in table if r["student"]}
    assert students >= set(EXPECTED) | set(NOT_GRADED)
    n = sum(len(chapters) for chapters in EXPECTED.values()) + 1  # + FORMULA's unreadable one
    assert text.startswith(f"graded {n} notebooks of {len(students)} students\n"), text[:200]
    assert "isolation: bubblewrap sandbox: uid 65534 in new user/mount/PID/network namespaces" in text
    hashes = (graded["out"] / "hashes.csv").read_text()
    assert (
        "chapter fx_a_sigmoid," in hashes
        and "package blrlib," in hashes
        and "submission victim/fx_a_sigmoid.ipynb," in hashes
    )


def test_grading_is_bounded_in_time(graded):
    # about 60 notebooks on JOBS cores; one (stopper) runs into its hard limit of 25 + 5 s
    # 7.5 s a notebook on JOBS cores (about 300 s for the first 40)
    n = int(graded["text"].split()[1])  # "graded N notebooks of ..."
    assert graded["elapsed"] < 7.5 * n * TIME_FACTOR, (graded["elapsed"], n)


# ---------------------------------------------------------------- the same attacks without the sandbox


def test_without_the_sandbox_the_attacks_succeed(tmp_path):
    """The counter-test: ``--unsafe-no-sandbox`` lets a reader find the solutions, a writer
    overwrite another student's notebook and the instructor's chapter, and a student reach the
    network; the grader also notices the chapter it trusts changed on disk (and grades with the
    copy it read at the start)."""
    shutil.copytree(FIXTURES, tmp_path / "instructor")
    (tmp_path / "decoy").mkdir()
    (tmp_path / "markers").mkdir()
    net = Listeners(tmp_path, "unsafe")
    subs = tmp_path / "subs"
    out = tmp_path / "grades"
    ctx = {
        "token": "unsafe",
        "instructor": str(tmp_path / "instructor"),
        "subs": str(subs),
        "victim": str(subs / "victim" / "fx_a_sigmoid.ipynb"),
        "out": str(out),
        "decoy": str(tmp_path / "decoy"),
        "marker_dir": str(tmp_path / "markers"),
        "repo": str(tmp_path / "instructor"),
        "hosts": ["127.0.0.1"],
        "tcp_port": net.tcp.getsockname()[1],
        "udp_port": net.udp.getsockname()[1],
        "unix_path": net.unix_path,
        "unix_abstract": net.abstract_name,
        "grader_pid": -1,
    }
    for name in ("reader", "network", "writer", "aio", "unkillable"):
        code = hostile_class.ATTACKS[name][0]
        _write(
            subs / name / "fx_a_sigmoid.ipynb",
            _student_with_answers(
                FX_A,
                {"ex-fx-zero-answer": hostile_class.attack_cell(code, ctx), "ex-fx-loglik-answer": LOGLIK},
            ),
        )
    _write(subs / "victim" / "fx_a_sigmoid.ipynb", _correct(FX_A))
    try:
        rows, text, tampered, *_ = grade.grade_folder(
            subs, out, root=tmp_path / "instructor", limits=LIMITS, jobs=1, unsafe=True
        )
    finally:
        net.close()
    table = {(r.student, r.exercise): r.points for r in rows}
    assert table[("reader", "ex-fx-zero")] == 1 and table[("network", "ex-fx-zero")] == 1
    assert table[("writer", "ex-fx-zero")] == 1
    if sandbox.seccomp_filter() is not None:  # without the seccomp filter io_setup works
        assert table[("aio", "ex-fx-zero")] == 1
    if os.geteuid() == 0:  # unsandboxed, as root, it lowers its oom_score_adj
        assert table[("unkillable", "ex-fx-zero")] == 1
    assert any(b"unsafe stolen" in data for _, data in net.received)
    assert "NO SANDBOX" in text and "WARNING: graded WITHOUT the sandbox" in text
    # the writer ran before or after the victim: graded from the copy read at the start
    assert table[("victim", "ex-fx-zero")] == 1 and table[("victim", "ex-fx-loglik")] == 3
    assert "submissions that changed while they were graded: victim/fx_a_sigmoid.ipynb" in text
    assert tampered and "WARNING: chapter fx_a_sigmoid changed during grading" in text


# ---------------------------------------------------------------- a grader no class can take down


def test_every_field_of_the_output_is_read_by_the_csv_module_with_its_limits(graded):
    """4,000 duplicate cells once put 272,058 characters into one notes field, and Python's csv
    module (131,072 characters a field by default) stopped reading grades.csv there."""
    assert csv.field_size_limit() == 131072
    for name in ("grades.csv", "hashes.csv"):
        lines = (graded["out"] / name).read_text().splitlines()
        rows = list(csv.reader(lines))
        assert len(rows) == len(lines) and all(len(f) <= grade.FIELD_CHARS for r in rows for f in r), name
    notes = _row(graded, "duplicates", "ex-fx-zero")["notes"]
    assert "a second cell with grade id ex-fx-zero-answer was ignored (800 times)" in notes, notes
    assert len(graded["table"]) == len((graded["out"] / "grades.csv").read_text().splitlines()) - 1


def test_a_field_too_long_is_cut_with_a_marker_and_kept_whole_beside(tmp_path):
    long_note = "; ".join(f"note {k}" for k in range(40_000))
    rows = [grade.Row("ada", "fx_a_sigmoid", "ex-fx-zero", 0.0, 1.0, "", long_note)]
    full = []
    text = grade._csv(rows, full)
    (got,) = list(csv.DictReader(text.splitlines()))
    assert len(got["notes"]) <= grade.FIELD_CHARS and got["notes"].startswith("note 0; note 1")
    assert got["notes"].endswith(f"the full text is in {grade.FULL_TEXT_FILE}: grades.csv line 2, notes]")
    assert long_note in "".join(full)
    subs = tmp_path / "subs"
    _write(subs / "ada" / "fx_a_sigmoid.ipynb", "not a notebook")
    grade.write_fresh(tmp_path / "out", {"grades.csv": text, grade.FULL_TEXT_FILE: "".join(full)})
    assert long_note in (tmp_path / "out" / grade.FULL_TEXT_FILE).read_text()


def test_a_file_changed_on_disk_while_graded_is_never_read_whole(graded):
    """A student who can write to their own folder during grading made the graded file a 40 GB
    sparse file (or a FIFO, or a link to /dev/zero): the final re-hash read it whole, died with
    MemoryError and wrote no grades.  Now the size is checked first and nothing beyond it read;
    the row says the file changed, and the grade stands for the copy read at the start."""
    assert len(graded["on_disk"]) == len(hostile_class.ON_DISK)
    for name in hostile_class.ON_DISK:
        for ex in ("ex-fx-zero", "ex-fx-loglik"):
            assert "changed while it was being graded" in _row(graded, name, ex)["notes"]
    line = next(l for l in graded["text"].splitlines() if l.startswith("submissions that changed"))
    assert all(f"{name}/fx_a_sigmoid.ipynb" in line for name in hostile_class.ON_DISK)


def test_rehash_is_bounded_by_the_size_at_intake(tmp_path):
    chapters = grade.load_chapters(FIXTURES, "_toc.yml")
    subs = tmp_path / "subs"
    _write(subs / "ada" / "fx_a_sigmoid.ipynb", _correct(FX_A))
    (tmp_path / "spool").mkdir()
    (sub,), _ = grade.intake(subs, chapters, MAX_NOTEBOOK, tmp_path / "spool")
    assert grade.rehash(subs, sub) == sub.sha256
    os.truncate(subs / "ada" / "fx_a_sigmoid.ipynb", 1 << 40)  # 1 TiB, sparse
    t0 = time.monotonic()
    assert grade.rehash(subs, sub) is None and time.monotonic() - t0 < 1


def test_the_spool_and_memory_are_bounded_per_notebook(tmp_path):
    """Two-byte characters made the grader's temporary copy 3x the notebook (JSON's ASCII
    escapes); markdown cells with grade ids of their own were all kept in memory until the end.
    Now the spool is at most about the file, and only the chapter's own pen-and-paper answers
    are kept (in the spool)."""
    chapters = grade.load_chapters(FIXTURES, "_toc.yml")
    subs = tmp_path / "subs"
    text = json.dumps(hostile_class.many_answers(json.loads(nbformat.writes(_correct(FX_A)))), ensure_ascii=False)
    _write(subs / "ada" / "fx_a_sigmoid.ipynb", text)
    size = (subs / "ada" / "fx_a_sigmoid.ipynb").stat().st_size
    assert size > 5_000_000
    (tmp_path / "spool").mkdir()
    (sub,), _ = grade.intake(subs, chapters, MAX_NOTEBOOK, tmp_path / "spool")
    assert sub.spooled.stat().st_size <= size
    answers = grade.by_hand_answers(chapters["fx_a_sigmoid"], sub.cells())
    assert list(answers) == ["ex-fx-paper-answer"]


@pytest.mark.parametrize("name", sorted(hostile_class.ENCODINGS))
def test_an_honest_notebook_in_another_encoding_scores_full_marks(graded, name):
    for ex in ("ex-fx-zero", "ex-fx-loglik"):
        assert _row(graded, name, ex)["error"] == "", _row(graded, name, ex)


def test_lookalike_student_names_are_flagged(graded):
    """Folder names that differ by a trailing space or a Cyrillic letter showed as identical
    lines in the summary.  Each is flagged (in its rows' notes and the summary) with its
    characters that are not ASCII spelled out; both are graded."""
    text = graded["text"]
    for original, lookalike in hostile_class.LOOKALIKES.items():
        for name in (original, lookalike):
            notes = _row(graded, name, "ex-fx-zero")["notes"]
            assert "looks like" in notes, (name, notes)
    assert "has leading or trailing spaces" in _row(graded, "spaced ", "ex-fx-zero")["notes"]
    assert "has leading or trailing spaces" in _row(graded, " lead", "ex-fx-zero")["notes"]
    assert "<U+0456 CYRILLIC SMALL LETTER BYELORUSSIAN-UKRAINIAN I>" in text
    assert "mixes letters of CYRILLIC, LATIN" in text
    assert "  'spaced '" in text  # the summary line of the folder with a trailing space, quoted
    assert grade.display_names({"\uff41\uff44\uff41"}) == {"\uff41\uff44\uff41": "ada"}  # NFKC
    assert grade.display_names({"ada", "\uff41da"}) == {"ada": "ada", "\uff41da": "\uff41da"}


def test_by_hand_loads_nothing_when_viewed(graded):
    """A remote image in a pen-and-paper answer loaded when the instructor viewed by_hand.md,
    telling the student when and from where.  Rendered as Markdown with HTML allowed, the
    answers now make no element that loads anything."""
    import html.parser

    from markdown_it import MarkdownIt

    text = (graded["out"] / "by_hand.md").read_text()
    assert "My proof uses the figure below." in text and "evil.example" in text  # kept, as text
    rendered = MarkdownIt("commonmark", {"html": True}).render(text)
    found = []

    class Finder(html.parser.HTMLParser):
        def handle_starttag(self, tag, attrs):
            loading = {"src", "srcset", "poster", "data", "background", "style", "href"}
            bad = [a for a, _ in attrs if a in loading and not (tag == "a" and a == "href")]
            if tag not in ("h1", "h2", "p", "blockquote", "a", "em", "strong", "code", "br", "ul", "li", "ol") or bad:
                found.append((tag, attrs))

    Finder().feed(rendered)
    assert found == [], found


def test_the_grader_is_the_oom_killers_last_choice(graded):
    """The grader lowers its own oom_score_adj (as root) and every sandbox raises its own to
    1000 ('unkillable' cannot lower it again), so the machine's OOM killer takes a notebook,
    never the grader."""
    if os.geteuid() == 0 and CAP_SYS_RESOURCE:
        assert graded["parallel"]["oom_score_adj"] == str(sandbox.GRADER_OOM_SCORE_ADJ)
    assert pathlib.Path("/proc/self/oom_score_adj").read_text().strip() != str(sandbox.GRADER_OOM_SCORE_ADJ)


def test_jobs_are_lowered_to_what_the_memory_allows():
    if os.geteuid() != 0:
        assert grade.jobs_that_fit(8, 4 << 30, available=1) == 8  # not root: per-process limits
        return
    said = []
    gib = 1 << 30
    assert grade.jobs_that_fit(8, 4 * gib, said.append, available=grade.GRADER_RESERVE + 9 * gib) == 2
    assert "grading 2 notebooks at a time, not 8" in said[0] and "--notebook-memory-mb" in said[0]
    assert grade.jobs_that_fit(2, gib, said.append, available=grade.GRADER_RESERVE + 2 * gib) == 2
    with pytest.raises(grade.GradingError, match="not even one notebook fits in memory"):
        grade.jobs_that_fit(1, 4 * gib, said.append, available=3 * gib)


@pytest.mark.parametrize("version", [1, 2])
def test_an_oom_kill_is_blamed_only_on_the_group_that_hit_its_limit(tmp_path, version):
    """A notebook killed by the machine's OOM killer (a neighbour filled the memory) was told it
    went over its own limit.  The group's own counters tell them apart: v2 memory.events 'oom'
    (the limit reached) against 'oom_kill'; v1 memory.failcnt against oom_control's oom_kill."""
    g = cgroup.SlotGroup(version, [str(tmp_path)], str(tmp_path), 1 << 30)

    def counters(limit, kills):
        if version == 2:
            (tmp_path / "memory.events").write_text(f"low 0\nhigh 0\nmax {limit}\noom {limit}\noom_kill {kills}\n")
        else:
            (tmp_path / "memory.oom_control").write_text(f"oom_kill_disable 0\nunder_oom 0\noom_kill {kills}\n")
            (tmp_path / "memory.failcnt").write_text(f"{limit}\n")
        return g.oom_counts()

    before = counters(1, 1)
    assert cgroup.oom_verdict(before, counters(1, 1), g.memory_bytes) is None
    kind, said = cgroup.oom_verdict(before, counters(1, 3), g.memory_bytes)
    assert kind == "machine" and "not this notebook's fault" in said and "over its memory limit" not in said
    kind, said = cgroup.oom_verdict(before, counters(4, 3), g.memory_bytes)
    assert kind == "limit" and "went over its memory limit of 1024 MiB" in said


def test_the_seccomp_filter_is_a_valid_program():
    """Built here without libseccomp: 8-byte instructions, loaded by bubblewrap in every
    sandbox (the probe of test_sandbox_probe_passes... runs under it; 'aio' shows it holds)."""
    import struct

    prog = sandbox.seccomp_filter("x86_64")
    insns = [struct.unpack("=HBBI", prog[i : i + 8]) for i in range(0, len(prog), 8)]
    assert insns[0] == (0x20, 0, 0, 4) and insns[1][3] == 0xC000003E
    assert {k for code, _, _, k in insns if code == 0x15} >= {206, 425}
    assert insns[-2] == (0x06, 0, 0, 0x7FFF0000) and insns[-1] == (0x06, 0, 0, 0x00050000 | 38)
    for i, (code, jt, jf, _) in enumerate(insns):  # every jump lands inside the program
        if code in (0x15, 0x35):
            assert i + 1 + max(jt, jf) < len(insns)
    assert sandbox.seccomp_filter("sparc") is None


def test_pass_rates_per_exercise_for_the_instructor(graded):
    """exercises.csv and the summary: per exercise the notebooks, full marks, the pass rate and
    the most common reasons for a miss (numbers made '#', never the reference value)."""
    with open(graded["out"] / "exercises.csv") as fh:
        table = {(r["chapter"], r["exercise"]): r for r in csv.DictReader(fh)}
    zero = table[("fx_a_sigmoid", "ex-fx-zero")]
    mine = [r for r in graded["table"] if (r["chapter"], r["exercise"]) == ("fx_a_sigmoid", "ex-fx-zero")]
    full = sum(1 for r in mine if r["points"] == "1")
    assert int(zero["notebooks"]) == len(mine) and int(zero["full_marks"]) == full
    assert float(zero["pass_rate"]) == pytest.approx(full / len(mine), abs=1e-3)
    assert "AssertionError" in zero["common_misses"] and "0.5" not in zero["common_misses"]
    line = next(l for l in graded["text"].splitlines() if l.strip().startswith("fx_a_sigmoid ex-fx-zero"))
    assert f"{full} of {len(mine)} (" in line


def test_feedback_for_each_student_and_chapter(graded):
    """An offline page per student and chapter, no script, loading nothing: each exercise, its
    points and for a miss the reason, never the reference value; pen-and-paper answers as text."""
    import html.parser

    fb = graded["out"] / "feedback"
    pages = sorted(fb.glob("*/*.html"))
    expected = {(name, ch) for name, chs in EXPECTED.items() for ch in chs}
    assert {(p.parent.name, p.stem) for p in pages} >= expected
    for page in pages:
        text = page.read_text()
        found = []

        class Finder(html.parser.HTMLParser):
            def handle_starttag(self, tag, attrs):
                if tag not in ("html", "head", "meta", "title", "style", "body", "h1", "h2", "p", "table", "tr", "th", "td", "pre"):
                    found.append(tag)
                found.extend(a for a, _ in attrs if a in ("src", "href", "srcset", "style", "poster", "data"))

        Finder().feed(text)
        assert found == [] and "default-src 'none'" in text, (page, found)
    wrong = (fb / "wrong" / "fx_a_sigmoid.html").read_text()
    assert "ex-fx-zero</td><td>0 / 1</td><td>check: the check failed (AssertionError)" in wrong
    assert "ex-fx-loglik</td><td>0 / 3</td>" in wrong
    instructor = (fb / "instructor" / "fx_a_sigmoid.html").read_text()
    assert "4 of 4 points graded automatically; 2 more to be graded by hand" in instructor
    assert "Marking guide" in instructor  # the pen-and-paper answer, as text
    remote = (fb / "remote" / "fx_a_sigmoid.html").read_text()
    assert "&lt;img src=" in remote and "<img" not in remote
    assert grade.feedback_reason("check: AssertionError: DESIRED: 0.5") == "check: the check failed (AssertionError)"
