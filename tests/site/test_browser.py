"""The site as a reader meets it, in headless Chromium: every page of the toc served from
localhost.  Per page: MathJax typeset all the math (no raw TeX left, no TeX errors), every image
loaded, no request left localhost, no console error, notebook pages offer their .ipynb; one
screenshot per page goes to _build/screenshots/.  Plus the dark theme and offline search.
"""

import re
import urllib.parse

import numpy as np
import pytest

from _site import NOTEBOOK_PAGES, PAGES, is_notebook

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


def _is_local(url, base):
    parsed = urllib.parse.urlparse(url)
    if parsed.scheme in ("data", "blob", "about"):
        return True
    return parsed.hostname == urllib.parse.urlparse(base).hostname


class Visit:
    """One page opened in a fresh browser context, with what it requested and logged."""

    def __init__(self, browser, server, path, dark=False):
        self.context = browser.new_context(viewport={"width": 1280, "height": 1000})
        if dark:
            self.context.add_init_script("localStorage.setItem('theme', 'dark'); localStorage.setItem('mode', 'dark');")
        self.requests, self.errors, self.failed = [], [], []
        self.context.route("**/*", self._route(server))
        self.page = self.context.new_page()
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(f"console: {m.text}"))
        self.page.on("pageerror", lambda e: self.errors.append(f"page error: {e}"))
        self.page.on("requestfailed", lambda r: self.failed.append(f"{r.url} ({r.failure})"))
        self.page.on("response", lambda r: r.status >= 400 and self.failed.append(f"{r.url} (HTTP {r.status})"))
        self.page.goto(f"{server}/{path}", wait_until="load")
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
    """Every toc page visited once; the findings per page (checked by the tests below)."""
    found = {}
    for doc in PAGES:
        v = Visit(browser, server, f"{doc}.html")
        try:
            mathjax = v.page.evaluate(WAIT_MATHJAX_JS)
            # the screenshot before the image check scrolls (scrolling up reveals the theme's header)
            v.page.screenshot(path=str(screenshots / f"{doc.split('/')[-1]}.png"))
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
        finally:
            v.close()
    return found


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
