"""Feedback for students: per student and chapter an offline HTML page without scripts that
lists each exercise, its points and, for a miss, the reason, never a reference value."""

from __future__ import annotations

from .common import BY_HAND_CHARS, shown
from .reports import spooled_answer


FEEDBACK_STYLE = (
    "body{font-family:sans-serif;max-width:50em;margin:2em auto;padding:0 1em;color:#111}"
    "table{border-collapse:collapse;width:100%}td,th{border:1px solid #999;padding:.3em;"
    "text-align:left;vertical-align:top}pre{white-space:pre-wrap;background:#f4f4f4;padding:.5em}"
)


def feedback_reason(error):
    """What a student is told about a miss: the reason, never a reference value.  An error of
    the student's own answer cell, the comparison of ``check_values`` (it names the key and
    how far, not the expected number) and the grader's own reasons are shown as they are; of
    an error raised by the check cell only its kind (an assertion's message may print the
    reference, as numpy's ``assert_allclose`` does).

    >>> feedback_reason("check: AssertionError: Not equal to tolerance ... DESIRED: 0.5")
    'check: the check failed (AssertionError)'
    >>> feedback_reason("answer: NameError: name 'x' is not defined")
    "answer: NameError: name 'x' is not defined"
    """
    if error.startswith("check: ") and not error.startswith(("check: the check cell ran, but", "check: check_values")):
        kind = error[len("check: ") :].split(":", 1)[0].strip()
        return f"check: the check failed ({kind})" if kind.isidentifier() else "check: the check failed"
    return error


def feedback_pages(rows, by_hand, names):
    """``[((student folder, chapter), html)]``: per student and chapter an offline page with no
    script (and a policy that loads nothing): each exercise, its points and, for a miss, the
    reason (:func:`feedback_reason`); the pen-and-paper answers as text."""
    import html

    folder_of = {v: k for k, v in names.items()}
    pages = {}
    for r in rows:
        if r.student and r.chapter and r.exercise:
            pages.setdefault((r.student, r.chapter), []).append(r)
    answers = {}
    for student, chapter, e, where in by_hand:
        answers.setdefault((student, chapter), []).append((e, where))
    out = []
    for (student, chapter), mine in sorted(pages.items()):
        esc = lambda t: html.escape(shown(t, keep="\n"))  # noqa: E731
        auto = [r for r in mine if r.points is not None]
        got, mx = sum(r.points for r in auto), sum(r.max_points for r in auto)
        body = [
            f"<h1>{esc(chapter)}: feedback for {esc(student)}</h1>",
            f"<p>{got:g} of {mx:g} points graded automatically"
            + (f"; {sum(r.max_points for r in mine if r.points is None):g} more to be graded by hand" if len(auto) < len(mine) else "")
            + ".</p>",
            "<table><tr><th>exercise</th><th>points</th><th>why points were missed</th></tr>",
        ]
        for r in mine:
            pts = "graded by hand" if r.points is None else f"{r.points:g} / {r.max_points:g}"
            why = "" if r.points is None or r.points == r.max_points else feedback_reason(r.error or "no points")
            body.append(f"<tr><td>{esc(r.exercise)}</td><td>{pts}</td><td>{esc(why)}</td></tr>")
        body.append("</table>")
        for e, where in answers.get((student, chapter), []):
            text = spooled_answer(where, e.answer_id)
            text = "(no answer)" if not text or text.strip() == "YOUR ANSWER HERE" else text[:BY_HAND_CHARS]
            kind = "written" if e.written else "pen-and-paper"
            body += [f"<h2>{esc(e.label)}: your {kind} answer, as text</h2>", f"<pre>{esc(text)}</pre>"]
        page = (
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"
            f"<title>{esc(chapter)}: feedback</title><style>{FEEDBACK_STYLE}</style></head><body>\n"
            + "\n".join(body)
            + "\n</body></html>\n"
        )
        out.append(((folder_of.get(student, student), chapter), page))
    return out
