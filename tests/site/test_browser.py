"""The site as a reader meets it, in headless Chromium: every page of the toc served from
localhost.  Per page: MathJax typeset all the math (no raw TeX left, no TeX errors), every image
loaded, no request left localhost, no console error, notebook pages offer their .ipynb; and what
issue 12 found wrong (definitions in _reader.py): display equations cut at 1280 px, code lines
over 88 characters or code blocks that scroll, downscaled figures, raw TeX, MyST roles or
equation labels left as text, chapter cross-references that read as a bare title, doubled
words, a missing favicon, pages that scroll sideways at 390 px, print layout that cuts code or
equations.  Screenshots of every page at 1280 and 390 px go to _build/screenshots/
(<page>-1280.png, <page>-390.png; the first screen of each page, or the whole page with
BOOK_SCREENSHOTS=full, which `make screenshots` sets), with the counts per page in
reader-view.json.  Plus the dark theme and offline search.
"""

import json
import re
import urllib.parse

import numpy as np
import pytest

import _reader
from _site import FULL_PAGE, NOTEBOOK_PAGES, PAGES, is_notebook

RAW_TEX = re.compile(r"\$\$|\\\(|\\\)|\\\[|\\\]|\\begin\{|\$\\[A-Za-z]")

# the visible text of the article, without code (where dollars and backslashes are legitimate)
VISIBLE_TEXT_JS = """() => {
  const art = document.querySelector('article') || document.body;
  const copy = art.cloneNode(true);
  copy.querySelectorAll('pre, code, .highlight, mjx-container, script, style, .cell_input').forEach(e => e.remove());
  document.body.appendChild(copy);
  const text = copy.innerText;
  copy.remove();
  return text;
}"""

WAIT_MATHJAX_JS = """async () => {
  if (!document.querySelector('.math')) return 'no-math';
  for (let i = 0; i < 200 && !(window.MathJax && MathJax.startup && MathJax.startup.promise); i++)
    await new Promise(r => setTimeout(r, 50));
  if (!(window.MathJax && MathJax.startup && MathJax.startup.promise)) return 'no-mathjax';
  await MathJax.startup.promise;
  return 'typeset';
}"""

IMAGES_JS = """async () => {
  for (const img of document.images) { img.loading = 'eager'; img.scrollIntoView(); }
  window.scrollTo(0, 0);
  await Promise.all(Array.from(document.images).map(img => img.complete ? null :
      new Promise(r => { img.onload = img.onerror = r; setTimeout(r, 5000); })));
  return Array.from(document.images).map(img => ({src: img.currentSrc || img.src,
      ok: img.complete && img.naturalWidth > 0, visible: img.offsetParent !== null}));
}"""


# consecutive rich outputs of one cell (two DataFrames printed by one cell) and the gap between
# them in CSS px: without a margin the second table touches the first and they read as one
OUTPUT_GAPS_JS = """() => [...document.querySelectorAll('div.cell_output > .output.text_html + .output.text_html')]
  .map(e => {
    const above = e.previousElementSibling.getBoundingClientRect(), box = e.getBoundingClientRect();
    const cell = e.closest('.cell');
    return {cell: cell ? [...document.querySelectorAll('.cell')].indexOf(cell) : -1,
            gap: Math.round(box.top - above.bottom)};
  })"""
#: the least gap between two outputs of one cell (book.css gives 1.5rem, 24 px)
MIN_OUTPUT_GAP_PX = 12


def _is_local(url, base):
    parsed = urllib.parse.urlparse(url)
    if parsed.scheme in ("data", "blob", "about"):
        return True
    return parsed.hostname == urllib.parse.urlparse(base).hostname


