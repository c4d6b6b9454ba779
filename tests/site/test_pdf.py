"""The whole-book PDF of `make pdf` (run by `make pdf-test`, which .ci/run calls after
`make test`): every chapter, every figure and every numbered equation of the book is in it, and
the website's download menu serves the same file.

BOOK_PDF points at the PDF (default _build/latex/book.pdf); BOOK_PDF_REQUIRED=1 (set by
`make pdf-test`) fails instead of skipping when it is missing.  Needs poppler-utils (pdfinfo,
pdftotext, pdfimages), which .ci/run installs with TeX Live.
"""

import functools
import html
import json
import os
import pathlib
import re
import shutil
import subprocess

import pytest
import yaml

from _site import CODE_COLUMN_CHARS, HTML, NOTEBOOK_PAGES, PAGES, ROOT, TOC, book, dataframe_split_report

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


# ------------------------------------------------------------------ how the pages look (issue 16)

#: overfull boxes up to this width are invisible in print; wider ones are counted and must be none
OVERFULL_PT = 10.0
#: at most this many nearly empty pages (besides the last page of a chapter and part pages)
MAX_NEARLY_EMPTY = 5


@pytest.fixture(scope="module")
def pages(pdf):
    """The text of every page (pdftotext -layout), in order."""
    run = subprocess.run([_tool("pdftotext"), "-layout", "-enc", "UTF-8", str(pdf), "-"],
                         capture_output=True, text=True, check=True)
    out = run.stdout.split("\f")
    return out[:-1] if out and not out[-1].strip() else out


def _first_line(page):
    return next((line.strip() for line in page.splitlines() if line.strip()), "")


def _starts_chapter_or_part(page):
    """A page that opens a chapter (fncychap prints "CHAPTER" or, in the appendix, "APPENDIX"
    and the number) or a part."""
    lines = [line.strip() for line in page.splitlines() if line.strip()]
    return bool(lines) and (lines[0].startswith(("CHAPTER", "APPENDIX")) or re.match(r"^Part [IVXLC]+$", lines[0])
                            or any(re.match(r"^Part [IVXLC]+$", line) for line in lines[:2]))


def test_no_overfull_box_wider_than_10pt(pdf):
    """Every overfull box of the last LaTeX run: none may stick out more than 10 pt (a table
    off the page, an equation into the margin, code that does not wrap)."""
    log = PDF.with_suffix(".log")
    assert log.exists(), f"no LaTeX log {log}"
    found = [(float(m.group(2)), m.group(1), m.group(3)) for m in re.finditer(
        r"^Overfull \\([hv]box) \((\d+(?:\.\d+)?)pt too (?:wide|high)\) (.*)$",
        log.read_text(errors="replace"), re.M)]
    wide = sorted((f for f in found if f[0] > OVERFULL_PT), reverse=True)
    print(f"overfull boxes: {len(found)}, wider than {OVERFULL_PT:g} pt: {len(wide)}")
    assert not wide, f"{len(wide)} overfull boxes wider than {OVERFULL_PT:g} pt (of {len(found)}): {wide[:8]}"


def _word_boxes(pdf):
    """``[(page_width, [(xmin, xmax, word)])]`` per page, from pdftotext -bbox."""
    run = subprocess.run([_tool("pdftotext"), "-bbox", str(pdf), "-"], capture_output=True, text=True, check=True)
    out = []
    for page in re.finditer(r'<page width="([\d.]+)" height="[\d.]+">(.*?)</page>', run.stdout, re.S):
        words = [(float(m.group(1)), float(m.group(2)), m.group(3)) for m in re.finditer(
            r'<word xMin="([\d.]+)" yMin="[\d.]+" xMax="([\d.]+)" yMax="[\d.]+">([^<]*)</word>', page.group(2))]
        out.append((float(page.group(1)), words))
    return out


def test_tables_and_text_stay_within_the_page(pdf):
    """No word of any page (tables included) runs into the outer half inch of the paper: the
    instructors' points table and the notation tables wrap their columns instead."""
    margin = 36.0
    outside = []
    for number, (width, words) in enumerate(_word_boxes(pdf), 1):
        outside += [(number, w) for x0, x1, w in words if x1 > width - margin or x0 < margin]
    assert not outside, f"{len(outside)} words in the outer half inch of the page: {outside[:10]}"


