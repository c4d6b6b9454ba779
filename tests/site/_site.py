"""Paths and page lists shared by the site tests (see conftest.py)."""

import os
import pathlib

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