class Visit:
    """One page opened in a fresh browser context, with what it requested and logged."""

    def __init__(self, browser, server, path, dark=False, width=1280, idle=True, ratio=1):
        self.context = browser.new_context(viewport={"width": width, "height": 1000}, device_scale_factor=ratio)
        if dark:
            self.context.add_init_script("localStorage.setItem('theme', 'dark'); localStorage.setItem('mode', 'dark');")
        self.requests, self.errors, self.failed = [], [], []
        self.context.route("**/*", self._route(server))
        # generous: on a busy 2-core machine a long chapter takes a minute to load and typeset
        self.context.set_default_timeout(180_000)
        self.page = self.context.new_page()
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(f"console: {m.text}"))
        self.page.on("pageerror", lambda e: self.errors.append(f"page error: {e}"))
        self.page.on("requestfailed", lambda r: self.failed.append(f"{r.url} ({r.failure})"))
        self.page.on("response", lambda r: r.status >= 400 and self.failed.append(f"{r.url} (HTTP {r.status})"))
        self.page.goto(f"{server}/{path}", wait_until="load", timeout=180_000)
        if idle:
            self.page.wait_for_load_state("networkidle")

    def _route(self, server):
        def handle(route):
            url = route.request.url
            self.requests.append(url)
            if _is_local(url, server):
                route.continue_()
            else:
                route.abort()
        return handle

    def close(self):
        self.context.close()


@pytest.fixture(scope="module")
def visits(browser, server, screenshots):
    """Every toc page visited at 1280 px (then in print layout) and at 390 px; the findings per
    page (checked by the tests below), with the counts also written to reader-view.json."""
    found = {}
    for doc in PAGES:
        name = doc.split("/")[-1]
        v = Visit(browser, server, f"{doc}.html")
        try:
            mathjax = v.page.evaluate(WAIT_MATHJAX_JS)
            # the screenshot before the image check scrolls (scrolling up reveals the theme's header);
            # the theme scrolls the sidebar's current entry into view, which can move the page
            v.page.evaluate("window.scrollTo(0, 0)")
            v.page.screenshot(path=str(screenshots / f"{name}-1280.png"), full_page=FULL_PAGE)
            images = v.page.evaluate(IMAGES_JS)
            v.page.wait_for_load_state("networkidle")
            found[doc] = {
                "mathjax": mathjax,
                "math_nodes": v.page.locator(".math").count(),
                "mjx": v.page.locator("mjx-container").count(),
                "mjx_errors": v.page.locator("mjx-merror").all_inner_texts(),
                "text": v.page.evaluate(VISIBLE_TEXT_JS),
                "images": images,
                "requests": list(v.requests),
                "errors": list(v.errors),
                "failed": list(v.failed),
                "downloads": v.page.eval_on_selector_all(
                    "a[href$='.ipynb']", "els => els.map(e => e.getAttribute('href'))"),
                "title": v.page.title(),
            }
            v.page.evaluate(_reader.OPEN_DETAILS_JS)
            found[doc]["w1280"] = v.page.evaluate(_reader.READER_JS_1280)
            found[doc]["output_gaps"] = v.page.evaluate(OUTPUT_GAPS_JS)
            v.page.set_viewport_size({"width": _reader.PRINT_WIDTH, "height": 1000})
            v.page.emulate_media(media="print")
            v.page.wait_for_timeout(200)
            found[doc]["print"] = v.page.evaluate(_reader.READER_JS_PRINT)
        finally:
            v.close()
        v = Visit(browser, server, f"{doc}.html", width=390, idle=False)
        try:
            v.page.evaluate(WAIT_MATHJAX_JS)
            v.page.evaluate("window.scrollTo(0, 0)")
            v.page.screenshot(path=str(screenshots / f"{name}-390.png"), full_page=FULL_PAGE)
            found[doc]["w390"] = v.page.evaluate(_reader.READER_JS_390)
        finally:
            v.close()
    (screenshots / "reader-view.json").write_text(json.dumps(_counts(found), indent=1))
    return found


