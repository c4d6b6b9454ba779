"""Checks of the built HTML without a browser: accessibility (alt text or captions, heading
order), figures readable in the dark theme (opaque white background), the downloadable notebooks
are the executed ones, the search index finds chapter 5, the instructor page matches the
notebooks; and (issue 12) answers folded away with no output and a labelled toggle, check cells
folded under "Show the checks", no unlabelled toggle, sidebar titles without raw math, an
author-year bibliography that matches the citations, API docstrings' equation labels as links,
the notebook archive on the intro page and the whole-book PDF in every page's download menu
(issue 16: only where the site has it; the wheel and requirements file beside the archive).""" 

import functools
import io
import json
import pathlib
import re
import warnings
import zipfile

import nbformat
import pytest
from bs4 import BeautifulSoup

import _cells
from _site import CODE_COLUMN_CHARS, NOTEBOOK_PAGES, PAGES, ROOT, book, dataframe_split_report

NOTEBOOK_ARCHIVE = "bayesian-logistic-regression-notebooks.zip"   # book/_ext/coursework_book.py
BOOK_PDF = "bayesian-logistic-regression.pdf"
DEFAULT_TOGGLES = re.compile(r"^(Show|Hide) code cell (source|outputs|content)$")


@functools.lru_cache(maxsize=None)
def _parsed(path, mtime):
    return BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")


def _soup(html_dir, doc):
    """The parsed page (parsed once per test session; treat it as read-only)."""
    path = html_dir / f"{doc}.html"
    return _parsed(path, path.stat().st_mtime_ns)


def _article(soup):
    return soup.find("article", class_="bd-article") or soup.find("main") or soup


@pytest.mark.parametrize("doc", PAGES)
def test_images_have_alt_text_or_caption(html_dir, doc):
    missing = []
    for img in _article(_soup(html_dir, doc)).find_all("img"):
        fig = img.find_parent("figure")
        caption = fig.find("figcaption") if fig else None
        if not (img.get("alt") or "").strip() and not (caption and caption.get_text(strip=True)):
            missing.append(img.get("src"))
    assert not missing, f"{doc}: images without alt text or caption: {missing}"


@pytest.mark.parametrize("doc", NOTEBOOK_PAGES)
def test_figures_have_alt_text_and_caption(html_dir, doc):
    """The book's convention is stronger: every figure a chapter draws has both."""
    art = _article(_soup(html_dir, doc))
    imgs = [i for i in art.find_all("img") if "_images/" in (i.get("src") or "")]
    no_alt = [i.get("src") for i in imgs if not (i.get("alt") or "").strip()]
    no_caption = [i.get("src") for i in imgs if not (i.find_parent("figure") and i.find_parent("figure").find("figcaption"))]
    assert not no_alt, f"{doc}: figures without alt text: {no_alt}"
    assert not no_caption, f"{doc}: figures without caption: {no_caption}"


@pytest.mark.parametrize("doc", PAGES)
def test_headings_in_order(html_dir, doc):
    levels = [int(h.name[1]) for h in _article(_soup(html_dir, doc)).find_all(re.compile(r"^h[1-6]$"))]
    assert levels and levels[0] == 1 and levels.count(1) == 1, f"{doc}: heading levels {levels}"
    jumps = [(a, b) for a, b in zip(levels, levels[1:]) if b > a + 1]
    assert not jumps, f"{doc}: skipped heading levels {jumps} in {levels}"


def _chapter_images(html_dir, suffix=".png"):
    images = set()
    for doc in NOTEBOOK_PAGES:
        for img in _article(_soup(html_dir, doc)).find_all("img"):
            src = img.get("src") or ""
            if "_images/" in src and src.endswith(suffix):
                images.add((html_dir / doc).parent.joinpath(src).resolve())
    return sorted(images)


