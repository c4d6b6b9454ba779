"""Paths and page lists shared by the site tests (see conftest.py)."""

import os
import pathlib
import re

import yaml

from coursework import book

ROOT = pathlib.Path(__file__).resolve().parents[2]

HTML = pathlib.Path(os.environ.get("BOOK_HTML", ROOT / "_build" / "html")).resolve()
TOC = pathlib.Path(os.environ.get("BOOK_TOC", ROOT / "_toc.yml")).resolve()
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
REQUIRED = os.environ.get("BOOK_SITE_REQUIRED") == "1"
# whole-page screenshots (slow on long pages: seconds each); `make screenshots` sets it
FULL_PAGE = os.environ.get("BOOK_SCREENSHOTS") == "full"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def toc_docnames():
    return list(book.toc_files(yaml.safe_load(TOC.read_text())))


def is_notebook(docname):
    return (ROOT / f"{docname}.ipynb").exists()


PAGES = toc_docnames()
NOTEBOOK_PAGES = [d for d in PAGES if is_notebook(d)]


# --------------------------------------------------------------- pandas tables in the outputs

#: the width of a code or output block of the website and the PDF, in characters
CODE_COLUMN_CHARS = 88
#: pandas' footer of a long DataFrame ("[60 rows x 3 columns]")
_DF_FOOTER = re.compile(r"^\[\d+ rows x \d+ columns\]$")


def dataframe_blocks(text):
    """The column blocks of a DataFrame's text repr: pandas prints a frame wider than its
    ``display.width`` as several blocks separated by a blank line, each with the row labels
    again (and a backslash ending the header of every block but the last)."""
    lines = [line for line in text.rstrip("\n").split("\n") if not _DF_FOOTER.match(line.strip())]
    blocks = [b.split("\n") for b in "\n".join(lines).strip("\n").split("\n\n")]
    return [b for b in blocks if any(line.strip() for line in b)]


def unsplit_width(blocks):
    """The width in characters of the repr in one block: the first block's, plus each further
    block without its row labels (the common beginning of its rows and the first block's,
    trailing spaces dropped; at most the blank start of the block's header).

    >>> unsplit_width(dataframe_blocks("   a  \\\\\\nx  1   \\ny  2   \\n\\n   b\\nx  3\\ny  4"))
    7
    """
    first = blocks[0]
    width = max(len(line.rstrip(" \\")) for line in first)
    for block in blocks[1:]:
        labels = max((len(os.path.commonprefix([a, b]).rstrip()) for a, b in zip(first[1:], block[1:])), default=0)
        labels = min(labels, len(block[0]) - len(block[0].lstrip()))
        width += max(len(line.rstrip(" \\")) for line in block) - labels
    return width


def printed_dataframes(notebook):
    """``(cell index, blocks, width in one block)`` of every DataFrame of an executed notebook
    (dict), in one column block or several; a DataFrame is an output with an HTML table
    beside its text."""
    out = []
    for i, cell in enumerate(notebook["cells"]):
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            html = data.get("text/html", "")
            if "<table" not in ("".join(html) if isinstance(html, list) else html):
                continue
            text = data.get("text/plain", "")
            blocks = dataframe_blocks("".join(text) if isinstance(text, list) else text)
            if not blocks:
                continue
            if len(blocks) > 1:
                width = unsplit_width(blocks)
            else:
                width = max(len(line.rstrip()) for line in blocks[0])
            out.append((i, blocks, width))
    return out


def dataframe_split_report(notebooks):
    """From ``{doc: executed notebook}``: the DataFrames printed in column blocks although
    they fit the code column in one, and those wider than the code column (printed in
    column blocks, or in one block too wide for it when pandas cannot split them); both
    are failures of the tests that call this."""
    split, too_wide = [], []
    for doc, nb in notebooks.items():
        for i, blocks, width in printed_dataframes(nb):
            entry = (doc.split("/")[-1], i, len(blocks), width)
            if width > CODE_COLUMN_CHARS:
                too_wide.append(entry)
            elif len(blocks) > 1:
                split.append(entry)
    return split, too_wide
