"""`make student`: write the student edition of every chapter in _toc.yml to _build/student/.

    python book/_ext/tools/student.py [OUT_DIR] [--root DIR] [--toc _toc.yml]
"""

import argparse
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
sys.modules.setdefault("rfc3987_syntax", None)  # see coursework/runner.py: saves ~5 s at import

from coursework import book, student  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", nargs="?", default=str(book.ROOT / "_build" / "student"))
    ap.add_argument("--root", default=str(book.ROOT))
    ap.add_argument("--toc", default="_toc.yml")
    args = ap.parse_args(argv)
    written = student.build(args.out, args.root, args.toc)
    for p in written:
        print(f"student edition: {p}")
    if not written:
        print("no chapter notebooks found in the toc", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
