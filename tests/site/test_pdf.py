"""The whole-book PDF of `make pdf` (run by `make pdf-test`, which .ci/run calls after
`make test`): every chapter, every figure and every numbered equation of the book is in it, and
the website's download menu serves the same file.

BOOK_PDF points at the PDF (default _build/latex/book.pdf); BOOK_PDF_REQUIRED=1 (set by
`make pdf-test`) fails instead of skipping when it is missing.  Needs poppler-utils (pdfinfo,
pdftotext, pdfimages), which .ci/run installs with TeX Live.
"""

import json
import os
import pathlib
import re
import shutil
import subprocess

import pytest
import yaml

from _site import HTML, NOTEBOOK_PAGES, ROOT, TOC, book

PDF = pathlib.Path(os.environ.get("BOOK_PDF", ROOT / "_build" / "latex" / "book.pdf")).resolve()
REQUIRED = os.environ.get("BOOK_PDF_REQUIRED") == "1"
SITE_PDF = HTML / "bayesian-logistic-regression.pdf"   # book/_ext/coursework_book.py, BOOK_PDF


def _tool(name):
    path = shutil.which(name)
    if not path:
        pytest.fail(f"{name} not found: apt-get install -y poppler-utils (as .ci/run does)")
    return path


@pytest.fixture(scope="module")
def pdf():
    if not PDF.exists():
        msg = f"no PDF at {PDF}: run `make pdf` first"
        if REQUIRED:
            pytest.fail(msg)
        pytest.skip(msg)
    return PDF


@pytest.fixture(scope="module")
def text(pdf):
    run = subprocess.run([_tool("pdftotext"), "-enc", "UTF-8", str(pdf), "-"], capture_output=True, text=True, check=True)
    return run.stdout


def _normal(s):
    return re.sub(r"\s+", " ", s).strip().lower()


def _chapter_numbers():
    """docname -> chapter number, as the website numbers them (numbered parts of the toc)."""
    toc = yaml.safe_load(TOC.read_text())
    numbers, n = {}, 0
    for part in toc.get("parts", []):
        for ch in part.get("chapters", []):
            if part.get("numbered"):
                n += 1
                numbers[ch["file"]] = n
    return numbers


def test_pdf_has_pages(pdf):
    info = subprocess.run([_tool("pdfinfo"), str(pdf)], capture_output=True, text=True, check=True).stdout
    pages = int(re.search(r"^Pages:\s+(\d+)", info, re.M).group(1))
    assert pages >= 20 * len(NOTEBOOK_PAGES) // 2, f"only {pages} pages for {len(NOTEBOOK_PAGES)} chapters"


@pytest.mark.parametrize("doc", NOTEBOOK_PAGES)
def test_every_chapter_is_in_the_pdf(text, doc):
    title = book.chapter_summary(book.read(ROOT / f"{doc}.ipynb"))["title"]
    words = [w for w in re.findall(r"[A-Za-z]{3,}", title)]
    flat = _normal(text)
    assert all(w.lower() in flat for w in words), f"{doc}: the chapter title {title!r} is not in the PDF"
    # the chapter's first section heading, numbered as on the website
    number = _chapter_numbers().get(doc)
    assert number and re.search(rf"(^|\n){number}\.1\s", text), f"{doc}: no section {number}.1 in the PDF"


def _latex_equations():
    """docname -> number of numbered (labelled) equations, from the LaTeX source of the PDF."""
    tex = (PDF.parent / "book.tex").read_text(encoding="utf-8")
    counts = {}
    for m in re.finditer(r"\\label\{equation:([^}]+?):[^}:]+\}", tex):
        counts[m.group(1)] = counts.get(m.group(1), 0) + 1
    return counts


@pytest.mark.parametrize("doc", NOTEBOOK_PAGES)
def test_every_numbered_equation_is_in_the_pdf(pdf, text, doc):
    number = _chapter_numbers()[doc]
    n_eq = _latex_equations().get(doc, 0)
    source = "\n".join(book.source(c) for c in book.read(ROOT / f"{doc}.ipynb").cells if c.cell_type == "markdown")
    labelled = len(re.findall(r"^\s*\$\$\s*\((eq-[^)]+)\)\s*$|^:label:\s*eq-", source, re.M))
    assert n_eq >= labelled, f"{doc}: {labelled} labelled equations in the notebook, {n_eq} in the LaTeX"
    missing = [f"({number}.{k})" for k in range(1, n_eq + 1) if f"({number}.{k})" not in text]
    assert not missing, f"{doc}: equation numbers missing from the PDF: {missing}"


def test_every_figure_is_in_the_pdf(pdf):
    executed = HTML.parent / "jupyter_execute"
    if not executed.exists():
        executed = PDF.parent.parent / "jupyter_execute"
    figures = 0
    for doc in NOTEBOOK_PAGES:
        path = executed / f"{doc}.ipynb"
        assert path.exists(), f"no executed notebook {path} (the PDF build writes it)"
        nb = json.loads(path.read_text())
        figures += sum(1 for c in nb["cells"] if c["cell_type"] == "code" for o in c.get("outputs", [])
                       if "image/png" in o.get("data", {}))
    listing = subprocess.run([_tool("pdfimages"), "-list", str(pdf)], capture_output=True, text=True, check=True).stdout
    images = sum(1 for line in listing.splitlines()[2:] if re.match(r"\s*\d+\s+\d+\s+image\b", line))
    assert figures > 0
    assert images >= figures, f"{figures} figures in the executed chapters, {images} images in the PDF"


def test_the_website_serves_this_pdf(pdf):
    if not (HTML / "index.html").exists():
        pytest.skip(f"no website at {HTML}")
    assert SITE_PDF.exists(), f"{SITE_PDF} missing: `make pdf` copies the PDF beside the website"
    assert SITE_PDF.read_bytes() == pdf.read_bytes(), "the website serves a different PDF than the one built"


def test_no_unresolved_references(pdf, text):
    """LaTeX prints "??" for a reference it cannot resolve (e.g. to an exercise of another page)."""
    log = PDF.with_suffix(".log")
    undefined = sorted(set(re.findall(r"Reference `([^']+)' on page", log.read_text(errors="replace")))) if log.exists() else []
    assert "??" not in text and not undefined, \
        f"{text.count('??')} unresolved references in the PDF; the last LaTeX run reports: {undefined[:10]}"