def _ink_fraction(pgm):
    """The fraction of pixel rows with ink between the running head and the foot of a page
    (a binary PGM from pdftoppm -gray)."""
    data = pgm.read_bytes()
    head = re.match(rb"P5\s+(\d+)\s+(\d+)\s+(\d+)\s", data)
    w, h = int(head.group(1)), int(head.group(2))
    pixels = data[head.end():]
    top, bottom = int(0.1 * h), int(0.9 * h)
    inked = sum(1 for y in range(top, bottom) if min(pixels[y * w:(y + 1) * w]) < 240)
    return inked / max(1, bottom - top)


def test_few_nearly_empty_pages(pdf, pages, tmp_path):
    """Pages that are nearly empty (ink on less than a fifth of the height between head and
    foot) from the first chapter on, other than the last page of a chapter or a part page:
    floats stay in the text (figure_align H) and chapters start on the next page (openany).
    (At 20 dpi a page of text has ink on 0.5-0.95 of its rows, an empty one on 0-0.15.)"""
    subprocess.run([_tool("pdftoppm"), "-r", "20", "-gray", str(pdf), str(tmp_path / "p")], check=True)
    images = sorted(tmp_path.glob("p-*.pgm"), key=lambda p: int(p.stem.split("-")[-1]))
    assert len(images) == len(pages), f"{len(images)} page images, {len(pages)} pages of text"
    first = next(i for i, p in enumerate(pages) if _first_line(p).startswith("CHAPTER"))
    empty = []
    for i, image in enumerate(images):
        if i < first or i == len(images) - 1 or _starts_chapter_or_part(pages[i]) \
                or _starts_chapter_or_part(pages[i + 1]):
            continue
        fraction = _ink_fraction(image)
        if fraction < 0.2:
            empty.append((i + 1, round(fraction, 2), _first_line(pages[i])[:40]))
    print(f"nearly empty pages: {len(empty)} of {len(pages)}: {empty}")
    assert len(empty) <= MAX_NEARLY_EMPTY, f"{len(empty)} nearly empty pages (at most {MAX_NEARLY_EMPTY}): {empty}"


def test_part_pages_say_part_once(text):
    flat = _normal(text)
    toc = yaml.safe_load(TOC.read_text())
    for part in toc.get("parts", []):
        caption = part.get("caption", "")
        m = re.match(r"^(Part [IVXLC]+)\s*:\s*(.*)$", caption)
        if m:
            assert _normal(caption) not in flat, f"the part page repeats its number: {caption!r}"
            assert _normal(m.group(2)) in flat, f"part title {m.group(2)!r} missing from the PDF"


def test_solution_titles(text):
    flat = re.sub(r"\s+", " ", text)
    assert "Solution toExercise" not in flat
    solutions = sum(len(re.findall(r"^(`{3,}|:{3,})\{solution\}", book.source(c), re.M))
                    for doc in NOTEBOOK_PAGES for c in book.read(ROOT / f"{doc}.ipynb").cells
                    if c.cell_type == "markdown")
    found = len(re.findall(r"Solution to Exercise \d+\.\d+\b", flat))
    assert found == solutions, f"{solutions} solutions in the chapters, {found} 'Solution to Exercise N.M' in the PDF"


def test_one_bibliography(pages):
    heads = [i + 1 for i, p in enumerate(pages) if _starts_chapter_or_part(p)
             and re.search(r"^\s*BIBLIOGRAPHY\s*$", "\n".join(p.splitlines()[:12]), re.M)]
    assert len(heads) == 1, f"the bibliography starts {len(heads)} times (pages {heads})"


def test_text_and_math_fonts_match(pdf):
    """The body text and the mathematics are set in one family (TeX Gyre Pagella and its
    Math companion), not FreeSerif text with Latin Modern mathematics."""
    listing = subprocess.run([_tool("pdffonts"), str(pdf)], capture_output=True, text=True, check=True).stdout
    names = {line.split()[0].split("+", 1)[-1] for line in listing.splitlines()[2:] if line.strip()}
    math = {n for n in names if "Math" in n}
    assert math, f"no math font in the PDF: {sorted(names)}"
    for m in math:
        family = m.split("Math")[0].rstrip("-")
        assert any(n.startswith(family) and "Math" not in n for n in names), \
            f"math font {m} has no text font of its family among {sorted(names)}"
    assert not any(n.startswith(("LatinModernMath", "FreeSerif")) for n in names), sorted(names)


