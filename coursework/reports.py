"""The instructor's output files: ``grades.csv`` and ``exercises.csv`` (fields readable by
Python's csv module with its default limits, no spreadsheet formulas), ``hashes.csv``,
``by_hand.md`` (pen-and-paper answers that load nothing when viewed), ``summary.txt``, and
:func:`write_fresh`, which puts them in place atomically without following a link."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import os
import pathlib
import re
import tempfile
import time

from .common import BY_HAND_CHARS, FIELDS, UNSAFE_WARNING, open_dir, shown


FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_text(text):
    """A text field of a CSV file: :func:`shown`, and a leading ``'`` when it would start with
    a character that makes a spreadsheet read it as a formula (a student folder named
    ``=HYPERLINK(...)`` or ``-2+3``); the OWASP advice for CSV injection.

    >>> print(csv_text('=HYPERLINK("http://x", "marks")'), csv_text("ada"), csv_text("-rf"))
    '=HYPERLINK("http://x", "marks") ada '-rf
    """
    text = shown(text)
    return "'" + text if text.startswith(FORMULA_START) else text


FIELD_CHARS = 4000  # of a CSV field; Python's csv module reads at most 131,072 by default
FULL_TEXT_FILE = "notes-full.txt"  # the full text of the fields that were cut


def cut_field(text, where, full):
    """``text`` (already :func:`csv_text`) cut to ``FIELD_CHARS`` with a marker saying where its
    full text is; the full text is appended to the list ``full`` (for ``FULL_TEXT_FILE``).

    >>> full = []
    >>> len(cut_field("x" * 9000, "row 1 notes", full)) <= FIELD_CHARS, len(full[0]) > 9000
    (True, True)
    """
    if len(text) <= FIELD_CHARS:
        return text
    full.append(f"== {where} ({len(text)} characters)\n{text}\n\n")
    marker = f" [... cut at {FIELD_CHARS} characters; the full text is in {FULL_TEXT_FILE}: {where}]"
    return text[: FIELD_CHARS - len(marker)] + marker


def grades_csv(rows, full=None):
    full = [] if full is None else full
    buf = io.StringIO()
    w = csv.DictWriter(buf, FIELDS, lineterminator="\n")
    w.writeheader()
    for n, r in enumerate(rows, start=2):
        d = {k: cut_field(csv_text(v), f"grades.csv line {n}, {k}", full) for k, v in dataclasses.asdict(r).items()}
        d["points"] = "" if r.points is None else f"{r.points:g}"
        d["max_points"] = f"{r.max_points:g}"
        w.writerow(d)
    return buf.getvalue()


def hashes_csv(trusted, subs):
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["what", "sha256"])
    for k, v in trusted.items():
        w.writerow([csv_text(k)[:FIELD_CHARS], v])
    for s in subs:  # names are at most 255 bytes, 1,020 characters escaped
        w.writerow([csv_text(f"submission {s.student}/{s.name}")[:FIELD_CHARS], s.sha256])
    return buf.getvalue()


_IMAGE = re.compile(r"!\[")


def neutralised(text):
    r"""Markdown that loads nothing when viewed: every ``<`` is written as ``&lt;`` (no HTML:
    no ``<img>``, ``<iframe>``, ``<link>``, ``<style>``, ``srcset`` or ``url(...)``), and every
    image ``![alt](url)`` / ``![alt][ref]`` as the literal text ``!\[alt](url)``.  A remote image
    in a pen-and-paper answer would otherwise tell its student when, and from where, the
    instructor read it.

    >>> print(neutralised('![x](http://e.example/t.png) <img src="http://e.example/p">'))
    !\[x](http://e.example/t.png) &lt;img src="http://e.example/p">
    """
    return _IMAGE.sub(r"!\\[", text.replace("<", "&lt;"))


def spool_answers(sub, answers):
    """Write a submission's pen-and-paper answers next to its spooled cells; returns the path
    (``None`` when there are none)."""
    if not answers:
        return None
    path = sub.spooled.with_suffix(".hand.json")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(json.dumps(answers, ensure_ascii=False).encode("utf-8", "backslashreplace"))
    return path


def spooled_answer(where, gid):
    if where is None:
        return None
    if isinstance(where, dict):
        return where.get(gid)
    return json.loads(pathlib.Path(where).read_bytes()).get(gid)


def _by_hand_section(student, chapter, e, text):
    points = f"{e.points:g} point" + ("" if e.points == 1 else "s")
    lines = [f"## {shown(student)}, {chapter}, {e.label} ({points})", ""]
    if text is None or not text.strip() or text.strip() == "YOUR ANSWER HERE":
        lines += ["(no answer)", ""]
    else:
        text = shown(neutralised(text[:BY_HAND_CHARS]), keep="\n\t")
        lines += ["> " + line for line in text.split("\n")] + [""]
    return "\n".join(lines) + "\n"


def by_hand_chunks(items):
    """by_hand.md, one section at a time (``items``: ``(student, chapter, exercise, answers)``,
    the answers a dict or the path of :func:`spool_answers`), so the whole class's answers are
    never in memory at once."""
    yield "# Answers to grade by hand\n\n"
    if not items:
        yield "(none)\n"
    for student, chapter, e, where in items:
        yield _by_hand_section(student, chapter, e, spooled_answer(where, e.answer_id))


_NUMBER = re.compile(r"(?<![\w'])[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?")


def miss_reason(error):
    """A miss's reason with its numbers made ``#``, so that misses of one kind count together.

    >>> miss_reason("check: the check cell ran, but check_values['p0'] differs (relative difference 2.0e-01)")
    "check: the check cell ran, but check_values['p0'] differs (relative difference #)"
    """
    return _NUMBER.sub("#", error)[:200]


def exercise_stats(rows, top=3):
    """Per auto-graded exercise: the notebooks graded, how many earned full marks (the pass
    rate), the mean points, and the ``top`` most common reasons for a miss with their counts."""
    by_ex = {}
    for r in rows:
        if r.points is not None and r.exercise:
            by_ex.setdefault((r.chapter, r.exercise), []).append(r)
    out = []
    for (chapter, label), mine in sorted(by_ex.items()):
        full = sum(1 for r in mine if r.points == r.max_points)
        reasons = {}
        for r in mine:
            if r.points != r.max_points:
                why = miss_reason(r.error or "no points")
                reasons[why] = reasons.get(why, 0) + 1
        out.append(
            {
                "chapter": chapter,
                "exercise": label,
                "max_points": mine[0].max_points,
                "notebooks": len(mine),
                "full_marks": full,
                "pass_rate": full / len(mine),
                "mean_points": sum(r.points for r in mine) / len(mine),
                "misses": sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))[:top],
            }
        )
    return out


EXERCISE_FIELDS = ["chapter", "exercise", "max_points", "notebooks", "full_marks", "pass_rate", "mean_points", "common_misses"]


def exercises_csv(stats):
    """exercises.csv: the instructor's per-exercise pass rates (:func:`exercise_stats`)."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, EXERCISE_FIELDS, lineterminator="\n")
    w.writeheader()
    for st in stats:
        misses = "; ".join(f"{n} x {why}" for why, n in st["misses"])
        w.writerow(
            {
                "chapter": csv_text(st["chapter"]),
                "exercise": csv_text(st["exercise"]),
                "max_points": f"{st['max_points']:g}",
                "notebooks": st["notebooks"],
                "full_marks": st["full_marks"],
                "pass_rate": f"{st['pass_rate']:.3f}",
                "mean_points": f"{st['mean_points']:.3f}",
                "common_misses": csv_text(misses)[:FIELD_CHARS],
            }
        )
    return buf.getvalue()


def summary(rows, n_notebooks, sandbox_text, tampered=(), changed=(), timing=None, broken=None, flags=None):
    auto = [r for r in rows if r.points is not None]
    students = sorted({r.student for r in rows if r.student})
    lines = [f"graded {n_notebooks} notebooks of {len(students)} students"]
    if sandbox_text.startswith("NO SANDBOX"):
        lines.append(f"WARNING: {UNSAFE_WARNING}")
    lines.append(f"isolation: {sandbox_text}")
    if timing and timing["notebooks"]:
        lines.append(
            f"time: {timing['setup']:.0f} s to set up (sandbox check, instructor notebooks), "
            f"{timing['students']:.0f} s for the submissions, {timing['jobs']} at a time: "
            f"{timing['students'] / timing['notebooks']:.1f} s per notebook"
        )
    for t in tampered:
        lines.append(f"WARNING: {t} changed during grading; re-grade from a clean copy")
    for name, why in (broken or {}).items():
        lines.append(f"WARNING: chapter {name} was not graded, its notebook cannot grade: {why[:2000]}")
    if flags:
        lines.append("WARNING: student folder names to check (they may be mistaken for another):")
        lines += [f"  {why}" for _, why in sorted(flags.items())]
    for s in students:
        mine = [r for r in auto if r.student == s]
        pts, mx = sum(r.points for r in mine), sum(r.max_points for r in mine)
        errs = sum(1 for r in mine if r.error)
        hand = sum(r.max_points for r in rows if r.student == s and r.points is None)
        extra = f", {hand:g} more to grade by hand" if hand else ""
        label = s if s == s.strip() else repr(s)  # a trailing space made two lines look alike
        lines.append(f"  {label:<20} {pts:g} / {mx:g} points{extra}, {errs} row(s) with errors")
    stats = exercise_stats(rows)
    if stats:
        lines.append("per exercise (mean points / max, full marks; the most common reasons for a miss):")
        for st in stats:
            lines.append(
                f"  {st['chapter'] + ' ' + st['exercise']:<52} {st['mean_points']:.2f} / "
                f"{st['max_points']:g}, {st['full_marks']} of {st['notebooks']} ({st['pass_rate']:.0%})"
            )
            lines += [f"      {n} x {why}" for why, n in st["misses"]]
    flagged = [r for r in rows if r.notes and r.points is not None]
    if flagged:
        lines.append("cells deleted or modified by students, and other notes:")
        for r in flagged:
            lines.append(f"  {r.student} {r.chapter} {r.exercise}: {r.notes}")
    skipped = [r for r in rows if not r.exercise and r.error]
    if skipped:
        lines.append("files not graded:")
        for r in skipped:
            lines.append(f"  {r.student or '.'}/{r.chapter}: {r.error}")
    if changed:
        lines.append(
            "submissions that changed while they were graded: "
            + ", ".join(f"{s.student}/{s.name}" for s in changed)
        )
    return "\n".join(shown(line) for line in lines) + "\n"


def write_fresh(out_dir, files):
    """Write ``files`` ({name: text, or an iterable of texts}) into a new directory and move it
    to ``out_dir`` atomically.

    Nothing is written through a symbolic link: the files are created with O_EXCL | O_NOFOLLOW in
    a directory made here; an existing ``out_dir`` (a directory, a file or a link, which is not
    followed) is first renamed to ``<out_dir>.previous-<time>``.
    """
    out_dir = pathlib.Path(os.path.abspath(out_dir))
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    fresh = pathlib.Path(_mkdtemp(out_dir.parent, f".{out_dir.name}.new-{stamp}-"))
    dfd = open_dir(str(fresh))
    made = {}
    try:
        for name, text in files.items():
            *folders, base = name.split("/")  # feedback/<student>/<chapter>.html
            parent = dfd
            for k in range(len(folders)):
                key = tuple(folders[: k + 1])
                if key not in made:
                    os.mkdir(folders[k], 0o755, dir_fd=parent)
                    made[key] = open_dir(folders[k], parent)
                parent = made[key]
            fd = os.open(
                base, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=parent
            )
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
                for chunk in [text] if isinstance(text, str) else text:
                    fh.write(chunk)
                fh.flush()
                os.fsync(fh.fileno())
        os.fchmod(dfd, 0o755)
    finally:
        for fd in made.values():
            os.close(fd)
        os.close(dfd)
    if os.path.lexists(out_dir):
        previous = out_dir.with_name(f"{out_dir.name}.previous-{stamp}")
        n = 1
        while os.path.lexists(previous):
            previous = out_dir.with_name(f"{out_dir.name}.previous-{stamp}-{n}")
            n += 1
        os.rename(out_dir, previous)  # renames a link itself, never its target
    os.rename(fresh, out_dir)


def _mkdtemp(parent, prefix):
    return tempfile.mkdtemp(prefix=prefix, dir=parent)