def _counts(found):
    """Per page, the number of findings of each reader-view check (all zero when the page is right)."""
    out = {}
    for doc, f in found.items():
        w, n, p = f["w1280"], f["w390"], f["print"]
        out[doc] = {
            "cut equations at 1280 px": len(w["cut_equations"]),
            "display equations": w["display_equations"],
            "widest MathJax box at 1280 px": w["math_box_px"],
            "code lines > 88 characters": len(w["long_code_lines"]),
            "code blocks that scroll at 1280 px": len(w["scrolling_code"]),
            "downscaled figures at 1280 px": len(w["downscaled_figures"]),
            "figures": w["figures"],
            "raw TeX": len(w["raw_tex"]),
            "raw MyST roles or directives": len(w["raw_roles"]),
            "equation labels as text": len(w["equation_labels"]),
            "bare chapter titles": len(w["bare_titles"]),
            "doubled words": len(w["doubled_words"]),
            "favicon missing": int(not w["favicon"]),
            "page width at 390 px": n["page_width"],
            "print: cut equations": len(p["cut_equations"]),
            "print: code blocks that scroll": len(p["scrolling_code"]),
        }
    return out


@pytest.mark.parametrize("doc", PAGES)
def test_math_is_typeset(visits, doc):
    v = visits[doc]
    if v["math_nodes"]:
        assert v["mathjax"] == "typeset", f"{doc}: MathJax did not run ({v['mathjax']})"
        assert v["mjx"] >= v["math_nodes"], f"{doc}: {v['math_nodes']} math nodes, {v['mjx']} typeset"
    assert not v["mjx_errors"], f"{doc}: MathJax TeX errors: {v['mjx_errors'][:5]}"
    raw = sorted({m.group(0) for m in RAW_TEX.finditer(v["text"])})
    context = [v["text"][max(0, m.start() - 40): m.end() + 40] for m in RAW_TEX.finditer(v["text"])][:3]
    assert not raw, f"{doc}: raw TeX in the visible text: {raw}, e.g. {context}"


@pytest.mark.parametrize("doc", PAGES)
def test_every_image_loads(visits, doc):
    broken = [i["src"] for i in visits[doc]["images"] if not i["ok"]]
    assert not broken, f"{doc}: images that did not load: {broken}"


@pytest.mark.parametrize("doc", PAGES)
def test_no_request_leaves_localhost(visits, doc, server):
    outside = sorted({u for u in visits[doc]["requests"] if not _is_local(u, server)})
    assert not outside, f"{doc}: requests to the network: {outside}"
    assert not visits[doc]["failed"], f"{doc}: failed requests: {visits[doc]['failed']}"


@pytest.mark.parametrize("doc", PAGES)
def test_no_console_errors(visits, doc):
    assert not visits[doc]["errors"], f"{doc}: {visits[doc]['errors']}"


def _report(doc, what, items, limit=12):
    return f"{doc}: {len(items)} {what}:\n  " + "\n  ".join(items[:limit])


@pytest.mark.parametrize("doc", PAGES)
def test_display_equations_fit_at_1280px(visits, doc):
    """Every display equation fits its MathJax box, clear of its number (split long ones with
    aligned/split, or define a symbol first)."""
    cut = visits[doc]["w1280"]["cut_equations"]
    assert not cut, _report(doc, "display equations cut at 1280 px", cut)


@pytest.mark.parametrize("doc", PAGES)
def test_code_fits_at_1280px(visits, doc):
    w = visits[doc]["w1280"]
    assert not w["long_code_lines"], _report(doc, f"code lines longer than {_reader.MAX_LINE} characters", w["long_code_lines"])
    assert not w["scrolling_code"], _report(doc, "code blocks that scroll at 1280 px", w["scrolling_code"])


@pytest.mark.parametrize("doc", PAGES)
def test_tables_of_one_cell_stand_apart_at_1280px(visits, doc):
    """Two tables printed by one cell (chapters 5, 10, 12) are separated by a visible gap, not
    stacked edge to edge as one table."""
    gaps = visits[doc]["output_gaps"]
    close = [f"cell {g['cell']}: {g['gap']} px" for g in gaps if g["gap"] < MIN_OUTPUT_GAP_PX]
    assert not close, _report(doc, f"outputs of one cell closer than {MIN_OUTPUT_GAP_PX} px", close)