def test_figures_at_300_ppi(pdf):
    listing = subprocess.run([_tool("pdfimages"), "-list", str(pdf)], capture_output=True, text=True, check=True).stdout
    rows = [line.split() for line in listing.splitlines()[2:] if re.match(r"\s*\d+\s+\d+\s+image\b", line)]
    low = [(int(r[0]), int(r[12]), int(r[13])) for r in rows if min(int(r[12]), int(r[13])) < 300]
    assert rows, "no images in the PDF"
    assert not low, f"{len(low)} of {len(rows)} images below 300 ppi (page, x-ppi, y-ppi): {low[:10]}"


def test_no_dead_link_inside_the_pdf(pdf, tmp_path):
    """Every internal link of the PDF has its destination: hyperref names the references it
    cannot resolve in the LaTeX log, and the PDF driver (xdvipdfmx, run again on the .xdv of the
    build) the link targets it cannot find ("Object @... used, but not defined")."""
    log = PDF.with_suffix(".log").read_text(errors="replace").replace("\n", "")
    dead = sorted(set(re.findall(r"(?:Hyper r|R)eference `([^']+)' on page \d+ undefined", log)))
    xdv = PDF.with_suffix(".xdv")
    if xdv.exists() and shutil.which("xdvipdfmx"):
        run = subprocess.run(["xdvipdfmx", "-o", str(tmp_path / "check.pdf"), xdv.name], cwd=PDF.parent,
                             capture_output=True, text=True, timeout=600)
        dead += sorted(set(re.findall(r"Object @(\S+) used, but not defined", run.stdout + run.stderr)))
    assert not dead, f"{len(dead)} links without destination: {dead[:10]}"


def test_numbering_equals_the_website(pdf, text):
    """Exercise 5.1 of the website is Exercise 5.1 in the PDF (not 5.10.1), and the LaTeX numbers
    each chapter's labelled equations in the order the website does (coursework.xref)."""
    from coursework import xref

    index = xref.book_index(ROOT)
    flat = re.sub(r"\s+", " ", text)
    assert not re.search(r"Exercise \d+\.\d+\.\d+", flat), re.search(r"Exercise \d+\.\d+\.\d+", flat).group(0)
    missing = [(label, t.number) for label, t in index.targets.items()
               if t.kind == "exercise" and not re.search(rf"Exercise {re.escape(t.number)}\b", flat)]
    assert not missing, f"exercises without their website number in the PDF: {missing[:10]}"
    tex = (PDF.parent / "book.tex").read_text(encoding="utf-8")
    for doc in NOTEBOOK_PAGES:
        stem = doc.split("/")[-1]
        in_tex = re.findall(rf"\\label\{{equation:{re.escape(doc)}:([^}}]+)\}}", tex)
        want = [label for label, t in sorted(((k, t) for k, t in index.targets.items()
                                             if t.doc == stem and t.kind == "equation"),
                                            key=lambda kt: [int(x) for x in kt[1].number.split(".")])]
        assert in_tex == want, f"{doc}: the LaTeX numbers the equations {in_tex[:5]}..., the website {want[:5]}..."


# ------------------------------------------------------------------ code and output (issue 16)

#: the longest code or output line the book allows (tests/test_book.py, the site test)
CODE_CHARS = 88
#: Sphinx begins the continuation of a wrapped code or output line with this mark
CONTINUATION = "\u21aa"


def _executed(doc):
    executed = HTML.parent / "jupyter_execute"
    if not (executed / f"{doc}.ipynb").exists():
        executed = PDF.parent.parent / "jupyter_execute"
    path = executed / f"{doc}.ipynb"
    assert path.exists(), f"no executed notebook {path} (the PDF build writes it)"
    return json.loads(path.read_text())


@functools.lru_cache(maxsize=None)
def _label_numbers():
    from coursework import xref

    return xref.book_index(book.ROOT).targets


def _printed_lines(doc):
    """The code and text-output lines of an executed chapter that the PDF prints: code of cells
    without hide-input / remove-input / remove-cell (answer cells are printed, LatexAnswerCode
    of book/_ext/coursework_book.py), outputs of cells without remove-output / hide-output;
    with labels written as numbers, as book/_ext/code_labels.py prints them."""
    from coursework import xref

    return [xref.number_code_labels(line, _label_numbers()) for line in _printed_cell_lines(doc)]


