"""Scoring: the instructor's expected ``check_values`` from their run, and the rows of a
submission's run, compared outside the sandbox within each check cell's tolerances."""

from __future__ import annotations

from . import values
from .common import Row
from .merging import check_indices


def _answer_error(err):
    return "unanswered (NotImplementedError)" if err.startswith("NotImplementedError") else f"answer: {err}"


def score(chapter, nb, run, student, notes=None):
    """One :class:`Row` per coding exercise of ``chapter`` from the sandbox ``run`` of ``nb``."""
    notes = notes or {}
    index = check_indices(nb)
    cells = {r.get("index"): r for r in run.records if r.get("kind") == "cell"}
    rows = []
    for e in chapter.coding:
        r = Row(student, chapter.name, e.label, 0.0, e.points, notes="; ".join(notes.get(e.label, [])))
        rows.append(r)
        chk, ans = cells.get(index.get(e.check_id)), cells.get(index.get(e.answer_id))
        if run.problem:
            r.error = f"not graded, the whole notebook scores 0: {run.problem}"
            continue
        elif chk is None:
            r.error = "the check cell did not run"
        elif chk.get("status") == "ok":
            r.error = _compare(chapter, e, chk)
            if not r.error:
                r.points = e.points
        elif ans is not None and ans.get("status") != "ok":
            r.error = _answer_error(str(ans.get("error", "")))
        elif str(chk.get("error", "")).startswith("NotImplementedError"):
            r.error = "unanswered (NotImplementedError)"
        else:
            r.error = f"check: {chk.get('error', '')}"
        if run.memory and r.error:
            r.error += f" ({run.memory})"
    return rows


def _compare(chapter, e, chk):
    """``""`` when the check's values match the instructor's, else why not."""
    if "values" not in chk:
        return f"check: {chk.get('values_error') or 'no check_values came out of the kernel'}"
    expected = chapter.expected[e.label]
    if len(chk["values"]) > values.text_bound(expected):
        return (
            f"check: check_values is far larger than the values it should hold "
            f"({len(chk['values'])} characters of JSON)"
        )
    try:
        got = values.loads(chk["values"])
    except values.MalformedValues as exc:
        return f"check: check_values could not be read ({exc})"
    rtol, atol = chapter.tolerances(e)
    diff = values.compare(expected, got, rtol, atol)
    return f"check: the check cell ran, but {diff}" if diff else ""


def expected_values(chapter, run):
    """Fill ``chapter.expected`` from the instructor's run; return the problems (strings)."""
    if run.problem:
        return [f"{chapter.name}: the instructor's notebook could not be run: {run.problem}"]
    index = check_indices(chapter.nb)
    cells = {r.get("index"): r for r in run.records if r.get("kind") == "cell"}
    problems = []
    for e in chapter.coding:
        chk = cells.get(index[e.check_id]) or {}
        where = f"{chapter.name}: {e.check_id}"
        if chk.get("status") != "ok":
            problems.append(f"{where} fails with the instructor's answer: {chk.get('error', 'did not run')}")
        elif "values" not in chk:
            problems.append(f"{where}: {chk.get('values_error', 'no check_values')}")
        else:
            try:
                chapter.expected[e.label] = values.loads(chk["values"])
            except values.MalformedValues as exc:
                problems.append(f"{where}: its check_values cannot be encoded ({exc})")
                continue
            if any(x != x for _, data in chapter.expected[e.label].values() for x in data):
                problems.append(f"{where}: its check_values contain NaN, which never matches")
    return problems
