"""`make grade SUBMISSIONS=<folder>`: autograde submitted notebooks.

Layout: <folder>/<student>/<chapter>.ipynb (a student's copy of the student edition, named like
the chapter, e.g. submissions/ada/05_laplace.ipynb). Writes <out>/grades.csv (student, chapter,
exercise, points, max_points, error, notes) and <out>/summary.txt (default out: _build/grades).
See book/_ext/tools/coursework/grade.py for how cells are restored and scored.
"""

import argparse
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from coursework import book, grade  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("submissions")
    ap.add_argument("--out", default=str(book.ROOT / "_build" / "grades"))
    ap.add_argument("--root", default=str(book.ROOT), help="book root holding the toc and the instructor notebooks")
    ap.add_argument("--toc", default="_toc.yml")
    ap.add_argument("--cell-timeout", type=float, default=120.0, help="seconds per cell (default 120)")
    ap.add_argument("--notebook-timeout", type=float, default=600.0, help="seconds per notebook (default 600)")
    ap.add_argument("--max-output-bytes", type=int, default=200_000, help="output kept per cell")
    ap.add_argument("--jobs", type=int, default=None, help="notebooks graded at once")
    args = ap.parse_args(argv)
    if not pathlib.Path(args.submissions).is_dir():
        ap.error(f"not a folder: {args.submissions}")
    rows, text = grade.grade_folder(args.submissions, args.out, args.root, args.toc, args.cell_timeout,
                                    args.notebook_timeout, args.max_output_bytes, args.jobs)
    sys.stdout.write(text)
    print(f"wrote {pathlib.Path(args.out) / 'grades.csv'} ({len(rows)} rows)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