def _printed_cell_lines(doc):
    lines = []
    for cell in _executed(doc)["cells"]:
        if cell["cell_type"] != "code":
            continue
        tags = set(cell.get("metadata", {}).get("tags", []))
        answer = cell.get("metadata", {}).get("nbgrader", {}).get("solution", False)
        if "remove-cell" in tags or "hide-cell" in tags:
            continue
        if not ({"remove-input", "hide-input"} & tags) or ("hide-input" in tags and answer):
            lines += "".join(cell["source"]).splitlines()
        if not {"remove-output", "hide-output"} & tags:
            for out in cell.get("outputs", []):
                data = out.get("data", {})
                if out.get("output_type") == "stream":
                    lines += "".join(out["text"]).splitlines()
                elif "text/plain" in data and not {"image/png", "text/latex"} & set(data):
                    lines += "".join(data["text/plain"]).splitlines()
    return lines


def test_code_and_output_lines_do_not_wrap(pdf, text, pages):
    """Code and output lines of up to 88 characters fit the code frame (DejaVu Sans Mono at
    4.65 pt a character, bookprint.sty): no line of a code or output block is wrapped, neither
    by Sphinx's continuation mark nor found broken in the PDF's text."""
    wrapped = text.count(CONTINUATION)
    # every long printed line (70-88 characters) is on one line of the PDF's text
    flat_lines = {re.sub(r"\s+", " ", line).strip() for page in pages for line in page.splitlines()}
    flat_text = "\n".join(flat_lines)
    long_lines, broken = 0, []
    for doc in NOTEBOOK_PAGES:
        for line in _printed_lines(doc):
            line = re.sub(r"\s+", " ", line).strip()
            if not 70 <= len(line) <= CODE_CHARS or not line.isascii():
                continue
            long_lines += 1
            if line not in flat_text:
                broken.append((doc.split("/")[-1], line))
    print(f"continuation marks: {wrapped}; long lines (70-{CODE_CHARS} chars): {long_lines}, "
          f"not on one line of the PDF: {len(broken)}")
    assert long_lines > 50, f"only {long_lines} printed lines of 70-{CODE_CHARS} characters found"
    assert wrapped == 0 and not broken, (
        f"{wrapped} wrapped code/output lines ({CONTINUATION}); {len(broken)} lines of 70-{CODE_CHARS} "
        f"characters broken in the PDF: {broken[:6]}")


def _table_line_ranges(tex_lines):
    ranges, start = [], None
    for i, line in enumerate(tex_lines, 1):
        if re.match(r"\\begin\{(longtable|tabular|tabulary)\}", line):
            start = i
        elif re.match(r"\\end\{(longtable|tabular|tabulary)\}", line) and start:
            ranges.append((start, i))
            start = None
    return ranges


def test_table_cells_are_ragged_right(pdf):
    """Table cells are set ragged right (bookprint.sty): justified, the narrow columns of the
    instructors' and notation tables stretched their lines into wide gaps, which LaTeX reports
    as underfull lines.  None may be left in a table."""
    tex = (PDF.parent / "book.tex").read_text(encoding="utf-8").splitlines()
    ranges = _table_line_ranges(tex)
    log = PDF.with_suffix(".log").read_text(errors="replace")
    underfull = [(int(a), int(bad)) for bad, a in re.findall(
        r"Underfull \\hbox \(badness (\d+)\) in (?:paragraph|alignment) at lines (\d+)--\d+", log)]
    in_tables = [(line, bad) for line, bad in underfull if any(s <= line <= e for s, e in ranges)]
    print(f"tables: {len(ranges)}; underfull lines: {len(underfull)}, in tables: {len(in_tables)}")
    assert len(ranges) >= 5, f"only {len(ranges)} tables in book.tex"
    assert not in_tables, f"{len(in_tables)} underfull (stretched) lines in table cells (book.tex line, badness): {in_tables[:10]}"


def test_appendix_part_page(pages):
    """The appendix has one part page that reads "Appendix" (the part pages of Parts I-IV read
    "Part I" and the title), not "Part V / Appendix"; its chapters are lettered."""
    heads = [[line.strip() for line in p.splitlines() if line.strip()][:2] for p in pages]
    numbered = [h for h in heads if h and re.match(r"^Part [IVXLC]+$", h[0])]
    assert len(numbered) >= 4, f"only {len(numbered)} numbered part pages"
    assert all(len(h) > 1 and h[1] != "Appendix" for h in numbered), \
        f"the appendix is a numbered part: {[h for h in numbered if h[1:] == ['Appendix']]}"
    appendix = [i for i, h in enumerate(heads) if h[:1] == ["Appendix"]]
    assert len(appendix) == 1, f"{len(appendix)} pages that start with 'Appendix' (want the part page once)"
    following = heads[appendix[0] + 1]
    assert following[:2] == ["APPENDIX", "A"], f"the page after the appendix part page starts {following}"


