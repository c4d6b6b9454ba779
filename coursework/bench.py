"""How long grading takes here (``make grade-bench``, ``python -m coursework.bench``).

Builds a class in a temporary folder: ``--copies`` students who each hand in every chosen
chapter with the instructor's answers, grades it exactly as ``make grade`` does (sandbox,
instructor runs, trusted comparison), checks that every student got full marks, and prints the
time per notebook and what a class of ``--students`` would take with all chapters of the book.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import sys
import tempfile

import nbformat

from . import book, grade, sandbox, student


def perfect_submission(path):
    """The student edition of ``path`` with the instructor's answers in the answer cells."""
    answers = {
        book.nbgrader_meta(c)["grade_id"]: book.source(c) for c in book.read(path).cells if book.is_answer(c)
    }
    nb = student.student_notebook(path)
    for cell in nb.cells:
        gid = book.nbgrader_meta(cell).get("grade_id")
        if gid in answers:
            cell.source = answers[gid]
    return nb


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", default=str(book.ROOT))
    ap.add_argument("--toc", default="_toc.yml")
    ap.add_argument("--chapters", nargs="*", help="chapter names (default: every chapter)")
    ap.add_argument("--copies", type=int, default=2, help="students in the class (default %(default)s)")
    ap.add_argument("--jobs", type=int, default=None, help="notebooks graded at once (default: the cores)")
    ap.add_argument("--students", type=int, default=200, help="class size to extrapolate to")
    ap.add_argument("--unsafe-no-sandbox", action="store_true", help="time the grader without the sandbox")
    args = ap.parse_args(argv)
    chapters = {p.stem: p for p in book.toc_notebooks(args.root, args.toc)}
    chosen = args.chapters or list(chapters)
    with tempfile.TemporaryDirectory(prefix="cw-bench-") as tmp:
        subs = pathlib.Path(tmp) / "submissions"
        for name in chosen:
            nb = perfect_submission(chapters[name])
            for k in range(args.copies):
                (subs / f"student{k:03d}").mkdir(parents=True, exist_ok=True)
                nbformat.write(nb, str(subs / f"student{k:03d}" / f"{name}.ipynb"))
        try:
            result = grade.grade_folder(
                subs,
                pathlib.Path(tmp) / "grades",
                grade.Options(
                    root=args.root,
                    toc=args.toc,
                    limits=sandbox.Limits(),
                    jobs=args.jobs,
                    unsafe=args.unsafe_no_sandbox,
                ),
            )
        except grade.GradingError as exc:
            print(f"grading stopped: {exc}", file=sys.stderr)
            return 2
    auto = [r for r in result.rows if r.points is not None and r.exercise]
    lost = [r for r in auto if r.points != r.max_points]
    t = result.timing
    per = t["students"] / t["notebooks"]
    total = per * args.students * len(chapters)
    print(
        f"{t['notebooks']} notebooks ({', '.join(chosen)}), {t['jobs']} at a time on "
        f"{os.cpu_count()} cores: {t['students']:.1f} s, {per:.2f} s per notebook "
        f"(plus {t['setup']:.1f} s once: sandbox check and the instructor's notebooks)"
    )
    print(
        f"a class of {args.students} with all {len(chapters)} chapters: about "
        f"{total / 60:.0f} minutes ({args.students * len(chapters)} notebooks)"
    )
    if lost:
        print(
            f"FAILED: {len(lost)} exercises lost points with the instructor's answers, e.g. "
            f"{lost[0].chapter} {lost[0].exercise}: {lost[0].error}",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