def test_some_cells_print_two_tables(visits):
    """The check above has something to measure: chapter 5 prints two tables in one cell."""
    assert visits["book/05_laplace"]["output_gaps"], "no cell of chapter 5 shows two rich outputs"


@pytest.mark.parametrize("doc", PAGES)
def test_figures_shown_at_natural_size_at_1280px(visits, doc):
    small = visits[doc]["w1280"]["downscaled_figures"]
    assert not small, _report(doc, "figures shown smaller than drawn (labels shrink; at most ~7.3 in wide at dpi 100)", small)


@pytest.mark.parametrize("doc", PAGES)
def test_no_raw_tex_roles_or_labels_in_text(visits, doc):
    """Catches inline math that MyST turned into a list item (a line starting with "-"), roles
    and directives that did not parse, and equation labels printed instead of numbers."""
    w = visits[doc]["w1280"]
    assert not w["raw_tex"], _report(doc, "raw TeX fragments in the text", w["raw_tex"])
    assert not w["raw_roles"], _report(doc, "raw MyST roles or directives in the text", w["raw_roles"])
    assert not w["equation_labels"], _report(doc, "equation labels shown as text", w["equation_labels"])


@pytest.mark.parametrize("doc", PAGES)
def test_cross_references_read_as_prose(visits, doc):
    """"chapter 5 ({doc}`05_laplace`)" reads "chapter 5 (The Laplace approximation)"."""
    bare = visits[doc]["w1280"]["bare_titles"]
    assert not bare, _report(doc, 'links that show a bare chapter title (write "chapter N ({doc}`...`)")', bare)


@pytest.mark.parametrize("doc", PAGES)
def test_no_doubled_words(visits, doc):
    """e.g. "exercise {ref}`ex-ch5-evidence`" renders "exercise Exercise 5.2"."""
    doubled = visits[doc]["w1280"]["doubled_words"]
    assert not doubled, _report(doc, "doubled words", doubled)


@pytest.mark.parametrize("doc", PAGES)
def test_favicon(visits, doc):
    assert visits[doc]["w1280"]["favicon"], f"{doc}: no favicon declared, or it does not load as an image"


@pytest.mark.parametrize("doc", PAGES)
def test_no_sideways_scroll_at_390px(visits, doc):
    """At phone width an equation or code block may scroll inside its own box; the page may not."""
    n = visits[doc]["w390"]
    assert n["page_width"] <= n["viewport"] + 1 and not n["figures_wider_than_column"], \
        _report(doc, f"elements wider than the {n['viewport']} px phone screen (page {n['page_width']} px)", n["too_wide"])


@pytest.mark.parametrize("doc", PAGES)
def test_print_layout_keeps_code_and_equations(visits, doc):
    p = visits[doc]["print"]
    assert not p["scrolling_code"], _report(doc, f"code blocks cut in print ({_reader.PRINT_WIDTH} px column)", p["scrolling_code"])
    assert not p["cut_equations"], _report(doc, f"equations cut in print ({_reader.PRINT_WIDTH} px column)", p["cut_equations"])


@pytest.mark.parametrize("doc", NOTEBOOK_PAGES)
def test_notebook_page_has_download_button(visits, doc):
    name = doc.split("/")[-1] + ".ipynb"
    assert any(h.endswith(f"_sources/{doc}.ipynb") for h in visits[doc]["downloads"]), \
        f"{doc}: no download link to {name}: {visits[doc]['downloads']}"
    assert is_notebook(doc)


