"""Print the notebooks listed in _toc.yml, one path per line (used by `make test`)."""

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from coursework.book import ROOT, toc_files, toc_notebooks  # noqa: E402,F401  (re-exported)

if __name__ == "__main__":
    sys.stdout.write("".join(f"{p.relative_to(ROOT)}\n" for p in toc_notebooks()))