def test_figures_have_an_opaque_white_background(html_dir):
    """Readable in the dark theme: a transparent figure would show black text on a dark page.
    PNG: the four corners; SVG (the website's figures, issue 16): the figure's background patch,
    the first shape matplotlib draws, is opaque white and covers the whole drawing."""
    from PIL import Image

    pngs, svgs = _chapter_images(html_dir), _chapter_images(html_dir, ".svg")
    if not pngs and not svgs:
        pytest.skip("no figure in the built chapters")
    bad = []
    for path in pngs:
        im = Image.open(path)
        rgba = im.convert("RGBA")
        w, h = rgba.size
        corners = [rgba.getpixel((x, y)) for x in (0, w - 1) for y in (0, h - 1)]
        if any(c[3] < 255 or min(c[:3]) < 235 for c in corners):
            bad.append(f"{path.name}: corners {corners}")
    for path in svgs:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")          # an SVG read by the HTML parser: fine here
            soup = BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")
        svg = soup.find("svg")
        width, height = (float(x) for x in svg["viewbox"].split()[2:])
        patch = soup.select_one('g[id="patch_1"] path')
        style = (patch.get("style") or "") if patch else ""
        corners = re.findall(r"[-\d.]+", patch.get("d", "")) if patch else []
        xs, ys = [float(x) for x in corners[0::2]], [float(y) for y in corners[1::2]]
        if (not patch or not re.search(r"fill:\s*#ffffff", style) or "opacity" in style
                or not xs or min(xs) > 0.5 or max(xs) < width - 0.5 or min(ys) > 0.5 or max(ys) < height - 0.5):
            bad.append(f"{path.name}: background {style!r} over {corners[:8]}")
    assert not bad, "figures without an opaque white background:\n" + "\n".join(bad)


def test_figure_text_uses_fonts_a_browser_has(html_dir):
    """The website's SVG figures keep their text as text, so the reader's browser draws it. Where
    matplotlib's mathtext falls back to a TeX font (cmsy10 for a prime written $x'$), it writes
    that font's code point, not the character: the browser, without the font, shows the prime
    as "0" ("k(x, x0)"). Text must be set in fonts a browser can stand in for (DejaVu Sans)."""
    svgs = _chapter_images(html_dir, ".svg")
    if not svgs:
        pytest.skip("no SVG figure in the built chapters")
    tex_font = re.compile(r"font-family:\s*'?(cm(?:sy|mi|r|ex|tt|ss)10|STIX\w*)")
    fonts = {path.name: set(tex_font.findall(path.read_text(encoding="utf-8"))) for path in svgs}
    bad = [f"{name}: {sorted(found)}" for name, found in fonts.items() if found]
    assert not bad, "figures with text in a TeX font (write a prime as \u2032):\n" + "\n".join(bad)


