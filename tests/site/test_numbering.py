"""One numbering everywhere: the numbers the website shows for equations and exercises are the
ones coursework.xref computes from the sources, which the student edition (JupyterLab,
tests/site/test_jupyterlab.py) and the PDF (tests/site/test_pdf.py) are checked against.

Reads the built HTML (after the book build, like the other site tests).
"""

import html
import re

import pytest

from _site import NOTEBOOK_PAGES, ROOT
from coursework import xref

EQNO_RE = re.compile(r'id="equation-([^"]+)"[^>]*>\s*<span class="eqno">\(([^)<]+)\)')
EXERCISE_RE = re.compile(r'<div class="exercise[^"]*" id="([^"]+)"[^>]*>\s*<p class="admonition-title">'
                         r'\s*<span class="caption-number">Exercise ([0-9.]+)\s*</span>')


@pytest.fixture(scope="module")
def index():
    return xref.book_index(ROOT)


@pytest.mark.parametrize("doc", NOTEBOOK_PAGES)
def test_website_numbers_equal_the_books_index(html_dir, index, doc):
    page = html.unescape((html_dir / f"{doc}.html").read_text(encoding="utf-8"))
    stem = doc.split("/")[-1]
    # the HTML ids are the labels in lower case
    want_eq = {label.lower(): t.number for label, t in index.targets.items() if t.doc == stem and t.kind == "equation"}
    want_ex = {label.lower(): t.number for label, t in index.targets.items() if t.doc == stem and t.kind == "exercise"}
    shown_eq = dict(EQNO_RE.findall(page))
    shown_ex = dict(EXERCISE_RE.findall(page))
    assert shown_eq == want_eq, f"{doc}: equations on the website {shown_eq}, from the sources {want_eq}"
    assert shown_ex == want_ex, f"{doc}: exercises on the website {shown_ex}, from the sources {want_ex}"
