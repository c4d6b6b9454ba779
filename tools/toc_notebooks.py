"""Print the notebooks listed in _toc.yml, one path per line (used by `make test`)."""

import pathlib
import sys

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[1]


def toc_files(toc):
    """Yield every `file:` entry of a jupyter-book table of contents, in order."""
    if isinstance(toc, dict):
        for key, value in toc.items():
            if key in ("file", "root"):
                yield value
            else:
                yield from toc_files(value)
    elif isinstance(toc, list):
        for item in toc:
            yield from toc_files(item)


def toc_notebooks(root=ROOT):
    toc = yaml.safe_load((root / "_toc.yml").read_text())
    return [root / f"{f}.ipynb" for f in toc_files(toc) if (root / f"{f}.ipynb").exists()]


if __name__ == "__main__":
    sys.stdout.write("".join(f"{p.relative_to(ROOT)}\n" for p in toc_notebooks()))