@pytest.mark.parametrize("doc", NOTEBOOK_PAGES)
def test_download_is_the_executed_notebook(html_dir, doc):
    soup = _soup(html_dir, doc)
    links = [a.get("href") for a in soup.find_all("a") if (a.get("href") or "").endswith(".ipynb")]
    assert links, f"{doc}: no .ipynb download link"
    target = ((html_dir / doc).parent / links[0]).resolve()
    assert target == (html_dir / "_sources" / f"{doc}.ipynb").resolve(), links
    nb = nbformat.read(str(target), as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and all(c.execution_count for c in code), f"{doc}: the download is not executed"
    assert any(o.get("output_type") in ("display_data", "execute_result", "stream") for c in code for o in c.outputs)
    executed = nbformat.read(str(html_dir.parent / "jupyter_execute" / f"{doc}.ipynb"), as_version=4)
    assert [c.get("outputs") for c in nb.cells] == [c.get("outputs") for c in executed.cells]
    # same cells as the source (solutions included: the website shows them folded), the first
    # code cell after the lines that check blrlib is installed (book/_ext/coursework_book.py)
    src = nbformat.read(str(ROOT / f"{doc}.ipynb"), as_version=4)
    first = next(i for i, c in enumerate(src.cells) if c.cell_type == "code")
    head, _, rest = nb.cells[first].source.partition('find_spec("blrlib") is None')
    assert rest and rest.endswith(src.cells[first].source) and "pip install -r requirements.txt" in rest, \
        f"{doc}: the first code cell of the download does not check that blrlib is installed"
    assert [c.source for i, c in enumerate(nb.cells) if i != first] == \
        [c.source for i, c in enumerate(src.cells) if i != first], \
        f"{doc}: the downloadable notebook differs from {doc}.ipynb (a build older than the source?)"


def _search_index(html_dir):
    text = (html_dir / "searchindex.js").read_text(encoding="utf-8")
    return json.loads(text[text.index("(") + 1: text.rindex(")")])


def test_search_index_finds_laplace(html_dir):
    if "book/05_laplace" not in PAGES:
        pytest.skip("chapter 5 is not in the toc")
    index = _search_index(html_dir)
    docs = index["docnames"]
    hits = index["terms"].get("laplac", [])
    hits = [hits] if isinstance(hits, int) else hits
    title_hits = index["titleterms"].get("laplac", [])
    title_hits = [title_hits] if isinstance(title_hits, int) else title_hits
    assert "book/05_laplace" in {docs[i] for i in hits + title_hits}


def test_instructor_page_lists_every_exercise(html_dir):
    if "book/instructors" not in PAGES:
        pytest.skip("book/instructors is not in the toc")
    # the page as read on a wide screen: without the column labels of the narrow-screen layout
    # (book.css), a code word whole (its pieces between <wbr>s joined)
    article = BeautifulSoup(str(_article(_soup(html_dir, "book/instructors"))), "html.parser")
    for label in article.select(".book-cell-label"):
        label.decompose()
    for code in article.select("code"):
        code.replace_with(code.get_text(""))
    text = article.get_text(" ", strip=True)
    for doc in NOTEBOOK_PAGES:
        for e in book.exercises(book.read(ROOT / f"{doc}.ipynb")):
            if e.coding:
                assert re.search(re.escape(e.check_id) + r"\s+" + f"{e.points:g}" + r"\b", text), \
                    f"instructor page: {e.check_id} with {e.points:g} points missing"
    summary = [book.chapter_summary(book.read(ROOT / f"{d}.ipynb")) for d in NOTEBOOK_PAGES]
    for s in summary:
        for goal in s["goals"][:1]:
            words = re.sub(r"[`*{}$\\]", " ", goal).split()[:3]
            assert all(w in text for w in words if w.isalpha()), (goal, words)


# ------------------------------------------------------------------ issue 12: cells and toggles


def _page_cells(html_dir, doc):
    """(source cell index, source cell, kind, HTML div.cell) for every code cell the page shows."""
    nb = json.loads((ROOT / f"{doc}.ipynb").read_text())
    cells = nb["cells"]
    shown = [i for i, c in enumerate(cells) if c["cell_type"] == "code" and "remove-cell" not in _cells.tags(c)]
    divs = _article(_soup(html_dir, doc)).select("div.cell")
    assert len(divs) == len(shown), \
        f"{doc}: {len(shown)} code cells in the notebook, {len(divs)} on the page (a build older than the source?)"
    return [(i, cells[i], _cells.kind(cells, i), div) for i, div in zip(shown, divs)]


def _toggle(div):
    """The collapsed label of the cell's input toggle, or None when the input is not folded."""
    details = div.find("details", class_="hide")
    if details is None or details.find("div", class_="cell_input") is None:
        return None
    title = details.find("summary").find(class_="collapsed")
    return title.get_text(" ", strip=True) if title else details.find("summary").get_text(" ", strip=True)


@pytest.mark.parametrize("doc", NOTEBOOK_PAGES)
def test_answers_are_folded_without_output(html_dir, doc):
    """An exercise's answer cell shows neither its code (folded under "Show the answer code")
    nor its output."""
    bad = []
    for i, _cell, kind, div in _page_cells(html_dir, doc):
        if kind != "answer" and _cells.BEGIN_SOLUTION not in div.get_text():
            continue
        label = _toggle(div)
        if label != _cells.ANSWER_PROMPTS["code_prompt_show"]:
            bad.append(f"cell {i}: answer code {'visible' if label is None else f'under the toggle {label!r}'}")
        outputs = div.find_all("div", class_="cell_output")
        if any(o.get_text(strip=True) or o.find("img") for o in outputs):
            bad.append(f"cell {i}: the answer's output is shown")
    assert not bad, f"{doc}: {len(bad)} answer cells that show what they should not:\n" + "\n".join(bad)


@pytest.mark.parametrize("doc", NOTEBOOK_PAGES)
def test_check_cells_are_folded_under_a_label(html_dir, doc):
    """A cell that only asserts (a check of the text, an exercise's check) is folded under
    "Show the checks"; its code stays in the notebook and runs."""
    bad = [f"cell {i}: {'shown in full' if _toggle(div) is None else f'under the toggle {_toggle(div)!r}'}: "
           f"{_cells.source(cell).strip().splitlines()[0][:60]}"
           for i, cell, kind, div in _page_cells(html_dir, doc)
           if kind == "check" and _toggle(div) != _cells.CHECK_PROMPTS["code_prompt_show"]]
    assert not bad, f"{doc}: {len(bad)} check cells not folded under 'Show the checks':\n" + "\n".join(bad)


@pytest.mark.parametrize("doc", PAGES)
def test_every_toggle_is_labelled(html_dir, doc):
    """No "Show code cell source": every folded cell says what it holds."""
    titles = [s.get_text(" ", strip=True) for s in _article(_soup(html_dir, doc)).select("details.hide > summary .collapsed")]
    default = [t for t in titles if DEFAULT_TOGGLES.match(t)]
    assert not default, f"{doc}: {len(default)} toggles with MyST-NB's default label: {sorted(set(default))}"


# ------------------------------------------------------------------ issue 12: the page furniture

RAW_TITLE = re.compile(r"[$\\{}]|\b[lI]2\b|\bl_2\b")


def test_sidebar_titles_read(html_dir):
    """Titles in the navigation are plain text: no raw math, no "l2" that reads as "I2"
    (write "The ℓ₂ prior ...")."""
    soup = _soup(html_dir, PAGES[0])
    titles = [a.get_text(" ", strip=True) for a in soup.select("nav.bd-docs-nav a")]
    assert len(titles) >= len(PAGES) - 1, titles
    bad = [t for t in titles if RAW_TITLE.search(t)]
    for doc in PAGES:
        title = _soup(html_dir, doc).title.get_text(strip=True)
        if RAW_TITLE.search(title):
            bad.append(f"{doc} <title>: {title}")
    assert not bad, f"titles that do not read: {bad}"


def test_bibliography_is_author_year_and_matches_the_citations(html_dir):
    if "book/bibliography" not in PAGES:
        pytest.skip("no bibliography page in the toc")
    bib = _soup(html_dir, "book/bibliography")
    entries = {}
    for div in bib.select("div.citation"):
        label = div.find(class_="label").get_text("", strip=True).strip("[]")
        entries[div.get("id")] = label
    assert entries, "the bibliography is empty"
    not_author_year = [lab for lab in entries.values()
                       if not re.fullmatch(r"[^\d\[\]]+ (\d{4}[a-z]?|n\.d\.)", lab)]
    assert not not_author_year, f"bibliography labels that are not author-year: {not_author_year}"
    mismatched = []
    for doc in PAGES:
        for span in _article(_soup(html_dir, doc)).select("span.bibtex-citation"):
            for a in span.find_all("a", href=True):
                if "bibliography.html#" not in a["href"]:
                    continue
                label = entries.get(a["href"].split("#", 1)[1])
                surname = (label or "").split(" ")[0]
                year = re.search(r"\d{4}[a-z]?|n\.d\.", a.get_text(" ", strip=True))
                # "MacKay 1992a" is cited as "MacKay [1992]": the letter only tells two entries apart
                if (label is None or not year or not re.sub(r"(\d{4})[a-z]$", r"\1", label).endswith(year.group(0))
                        or surname not in span.get_text(" ")):
                    mismatched.append(f"{doc}: '{span.get_text(' ', strip=True)}' -> {label}")
    assert not mismatched, "citations whose bibliography entry does not match:\n" + "\n".join(mismatched[:20])


def test_api_docstrings_link_their_equations(html_dir):
    if "book/api" not in PAGES:
        pytest.skip("no API page in the toc")
    art = _article(_soup(html_dir, "book/api"))
    raw = sorted({c.get_text(strip=True) for c in art.find_all("code") if re.fullmatch(r"eq-[\w-]+", c.get_text(strip=True))})
    assert not raw, f"equation labels printed as code on the API page: {raw}"
    links = [a for a in art.find_all("a", href=True) if "#equation-" in a["href"]]
    assert links, "the API page links no equation"
    assert all(re.fullmatch(r"\(\d+\.\d+\)", a.get_text(strip=True)) for a in links), \
        [a.get_text(strip=True) for a in links if not re.fullmatch(r"\(\d+\.\d+\)", a.get_text(strip=True))]


def test_intro_links_the_archive_of_executed_notebooks(html_dir):
    root = PAGES[0]
    links = [a["href"] for a in _soup(html_dir, root).find_all("a", href=True) if a["href"].endswith(NOTEBOOK_ARCHIVE)]
    assert links, f"{root} does not link {NOTEBOOK_ARCHIVE}"
    target = ((html_dir / root).parent / links[0]).resolve()
    assert target == (html_dir / NOTEBOOK_ARCHIVE).resolve() and target.exists(), target
    with zipfile.ZipFile(target) as zf:
        names = {pathlib.PurePosixPath(n).name: n for n in zf.namelist()}
        for doc in NOTEBOOK_PAGES:
            name = doc.split("/")[-1] + ".ipynb"
            assert name in names, f"{name} is not in {NOTEBOOK_ARCHIVE}"
            nb = json.loads(zf.read(names[name]))
            code = [c for c in nb["cells"] if c["cell_type"] == "code"]
            assert code and all(c.get("execution_count") for c in code), f"{name} in the archive is not executed"


@pytest.mark.parametrize("doc", PAGES)
def test_download_menu_offers_the_book_pdf_only_where_it_exists(html_dir, doc):
    """Never a dead link: the whole-book PDF is in the download menu when the site has it
    (after `make pdf`), and only then."""
    links = [a["href"] for a in _soup(html_dir, doc).find_all("a", href=True) if a["href"].endswith(BOOK_PDF)]
    if (html_dir / BOOK_PDF).exists():
        assert links, f"{doc}: the site has {BOOK_PDF} but the download menu does not offer it"
        assert ((html_dir / doc).parent / links[0]).resolve() == (html_dir / BOOK_PDF).resolve()
    else:
        assert not links, f"{doc}: the download menu links {BOOK_PDF}, which the site does not have"


def test_the_downloads_beside_the_archive(html_dir):
    """The blrlib wheel and the requirements file are at the root of the site and in the zip."""
    wheels = sorted(p.name for p in html_dir.glob("blrlib-*-py3-none-any.whl"))
    assert len(wheels) == 1, wheels
    requirements = (html_dir / "requirements.txt").read_text().split()
    assert f"./{wheels[0]}" in requirements
    pins = [r for r in requirements if "==" in r]
    assert {p.split("==")[0].lower() for p in pins} >= {"numpy", "scipy", "matplotlib"}, pins
    with zipfile.ZipFile(html_dir / NOTEBOOK_ARCHIVE) as zf:
        names = {pathlib.PurePosixPath(n).name for n in zf.namelist()}
    assert {wheels[0], "requirements.txt"} <= names, names
    with zipfile.ZipFile(html_dir / wheels[0]) as whl:
        assert "blrlib/__init__.py" in whl.namelist()


@pytest.mark.parametrize("doc", PAGES)
def test_one_search_field(html_dir, doc):
    """The sidebar's search field only: no second, empty one in a header bar above the page."""
    fields = _soup(html_dir, doc).select(".search-button-field")
    assert len(fields) == 1, f"{doc}: {len(fields)} search fields"


# The measured numbers the introduction quotes, and the chapter that measures (and asserts) each.
INTRO_MEASUREMENTS = {
    "book/05_laplace": ["0.988"],
    "book/06_predictive": ["0.239", "0.209", "0.214", "20 000", "0.252", "0.362"],
    "book/09_gp_classification": ["0.195", "0.16"],
    "book/10_exact_posterior": ["all eight cases", "0.025 to 0.43 nats"],
    "book/11_ep_mcmc_gpc": ["a few hundredths of a", "0.003 higher", "0.02 to 0.05"],
    "book/12_variational": ["0.32 to 0.93", "0.006 to 0.44 nats"],
}


def _text(soup):
    """The article's text, inline math as its TeX without delimiters ("$0.02$" reads "0.02")."""
    text = re.sub(r"\\[()]", " ", _article(soup).get_text(" "))
    return " ".join(text.split())


def test_intro_quotes_only_numbers_its_chapters_state(html_dir):
    """issue 9: the introduction's claims about approximations are the chapters' measurements.
    Each quoted number must appear on the introduction and on the chapter page that computes it
    (where an assert cell pins it), so neither can drift from the other."""
    intro = _text(_soup(html_dir, PAGES[0]))
    assert "know what they do not know" not in intro
    for doc, quoted in INTRO_MEASUREMENTS.items():
        chapter = _text(_soup(html_dir, doc))
        for q in quoted:
            assert q in intro, f"the introduction no longer quotes {q!r} from {doc}"
            assert q in chapter, f"{doc} no longer states {q!r}, which the introduction quotes"


# ------------------------------------------------------------------ issue 16: no dead link

REPOSITORY_HOSTS = ("github.com", "gitlab.com", "bitbucket.org", "codeberg.org")
# the book's own repository (it has none in public yet), or Jupyter Book's placeholder for it
OWN_REPOSITORY = re.compile(r"blrlib|bayesian[-_]logistic|executablebooks/jupyter-book/?$|course[-_]?book", re.I)


def _links(soup):
    for tag, attr in (("a", "href"), ("link", "href"), ("script", "src"), ("img", "src"), ("source", "src")):
        for el in soup.find_all(tag):
            value = el.get(attr)
            if value:
                yield tag, value


def test_every_link_resolves_over_http(html_dir, server):
    """Every link, script, stylesheet and image of every page, served over HTTP: each local
    target answers 200 and each #fragment exists on its page; nothing links a code repository
    of the book's own (it has none in public: see README, "Publishing"); other projects' links
    (bubblewrap's, a paper's) are outside the site and not fetched here."""
    import urllib.error
    import urllib.parse
    import urllib.request

    status, ids, dead, repos, checked = {}, {}, [], [], 0

    def fetch(url):
        if url not in status:
            try:
                with urllib.request.urlopen(url, timeout=30) as r:
                    status[url] = r.status
            except urllib.error.HTTPError as e:
                status[url] = e.code
        return status[url]

    def anchors(url):
        if url not in ids:
            path = html_dir / urllib.parse.unquote(urllib.parse.urlparse(url).path.lstrip("/"))
            soup = _parsed(path, path.stat().st_mtime_ns) if path.suffix == ".html" else None
            ids[url] = {e.get("id") for e in soup.find_all(id=True)} | {e.get("name") for e in soup.find_all("a", attrs={"name": True})} if soup else set()
        return ids[url]

    for doc in PAGES:
        page_url = f"{server}/{doc}.html"
        for tag, link in _links(_soup(html_dir, doc)):
            url = urllib.parse.urljoin(page_url, link)
            parsed = urllib.parse.urlparse(url)
            if parsed.scheme in ("mailto", "data", "javascript"):
                continue
            if parsed.hostname != urllib.parse.urlparse(server).hostname:
                if (any(parsed.hostname == h or (parsed.hostname or "").endswith("." + h) for h in REPOSITORY_HOSTS)
                        and OWN_REPOSITORY.search(parsed.path)):
                    repos.append(f"{doc}: {link}")
                continue
            target = urllib.parse.urlunparse(parsed._replace(fragment=""))
            checked += 1
            code = fetch(target)
            if code != 200:
                dead.append(f"{doc}: <{tag}> {link} (HTTP {code})")
            elif parsed.fragment and target.endswith(".html") and urllib.parse.unquote(parsed.fragment) not in anchors(target):
                dead.append(f"{doc}: <{tag}> {link} (no #{parsed.fragment} there)")
    assert checked > 100 * len(PAGES) // 10, f"only {checked} links checked"
    assert not dead, f"{len(dead)} dead links:\n" + "\n".join(dead[:30])
    assert not repos, "links to a code repository the book does not have:\n" + "\n".join(repos[:10])


@pytest.mark.parametrize("doc", PAGES)
def test_fold_buttons_named_by_what_they_show(html_dir, doc):
    """A folded cell's summary is named by its own words ("Show the checks", "Show the answer
    code"), not MyST-NB's aria-label "Toggle hidden content" (book/_ext/coursework_book.py)."""
    bad = []
    for summary in _article(_soup(html_dir, doc)).select("details > summary"):
        shown = summary.find(class_="collapsed")
        text = (shown or summary).get_text(" ", strip=True)
        if summary.get("aria-label") or not text.startswith("Show"):
            bad.append(f"aria-label {summary.get('aria-label')!r}, text {text!r}")
    assert not bad, f"{doc}: {len(bad)} fold buttons not named by what they show: {sorted(set(bad))[:5]}"


@functools.lru_cache(maxsize=None)
def _book_targets():
    from coursework import xref

    return xref.book_index(book.ROOT).targets


@pytest.mark.parametrize("doc", NOTEBOOK_PAGES)
def test_code_names_equations_by_number(html_dir, doc):
    """A label named in a code comment or docstring ("eq-newton") reads as the number the
    page shows ("(3.2)") in every code and output block (book/_ext/code_labels.py), and the
    code stays highlighted."""
    label_re = re.compile(r"\b(?:eq|ex|fig)-[a-z0-9]+(?:-[a-z0-9]+)*\b")
    targets = _book_targets()
    source = "\n".join(
        "".join(c["source"]) for c in json.loads((ROOT / f"{doc}.ipynb").read_text())["cells"]
        if c["cell_type"] == "code"
    )
    named = {m for m in label_re.findall(source) if m in targets}
    pres = _article(_soup(html_dir, doc)).select("div.cell pre")
    left = sorted({m for pre in pres for m in label_re.findall(pre.get_text()) if m in targets})
    assert not left, f"{doc}: labels shown in code: {left}"
    for label in named:
        number = targets[label].number
        holders = [pre for pre in pres if number in pre.get_text()]
        assert holders, f"{doc}: {label} ({number}) appears in no code block"
        assert any(pre.find("span") for pre in holders), f"{doc}: the code naming {number} lost its highlighting"


def _folded(text):
    """"Böhning" -> "bohning" (accents dropped, lower case): how a reader orders names."""
    import unicodedata

    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c)).lower()