def _answer_cells(doc):
    """(first code line, hide-input) of the answer cells (nbgrader solution) of a chapter."""
    cells = []
    for cell in book.read(ROOT / f"{doc}.ipynb").cells:
        meta = cell.get("metadata", {})
        if cell.cell_type == "code" and meta.get("nbgrader", {}).get("solution"):
            first = next((line.strip() for line in book.source(cell).splitlines()
                          if line.strip() and not line.strip().startswith("#")), "")
            from coursework import xref

            cells.append((xref.number_code_labels(first, _label_numbers()), "hide-input" in meta.get("tags", [])))
    return cells


def test_answer_code_is_printed(text, pages):
    """The website folds the answer code of the exercises (hide-input, "Show the answer
    code"); the PDF, which cannot unfold, prints it (solutions refer to "the code above",
    Solution 5.2(c)).  The checks stay folded away, and remove-cell cells (the marking guides)
    stay out."""
    flat = "\n".join(re.sub(r"\s+", " ", line).strip() for page in pages for line in page.splitlines())
    missing, answers = [], 0
    for doc in NOTEBOOK_PAGES:
        for first, hidden in _answer_cells(doc):
            if not hidden or not first:
                continue
            answers += 1
            if re.sub(r"\s+", " ", first) not in flat:
                missing.append((doc.split("/")[-1], first))
    print(f"answer cells with hide-input: {answers}, missing from the PDF: {len(missing)}")
    assert answers >= 10, f"only {answers} hidden answer cells in the chapters"
    assert not missing, f"{len(missing)} answer cells not printed in the PDF: {missing[:8]}"
    assert "Marking guide (" not in re.sub(r"\s+", " ", text), "a marking guide (remove-cell) is in the PDF"
    # the nbgrader lines are for the student edition (HideSolutionMarkers); the instructors'
    # page names them in its prose, so only a line of its own counts
    markers = {"### BEGIN SOLUTION", "### END SOLUTION", "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"}
    shown = sorted({line.strip() for page in pages for line in page.splitlines()} & markers)
    assert not shown, f"the PDF prints the nbgrader markers {shown}"


def test_dataframes_print_as_tables(pages):
    """A pandas DataFrame prints in the PDF as its plain-text table (the LaTeX build uses
    text/plain), one row to a line: every row of every table (at most 88 characters) is on
    one line of the PDF's text, none broken in two."""
    flat = "\n".join(re.sub(r"\s+", " ", line).strip() for page in pages for line in page.splitlines())
    rows, broken = 0, []
    for doc in NOTEBOOK_PAGES:
        for cell in _executed(doc)["cells"]:
            tags = set(cell.get("metadata", {}).get("tags", []))
            if cell["cell_type"] != "code" or {"remove-output", "hide-output", "remove-cell"} & tags:
                continue
            for out in cell.get("outputs", []):
                data = out.get("data", {})
                if "text/html" not in data or "<table" not in "".join(data["text/html"]):
                    continue
                for row in "".join(data.get("text/plain", "")).splitlines():
                    row = re.sub(r"\s+", " ", row).strip()
                    if len(row) < 12 or not row.isascii():
                        continue
                    rows += 1
                    if row not in flat:
                        broken.append((doc.split("/")[-1], row))
    print(f"table rows: {rows}, broken: {len(broken)}")
    assert rows >= 50, f"only {rows} rows of printed tables found"
    assert not broken, f"{len(broken)} rows of printed tables not on one line of the PDF: {broken[:6]}"


#: a code word a table may not break: LaTeX may break inline code after "_", "(", ".", "-", ","
CODE_BREAK_RE = re.compile(r"(?<=[_(.,\-])(?=.)")