def test_dark_theme_keeps_figures_readable(browser, server, screenshots):
    """In the dark theme a figure keeps its white background (a transparent one would put black
    axes on a dark page)."""
    from PIL import Image

    doc = next((d for d in NOTEBOOK_PAGES), None)
    if doc is None:
        pytest.skip("no notebook page in the toc")
    v = Visit(browser, server, f"{doc}.html", dark=True)
    try:
        assert v.page.evaluate("document.documentElement.dataset.theme") == "dark"
        img = v.page.locator("article img").first
        img.scroll_into_view_if_needed()
        v.page.wait_for_timeout(300)
        v.page.screenshot(path=str(screenshots / f"dark-{doc.split('/')[-1]}.png"))
        shot = screenshots / f"dark-{doc.split('/')[-1]}-figure.png"
        img.screenshot(path=str(shot))
        bg = v.page.evaluate("getComputedStyle(document.body).backgroundColor")
    finally:
        v.close()
    rgb = [int(x) for x in re.findall(r"\d+", bg)[:3]]
    assert sum(rgb) / 3 < 100, f"the dark theme's background is not dark: {bg}"
    # the theme dims images in dark mode; the figure must keep a light background and its
    # dark lines and text must keep a WCAG AA contrast (4.5:1) against it
    lum = _luminance(np.asarray(Image.open(shot).convert("RGB"), dtype=float) / 255.0)
    h, w = lum.shape
    background = float(np.median([lum[2, 2], lum[2, w - 3], lum[h - 3, 2], lum[h - 3, w - 3]]))
    ink = float(np.percentile(lum, 0.5))
    ratio = (background + 0.05) / (ink + 0.05)
    assert background > 0.3, f"{doc}: the figure's background is dark in the dark theme ({background:.2f})"
    assert ratio >= 4.5, f"{doc}: figure contrast in the dark theme {ratio:.1f}:1 < 4.5:1"


def _luminance(rgb):
    lin = np.where(rgb <= 0.03928, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    return lin @ np.array([0.2126, 0.7152, 0.0722])


CONTRAST_JS = """() => {
  const lum = c => { const v = c.map(x => { x /= 255; return x <= 0.03928 ? x / 12.92 : ((x + 0.055) / 1.055) ** 2.4; });
                     return 0.2126 * v[0] + 0.7152 * v[1] + 0.0722 * v[2]; };
  const rgba = s => (s.match(/[\\d.]+/g) || []).map(Number);
  const bgOf = el => { for (; el; el = el.parentElement) { const c = rgba(getComputedStyle(el).backgroundColor);
                         if (c.length === 3 || (c.length === 4 && c[3] > 0.5)) return c.slice(0, 3); }
                       return rgba(getComputedStyle(document.body).backgroundColor).slice(0, 3); };
  const bad = [];
  for (const el of document.querySelectorAll('article p, article li, article h1, article h2, article h3, article a, article .admonition-title, article td, article th')) {
    if (!el.innerText.trim() || el.offsetParent === null) continue;
    const fg = rgba(getComputedStyle(el).color).slice(0, 3), bg = bgOf(el);
    const [a, b] = [lum(fg), lum(bg)].sort((x, y) => y - x);
    const ratio = (a + 0.05) / (b + 0.05);
    if (ratio < 4.5) bad.push(`${el.tagName.toLowerCase()}.${el.className} "${el.innerText.trim().slice(0, 30)}" ${ratio.toFixed(2)}`);
  }
  return bad;
}"""


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_text_contrast(browser, server, theme):
    """WCAG AA (4.5:1) for the text of a chapter page in both themes."""
    doc = next((d for d in NOTEBOOK_PAGES), PAGES[0])
    v = Visit(browser, server, f"{doc}.html", dark=theme == "dark")
    try:
        bad = v.page.evaluate(CONTRAST_JS)
    finally:
        v.close()
    assert not bad, f"{doc} ({theme}): text below 4.5:1 contrast: {sorted(set(bad))[:10]}"


def test_search_finds_laplace_offline(browser, server):
    v = Visit(browser, server, "search.html?q=Laplace")
    try:
        v.page.wait_for_selector("#search-results ul.search li", timeout=20000)
        v.page.wait_for_load_state("networkidle")
        hrefs = v.page.eval_on_selector_all("#search-results ul.search li a", "els => els.map(e => e.getAttribute('href'))")
        outside = [u for u in v.requests if not _is_local(u, server)]
        errors = list(v.errors)
    finally:
        v.close()
    assert any("05_laplace" in h for h in hrefs), f"search for Laplace found: {hrefs}"
    assert not outside, outside
    assert not errors, errors