def _bibliography_entries(html_dir):
    if "book/bibliography" not in PAGES:
        pytest.skip("no bibliography page in the toc")
    bib = _soup(html_dir, "book/bibliography")
    out = []
    for div in bib.select("div.citation"):
        label = div.find(class_="label").get_text("", strip=True).strip("[]")
        body = " ".join(p.get_text(" ", strip=True) for p in div.find_all("p"))
        out.append((label, re.sub(r"\s+", " ", body)))
    assert len(out) >= 10, f"the bibliography has {len(out)} entries"
    return out


def test_bibliography_sorted_by_the_names_as_read(html_dir):
    """Issue 16: "Böhning" was sorted after "Brier" (by its TeX spelling B{\\"o}hning); the
    entries are in the order of their first author's surname with accents folded."""
    firsts = [_folded(re.split(r" and | et al\.| (?=\d{4}|n\.d\.)", label)[0]) for label, _ in _bibliography_entries(html_dir)]
    out_of_order = [f"{a!r} before {b!r}" for a, b in zip(firsts, firsts[1:]) if a > b]
    assert not out_of_order, f"bibliography entries out of order: {out_of_order}"


def test_bibliography_entries_end_with_the_year_in_their_last_sentence(html_dir):
    """Issue 16: proceedings printed "In Booktitle, 282-290. 2013." (pages, then the year as a
    sentence of its own); every entry ends like an article's "..., 9(2):1-7, 2013." and gives
    pages as "pages 282-290"."""
    entries = _bibliography_entries(html_dir)
    bad = [f"{label}: ...{text[-70:]}" for label, text in entries
           if re.search(r"\d\s*\.\s+(\d{4}[a-z]?)\s*\.\s*$", text) or re.search(r", \d+[–-]\d+[.,]", text)]
    assert not bad, "entries whose year stands apart or whose pages are bare:\n" + "\n".join(bad)
    assert any("pages " in text for _, text in entries), "no proceedings entry with pages to check"