def _table_code_words():
    """Every code word of the book's tables: the whitespace-separated parts of the inline
    literals (backquotes) in the rows of the pipe tables of every page (book/*.md and the
    chapters' markdown cells), and the grade ids of the instructors' points table, which
    book/_ext/coursework_book.py generates."""
    sources = []
    for doc in PAGES:
        md, nb = ROOT / f"{doc}.md", ROOT / f"{doc}.ipynb"
        if md.exists():
            sources.append(md.read_text(encoding="utf-8"))
        elif nb.exists():
            sources += [book.source(c) for c in book.read(nb).cells if c.cell_type == "markdown"]
    words = set()
    for text in sources:
        for row in re.findall(r"^\s*\|.*\|\s*$", text, re.M):
            for literal in re.findall(r"(?<![}`])`([^`]+)`", row):  # not a role's target
                words.update(literal.split())
    for doc in NOTEBOOK_PAGES:
        for e in book.chapter_summary(book.read(ROOT / f"{doc}.ipynb"))["exercises"]:
            words.update(i for i in (e.coding and e.check_id, e.by_hand and e.answer_id) if i)
    return sorted(w.rstrip(",") for w in words if CODE_BREAK_RE.search(w.rstrip(",")))


def test_table_code_words_are_not_broken(pdf):
    """No code word of a table (``log_marginal_likelihood``, ``add_intercept(X)``, a grade id)
    is broken over two lines of its cell: book/_ext/coursework_book.py (column_shares) makes
    a column at least as wide as its longest code word, and bookprint.sty makes a break
    after an underscore cost more than one at a space.  A broken word shows in the PDF's
    words (pdftotext -bbox) as a prefix ending at a break point, with the rest of the word
    starting the next line at or left of it, in the same column."""
    words = _table_code_words()
    pieces = {}  # prefix -> [(word, rest)]
    for w in words:
        for cut in (m.start() for m in CODE_BREAK_RE.finditer(w) if re.search(r"\w", w[:m.start()])):
            pieces.setdefault(w[:cut], []).append((w, w[cut:]))
    broken, whole = [], set()
    all_words = set(words)
    for number, (_width, boxes) in enumerate(_word_boxes_y(pdf), 1):
        for i, (x0, y0, _x1, token) in enumerate(boxes):
            whole |= {token, token.rstrip(",;:"), token.rstrip(".,;:")} & all_words
            for word, rest in pieces.get(token, ()):
                for x0b, y0b, _x1b, tokenb in boxes[i + 1:i + 40]:
                    if 4 < y0b - y0 < 20 and x0 - 200 < x0b <= x0 + 1 and tokenb.startswith(rest):
                        broken.append((number, word, f"{token} / {tokenb}"))
                        break
    print(f"code words in tables: {len(words)}, found whole in the PDF: {len(whole)}, broken: {len(broken)}")
    assert len(words) >= 30, f"only {len(words)} code words found in the tables' sources"
    assert not broken, f"{len(broken)} code words of tables broken over two lines (page, word, pieces): {broken[:10]}"
    missing = sorted(set(words) - whole)
    assert not missing, f"{len(missing)} code words of tables not found whole in the PDF: {missing[:10]}"


def _word_boxes_y(pdf):
    """``[(page_width, [(xmin, ymin, xmax, word)])]`` per page, from pdftotext -bbox, in
    reading order."""
    run = subprocess.run([_tool("pdftotext"), "-bbox", str(pdf), "-"], capture_output=True, text=True, check=True)
    out = []
    for page in re.finditer(r'<page width="([\d.]+)" height="[\d.]+">(.*?)</page>', run.stdout, re.S):
        words = [(float(m.group(1)), float(m.group(2)), float(m.group(3)), html.unescape(m.group(4))) for m in re.finditer(
            r'<word xMin="([\d.]+)" yMin="([\d.]+)" xMax="([\d.]+)" yMax="[\d.]+">([^<]*)</word>', page.group(2))]
        out.append((float(page.group(1)), words))
    return out


def test_dataframes_print_in_one_block():
    """pandas prints a DataFrame wider than its ``display.width`` (80 by default) in column
    blocks, each repeating the row labels; the kernels of the build print up to the code
    frame's 88 characters (book/_ext/kernel_startup.py), so no table that fits 88 characters
    is split in the PDF, and no table may be wider than that (the chapters shorten,
    transpose or divide such a table)."""
    split, too_wide = dataframe_split_report({doc: _executed(doc) for doc in NOTEBOOK_PAGES})
    print(f"tables split although they fit {CODE_COLUMN_CHARS} characters: {len(split)}; "
          f"wider than {CODE_COLUMN_CHARS}: {len(too_wide)} {too_wide}")
    assert not split, f"{len(split)} DataFrames printed in column blocks although they fit in one (page, cell, blocks, width): {split}"
    assert not too_wide, f"{len(too_wide)} DataFrames wider than the {CODE_COLUMN_CHARS}-character code frame, printed in column blocks (page, cell, blocks, width): {too_wide}"