@pytest.mark.parametrize("doc", NOTEBOOK_PAGES)
def test_answer_code_shows_no_nbgrader_markers(html_dir, doc):
    """Issue 16: the website showed the nbgrader lines "### BEGIN SOLUTION" / "### END
    SOLUTION" in each answer's code (and a check cell's "### BEGIN/END HIDDEN TESTS" would
    show); the notebooks keep them (the student edition needs
    them), the rendered page drops them and keeps the answer code between them."""
    nb = nbformat.read(ROOT / f"{doc}.ipynb", as_version=4)
    answers = [c.source for c in nb.cells if c.cell_type == "code" and book.BEGIN in c.source]
    page = "\n".join(pre.get_text() for pre in _article(_soup(html_dir, doc)).select("div.cell_input pre"))
    shown = [m for m in (book.BEGIN, book.END, book.HIDDEN_BEGIN, book.HIDDEN_END) if m in page]
    assert not shown, f"{doc}: the page shows {shown}"
    for source in answers:
        body = source.split(book.BEGIN, 1)[1].split(book.END, 1)[0].strip().splitlines()
        assert body and body[0].strip() in page, f"{doc}: the answer code {body[:1]} is not on the page"


def test_dataframes_print_in_one_block(html_dir):
    """The executed chapters of the website (the downloads, ``_sources/<doc>.ipynb``) print
    every DataFrame in one block: pandas' default width of 80 split them into column blocks
    (book/_ext/kernel_startup.py sets 88 for the kernels of the build), and a table wider than
    the 88-character code column is split whatever the width, so none may be wider (the
    chapters shorten, transpose or divide such a table)."""
    notebooks = {}
    for doc in NOTEBOOK_PAGES:
        path = html_dir / "_sources" / f"{doc}.ipynb"
        assert path.exists(), f"no executed notebook {path}"
        notebooks[doc] = json.loads(path.read_text(encoding="utf-8"))
    split, too_wide = dataframe_split_report(notebooks)
    print(f"tables split although they fit {CODE_COLUMN_CHARS} characters: {len(split)}; "
          f"wider than {CODE_COLUMN_CHARS}: {len(too_wide)} {too_wide}")
    assert not split, f"{len(split)} DataFrames printed in column blocks although they fit in one (page, cell, blocks, width): {split}"
    assert not too_wide, f"{len(too_wide)} DataFrames wider than the {CODE_COLUMN_CHARS}-character code column, printed in column blocks (page, cell, blocks, width): {too_wide}"
