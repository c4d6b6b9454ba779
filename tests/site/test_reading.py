"""The site as a reader on a phone and on a laptop meets it (issue 16), measured in headless
Chromium on every page of the toc, served over HTTP from localhost:

- at 390 px (device pixel ratio 2), 1280 px (ratio 1) and 1280 px (ratio 2): every display
  equation's rendered glyphs lie inside the part of its box the reader sees (its box clipped by
  every scrolling or clipping ancestor and by the screen), and none lies under the equation
  number.  An equation that cannot be broken over lines must scroll with a visible cue; the
  test lists those too and allows none;
- at 390 and 1280 px, every display equation that MathJax 4 broke over several line boxes
  (``mjx-linebox``) breaks where it reads: not inside the left-hand cell of an aligned row,
  not between a function (or a matrix) and the bracketed argument that follows it, not between
  an invisible function application (``\\log``, ``\\operatorname``) and its argument, and no
  script (an inverse's "-1") apart from its base.  book.js rules those break points out in
  MathJax's MathML (a TeX post-filter), so the check does not depend on where a few pixels
  make MathJax break; a fixture equation with a forced bad break shows the detector works,
  and the MathML of a few formulas shows the filter at work;
- at 1280 and 390 px every folded admonition (the solutions) opens when its title bar is
  clicked in the middle and on the link it holds, and the click does not navigate;
- figures at 390 px: the smallest text of each figure (read from its SVG) is shown at 10 CSS
  px or more, and figures are vector (sharp at any pixel ratio);
- on every visit: console errors, page errors and failed requests (none allowed);
- axe-core (npm, installed by `make site-deps` into .cache/node) on every page in the light
  and the dark theme: no serious or critical violation.  Without axe-core the test is skipped
  loudly, or fails where CI (or BOOK_AXE_REQUIRED=1) is set.

The counts per page go to _build/screenshots/reading.json and axe.json.
"""

import json
import os
import pathlib
import sys
import warnings

import pytest

from _site import PAGES, ROOT
from test_browser import WAIT_MATHJAX_JS, Visit

# (name, width, device pixel ratio)
VIEWS = [("390", 390, 2), ("1280", 1280, 1), ("1280x2", 1280, 2)]
# where the line breaks are read (1280x2 breaks as 1280 does: the same CSS width)
BREAK_VIEWS = ["390", "1280"]

EQUATIONS_JS = r"""() => {
  const art = document.querySelector('article.bd-article') || document.querySelector('article') || document.body;
  const clip = (r, c) => ({left: Math.max(r.left, c.left), right: Math.min(r.right, c.right),
                           top: Math.max(r.top, c.top), bottom: Math.min(r.bottom, c.bottom)});
  const visibleBox = (el) => {
    // the element's box, clipped by each ancestor that does not let content overflow, and the screen
    let v = el.getBoundingClientRect();
    v = {left: v.left, right: v.right, top: v.top, bottom: v.bottom};
    if (['auto', 'scroll', 'hidden', 'clip'].includes(getComputedStyle(el).overflowX)) {
      const r = el.getBoundingClientRect();
      v = clip(v, {left: r.left + el.clientLeft, right: r.left + el.clientLeft + el.clientWidth, top: -1e9, bottom: 1e9});
    }
    for (let p = el.parentElement; p && p !== document.documentElement; p = p.parentElement) {
      const s = getComputedStyle(p);
      if (['auto', 'scroll', 'hidden', 'clip'].includes(s.overflowX)) {
        const r = p.getBoundingClientRect();
        v = clip(v, {left: r.left + p.clientLeft, right: r.left + p.clientLeft + p.clientWidth, top: -1e9, bottom: 1e9});
      }
    }
    return clip(v, {left: 0, right: document.documentElement.clientWidth, top: -1e9, bottom: 1e9});
  };
  // margin: the smallest spare width (a fraction of the visible box) of an equation MathJax
  // did not break over lines -- how close the page comes to needing one more break
  const out = {count: 0, cut: [], under_number: [], scrolling: [], margin: null};
  for (const m of art.querySelectorAll('mjx-container[display="true"]')) {
    out.count++;
    const div = m.closest('div.math');
    const name = (div && div.id) || (m.closest('[id]') || {}).id || '?';
    const seen = visibleBox(m);
    const glyphs = [...m.querySelectorAll('mjx-c, mjx-line, mjx-stretchy-h, mjx-stretchy-v, mjx-mspace, mjx-rule')]
        .filter(g => !g.closest('mjx-assistive-mml'))
        .map(g => g.getBoundingClientRect()).filter(r => r.width > 0.5 && r.height > 0.5);
    let left = Infinity, right = -Infinity;
    for (const r of glyphs) { left = Math.min(left, r.left); right = Math.max(right, r.right); }
    if (glyphs.length && !m.querySelector('mjx-linestack') && seen.right > seen.left) {
      const spare = (seen.right - seen.left - (right - left)) / (seen.right - seen.left);
      out.margin = out.margin === null ? spare : Math.min(out.margin, spare);
    }
    // 2 px of tolerance: an italic glyph's ink may stand a pixel or two out of its box
    if (glyphs.length && (left < seen.left - 2 || right > seen.right + 2)) {
      const why = `glyphs ${Math.round(left)}..${Math.round(right)} px, visible ${Math.round(seen.left)}..${Math.round(seen.right)} px`;
      const scrolls = m.scrollWidth > m.clientWidth + 1 && getComputedStyle(m).overflowX !== 'hidden';
      (scrolls && m.classList.contains('book-scroll-cue') ? out.scrolling : out.cut).push(`${name}: ${why}`);
    }
    const eqno = div && div.querySelector('.eqno');
    if (eqno) {
      const n = eqno.getBoundingClientRect();
      if (n.width > 0 && glyphs.some(r => r.right > n.left + 1 && r.left < n.right - 1 && r.bottom > n.top + 1 && r.top < n.bottom - 1))
        out.under_number.push(`${name}: a glyph under its number ${eqno.textContent.trim()}`);
    }
  }
  return out;
}"""

# display equations broken over lines (MathJax 4: an mjx-linestack of mjx-linebox elements, one
# per line; an aligned row's cells are broken each on its own) and the breaks that misread:
# - a break inside the left-hand cell of an aligned row ("a" | "(x) = ...");
# - a line that starts with an opening bracket right after a line that ends in no operator
#   (an identifier, a function name, a matrix with its scripts: "nabla^2 f" | "(w)");
# - a line after one that ends in an invisible function application (U+2061, after \log);
# - a line that starts with a script whose base is on the line before ("(A)" | "^{-1} b").
# The tokens are MathJax's own (mjx-mi, mjx-mo, ...), read from the typeset DOM.
BREAKS_JS = r"""() => {
  const art = document.querySelector('article.bd-article') || document.querySelector('article') || document.body;
  const TOKENS = 'mjx-mi, mjx-mo, mjx-mn, mjx-mtext, mjx-ms';
  const COMPOUND = new Set(['MJX-MSUB', 'MJX-MSUP', 'MJX-MSUBSUP', 'MJX-MUNDER', 'MJX-MOVER', 'MJX-MUNDEROVER',
                            'MJX-MFRAC', 'MJX-MSQRT', 'MJX-MROOT', 'MJX-TEXATOM']);
  const OPEN = new Set(['(', '[', '{', '\u27e8', '\u2016', '|', '\u230a', '\u2308']);
  const INVISIBLE = new Set(['\u2061', '\u2062', '\u2063', '\u2064']);
  const text = (el) => [...el.querySelectorAll('mjx-c')].map(c => c.textContent).join('');
  const tokens = (lb) => [...lb.querySelectorAll(TOKENS)].filter(t => text(t) !== '');
  // the outermost unbreakable compound (base with scripts, fraction, root, atom) holding t in its line
  const unit = (t, lb) => {
    let u = t;
    for (let p = t.parentElement; p && p !== lb; p = p.parentElement) if (COMPOUND.has(p.tagName)) u = p;
    return u;
  };
  const inScript = (t, lb) => {
    for (let p = t.parentElement; p && p !== lb; p = p.parentElement)
      if (p.tagName === 'MJX-SCRIPT' || p.tagName === 'MJX-SUP' || p.tagName === 'MJX-SUB') {
        const base = p.parentElement;     // msup/msub: base then script
        const b = base && base.firstElementChild;
        return !!(b && b !== p && text(b) === '');
      }
    return false;
  };
  const show = (lb) => text(lb).replace(/[\u2061-\u2064]/g, '').replace(/\s+/g, ' ').trim();
  const out = {broken: 0, bad: []};
  for (const m of art.querySelectorAll('mjx-container[display="true"]')) {
    const stacks = [...m.querySelectorAll('mjx-linestack')];
    if (!stacks.length) continue;
    out.broken++;
    const div = m.closest('div.math');
    const eqno = div && div.querySelector('.eqno');
    const name = (eqno ? eqno.textContent.replace(/[#\s]/g, '') + ' ' : '') + ((div && div.id) || '?').replace(/^equation-/, '');
    const why = [];
    for (const s of stacks) {
      const lines = [...s.children].filter(c => c.tagName === 'MJX-LINEBOX' && text(c) !== '');
      if (lines.length < 2) continue;
      const cell = s.closest('mjx-mtd');
      if (cell && s.parentElement === cell) {
        const row = [...cell.parentElement.children].filter(c => c.tagName === 'MJX-MTD');
        const table = cell.closest('mjx-mtable');
        const latex = (table && table.getAttribute('data-latex')) || '';
        if (row.length > 1 && row.indexOf(cell) % 2 === 0 && /aligned|split|align|gathered/.test(latex))
          why.push(`left cell broken: "${lines.map(show).join('" | "')}"`);
      }
      for (let i = 1; i < lines.length; i++) {
        const prev = tokens(lines[i - 1]), next = tokens(lines[i]);
        if (!prev.length || !next.length) continue;
        const last = prev[prev.length - 1], first = next[0];
        const lastU = unit(last, lines[i - 1]);
        const pair = `"${[...show(lines[i - 1])].slice(-12).join('')}" | "${[...show(lines[i])].slice(0, 12).join('')}"`;
        if (inScript(first, lines[i])) why.push(`script apart from its base: ${pair}`);
        else if (last.tagName === 'MJX-MO' && INVISIBLE.has(text(last))) why.push(`function apart from its argument: ${pair}`);
        else if (first.tagName === 'MJX-MO' && OPEN.has(text(first)) && first === next[0]
                 && !(lastU.tagName === 'MJX-MO'))
          why.push(`argument apart from its function: ${pair}`);
      }
    }
    if (why.length) out.bad.push(`${name}: ${why.join('; ')}`);
  }
  return out;
}"""

# every folded admonition, by the id of its box, with the points to click: the middle of the
# title bar and the middle of the link inside it (if any)
SOLUTION_TARGETS_JS = r"""(id) => {
  const box = document.getElementById(id);
  const title = box.querySelector(':scope > .admonition-title');
  title.scrollIntoView({block: 'center'});
  const r = title.getBoundingClientRect();
  const button = title.querySelector('button.toggle-button');
  const out = {hidden: box.classList.contains('toggle-hidden'), middle: [r.left + r.width / 2, r.top + r.height / 2], link: null,
               name: button ? button.getAttribute('aria-label') : null};
  const a = title.querySelector('a[href]');
  if (a) { const q = a.getBoundingClientRect(); out.link = [q.left + q.width / 2, q.top + q.height / 2]; }
  return out;
}"""

FIGURES_JS = r"""async () => {
  const art = document.querySelector('article.bd-article') || document.querySelector('article') || document.body;
  const out = {figures: 0, raster: [], small_text: [], smallest_px: null};
  for (const img of art.querySelectorAll('img')) {
    const src = img.currentSrc || img.src;
    if (!src.includes('/_images/')) continue;
    out.figures++;
    const name = src.split('/').pop().slice(0, 24);
    if (!src.endsWith('.svg')) { out.raster.push(name); continue; }
    const svg = new DOMParser().parseFromString(await (await fetch(src)).text(), 'image/svg+xml').documentElement;
    const vb = (svg.getAttribute('viewBox') || '').split(/\s+/).map(Number);
    const shown = img.getBoundingClientRect().width;
    if (vb.length !== 4 || !shown) continue;
    const scale = shown / vb[2];          // CSS px per SVG user unit as shown
    let smallest = Infinity;
    for (const t of svg.querySelectorAll('text, tspan')) {
      // matplotlib writes the size in the style of the <text> or of each <tspan> (math text)
      const m = (t.getAttribute('style') || '').match(/font(?:-size)?:[^;]*?([\d.]+)px/) || [null, t.getAttribute('font-size')];
      if (m[1] && t.textContent.trim()) smallest = Math.min(smallest, parseFloat(m[1]) * scale);
    }
    if (smallest === Infinity) { out.small_text.push(`${name}: no text elements (text drawn as paths?)`); continue; }
    out.smallest_px = out.smallest_px === null ? smallest : Math.min(out.smallest_px, smallest);
    if (smallest < 10) out.small_text.push(`${name}: smallest text ${smallest.toFixed(1)} px`);
  }
  return out;
}"""


def _click_solutions(v, errors):
    """Open and close each folded admonition by its title bar's middle, then by its link;
    what did not open (or navigated) is returned."""
    page = v.page
    ids = page.eval_on_selector_all(".admonition.toggle", "els => els.map(e => e.id).filter(Boolean)")
    missed = []
    url = page.url
    for box in ids:
        for where in ("middle", "link"):
            t = page.evaluate(SOLUTION_TARGETS_JS, box)
            if t[where] is None:
                continue
            if not (t["name"] or "").startswith("Show the "):
                missed.append(f"{box}: its fold button is named {t['name']!r}, not 'Show the ...'")
            if not t["hidden"]:
                missed.append(f"{box}: open before the click on its {where}")
                continue
            page.mouse.click(*t[where])
            page.wait_for_timeout(50)
            state = page.evaluate("(id) => { const b = document.getElementById(id); const c = b.querySelector(':scope > :not(.admonition-title)');"
                                  " return {hidden: b.classList.contains('toggle-hidden'), shown: !!(c && c.offsetHeight > 0)}; }", box)
            if state["hidden"] or not state["shown"]:
                missed.append(f"{box}: a click on its title's {where} did not open it")
            if page.url != url:
                missed.append(f"{box}: a click on its title's {where} went to {page.url}")
                page.goto(url)
                page.evaluate(WAIT_MATHJAX_JS)
                continue
            page.mouse.click(*page.evaluate(SOLUTION_TARGETS_JS, box)["middle"])
            page.wait_for_timeout(50)
            if not page.evaluate("(id) => document.getElementById(id).classList.contains('toggle-hidden')", box):
                missed.append(f"{box}: a second click on its title did not close it")
    return len(ids), missed


@pytest.fixture(scope="module")
def readings(browser, server, screenshots):
    found = {}
    for doc in PAGES:
        found[doc] = {}
        for name, width, ratio in VIEWS:
            v = Visit(browser, server, f"{doc}.html", width=width, ratio=ratio)
            try:
                mathjax = v.page.evaluate(WAIT_MATHJAX_JS)
                v.page.wait_for_load_state("networkidle")
                r = {"mathjax": mathjax, "equations": v.page.evaluate(EQUATIONS_JS)}
                if name in BREAK_VIEWS:
                    r["breaks"] = v.page.evaluate(BREAKS_JS)
                if ratio == 2 and width == 390:
                    r["figures"] = v.page.evaluate(FIGURES_JS)
                if name in ("390", "1280"):
                    r["solutions"], r["missed_clicks"] = _click_solutions(v, v.errors)
                v.page.wait_for_load_state("networkidle")
                r["errors"], r["failed"] = list(v.errors), list(v.failed)
            finally:
                v.close()
            found[doc][name] = r
    counts = {doc: {
        **{f"display equations not fully visible at {n}": len(f[n]["equations"]["cut"]) for n, _, _ in VIEWS},
        **{f"display equations under their number at {n}": len(f[n]["equations"]["under_number"]) for n, _, _ in VIEWS},
        **{f"display equations that scroll at {n}": len(f[n]["equations"]["scrolling"]) for n, _, _ in VIEWS},
        "display equations": f["1280"]["equations"]["count"],
        **{f"display equations broken over lines at {n}": f[n]["breaks"]["broken"] for n in BREAK_VIEWS},
        # informative: a row that fits only just is broken (where book.js allows) at a few px less
        "smallest spare width of an unbroken display equation at 390 (%)":
            None if f["390"]["equations"]["margin"] is None else round(100 * f["390"]["equations"]["margin"], 1),
        **{f"display equations broken where they misread at {n}": len(f[n]["breaks"]["bad"]) for n in BREAK_VIEWS},
        "solutions": f["1280"].get("solutions", 0),
        "solution clicks that missed": sum(len(f[n].get("missed_clicks", [])) for n in ("390", "1280")),
        "figures": f["390"]["figures"]["figures"],
        "figures with text under 10 px at 390": len(f["390"]["figures"]["small_text"]),
        "raster figures": len(f["390"]["figures"]["raster"]),
        "console errors": sum(len(f[n]["errors"]) for n, _, _ in VIEWS),
        "failed requests": sum(len(f[n]["failed"]) for n, _, _ in VIEWS),
    } for doc, f in found.items()}
    (screenshots / "reading.json").write_text(json.dumps(counts, indent=1))
    return found


def _report(doc, what, items, limit=15):
    return f"{doc}: {len(items)} {what}:\n  " + "\n  ".join(items[:limit])


@pytest.mark.parametrize("view", [n for n, _, _ in VIEWS])
@pytest.mark.parametrize("doc", PAGES)
def test_display_equations_fully_visible(readings, doc, view):
    """Each display equation's glyphs inside the visible part of its box and clear of its
    number: MathJax 4 breaks a wide equation over lines (book/_static/mathjax4)."""
    e = readings[doc][view]["equations"]
    assert not e["cut"], _report(doc, f"display equations cut at {view}", e["cut"])
    assert not e["under_number"], _report(doc, f"display equations under their number at {view}", e["under_number"])
    assert not e["scrolling"], _report(doc, f"display equations that could not be broken (they scroll) at {view}", e["scrolling"])


@pytest.mark.parametrize("view", BREAK_VIEWS)
@pytest.mark.parametrize("doc", PAGES)
def test_display_equations_break_where_they_read(readings, doc, view):
    """An equation broken over lines (MathJax 4) keeps a function with its argument, an
    inverse with its matrix and the left-hand side of an aligned row on one line.  book.js
    rules those breaks out in the MathML before MathJax lays an equation out (a TeX
    post-filter), so no width, and no pixel more or less, can bring one back."""
    b = readings[doc][view]["breaks"]
    assert not b["bad"], _report(doc, f"display equations broken where they misread at {view}", b["bad"])


def test_line_breaks_are_measured(readings):
    """The test above is not vacuous: at 390 px MathJax breaks many equations over lines."""
    assert sum(readings[d]["390"]["breaks"]["broken"] for d in PAGES) >= 20


# a break the detector must flag (\break forces it: "nabla^2 f" | "(w)"), and formulas whose
# misreading break points book.js must mark linebreak="nobreak" in MathJax's MathML
FORCED_BAD_BREAK = r"\nabla^2 f \break (\mathbf w) = X^\top S X"
FIXTURE_JS = r"""async (tex) => {
  const art = document.querySelector('article.bd-article') || document.querySelector('article') || document.body;
  const div = document.createElement('div');
  div.className = 'math';
  div.id = 'equation-fixture-bad-break';
  div.textContent = '\\[' + tex + '\\]';
  art.appendChild(div);
  await MathJax.typesetPromise([div]);
  return document.querySelectorAll('#equation-fixture-bad-break mjx-linestack').length;
}"""
NOBREAK_JS = r"""() => {
  const mml = (tex) => new DOMParser().parseFromString(MathJax.tex2mml(tex, {display: true}), 'text/xml');
  const nobreak = (doc, sel, text) => [...doc.querySelectorAll(sel)].filter(e => e.textContent === text)
      .map(e => e.getAttribute('linebreak'));
  const a = mml(String.raw`p_n (1 - p_n)\, \mathbf x_n + \log p(y) + (a + b) + \nabla^2 f(\mathbf w)`);
  const b = mml(String.raw`\begin{aligned} H(\mathbf w) &= \left(A + B\right)^{-1} \\ &= C \end{aligned}`);
  const c = mml(String.raw`a \break (b)`);
  const d = mml(String.raw`A - B (K + C)^{-1} D`);
  return {
    brackets: nobreak(a, 'mo', '('),
    thin_spaces: [...a.querySelectorAll('mspace')].map(e => e.getAttribute('linebreak')),
    left_cell: [...b.querySelector('mtd').querySelectorAll('mo')].map(e => e.getAttribute('linebreak')),
    inside_base: [...b.querySelectorAll('msup > mrow:first-child mo')].map(e => e.getAttribute('linebreak')),
    forced: [...c.querySelectorAll('mspace')].map(e => e.getAttribute('linebreak')),
    scripted_bracket: ['-', '+'].map(t => nobreak(d, 'mo', t === '-' ? '\u2212' : t)[0]),
  };
}"""


def test_break_detector_flags_a_misreading_break(browser, server):
    """The detector of misreading breaks is not vacuous: a break forced between a function
    and its argument, in a fixture equation on a book page at 390 px, is flagged."""
    v = Visit(browser, server, "book/05_laplace.html", width=390, ratio=2)
    try:
        v.page.evaluate(WAIT_MATHJAX_JS)
        stacks = v.page.evaluate(FIXTURE_JS, FORCED_BAD_BREAK)
        bad = v.page.evaluate(BREAKS_JS)["bad"]
    finally:
        v.close()
    assert stacks >= 1, "the fixture equation was not broken over lines"
    assert any("fixture-bad-break: argument apart from its function" in x for x in bad), bad


def test_misreading_break_points_are_ruled_out(browser, server):
    """book.js marks the break points that misread as linebreak="nobreak" in the MathML
    MathJax lays out: a bracket after an identifier or a function, a thin space, the
    left-hand cell of an aligned row, the inside of a scripted base or of a bracket that
    carries a script; a forced break stays."""
    v = Visit(browser, server, "book/05_laplace.html", width=390, ratio=2)
    try:
        v.page.evaluate(WAIT_MATHJAX_JS)
        r = v.page.evaluate(NOBREAK_JS)
    finally:
        v.close()
    # p_n (1 ...), p (y) and f (w); not the bracket after "+"
    assert r["brackets"] == ["nobreak", "nobreak", None, "nobreak"], r
    assert r["thin_spaces"] and set(r["thin_spaces"]) == {"nobreak"}, r
    assert r["left_cell"] and set(r["left_cell"]) == {"nobreak"}, r
    assert r["inside_base"] and set(r["inside_base"]) == {"nobreak"}, r
    assert r["forced"] == ["newline"], r
    # "A - B (K" | "+ C)^{-1} D" would part the inverse from its matrix; "A" | "- B ..." reads
    assert r["scripted_bracket"] == [None, "nobreak"], r


@pytest.mark.parametrize("view", ["390", "1280"])
@pytest.mark.parametrize("doc", PAGES)
def test_solutions_open_where_their_title_is_clicked(readings, doc, view):
    missed = readings[doc][view]["missed_clicks"]
    assert not missed, _report(doc, f"solution title clicks that failed at {view}", missed)


@pytest.mark.parametrize("doc", PAGES)
def test_no_console_error_or_failed_request(readings, doc):
    errors = [f"{n}: {e}" for n, _, _ in VIEWS for e in readings[doc][n]["errors"]]
    failed = [f"{n}: {e}" for n, _, _ in VIEWS for e in readings[doc][n]["failed"]]
    assert not errors, _report(doc, "console or page errors (clicks on the solutions included)", errors)
    assert not failed, _report(doc, "failed requests", failed)


@pytest.mark.parametrize("doc", PAGES)
def test_figures_readable_at_390px_and_sharp(readings, doc):
    f = readings[doc]["390"]["figures"]
    assert not f["raster"], _report(doc, "figures drawn as raster images (blurred at pixel ratio 2)", f["raster"])
    assert not f["small_text"], _report(doc, "figures whose text is under 10 CSS px at 390 px", f["small_text"])


def test_a_solution_exists_to_click(readings):
    """The click test above is not vacuous: the book has folded solutions."""
    assert sum(readings[d]["1280"]["solutions"] for d in PAGES) >= 10


# ------------------------------------------------------------------ accessibility: axe-core

AXE_VERSION = "4.14.1"
AXE = ROOT / ".cache" / "node" / "node_modules" / "axe-core" / "axe.min.js"   # make site-deps

AXE_RUN_JS = """async () => {
  const r = await axe.run(document, {resultTypes: ['violations']});
  return r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.map(n => n.target.join(' ') + (n.failureSummary ? ' | ' + n.failureSummary.split('\\n').slice(1, 2).join('') : ''))}));
}"""

DARK_JS = """async () => {
  document.documentElement.dataset.theme = 'dark';
  document.documentElement.dataset.mode = 'dark';
  await new Promise(r => setTimeout(r, 300));
  return getComputedStyle(document.body).backgroundColor;
}"""


@pytest.fixture(scope="module")
def axe_script():
    path = pathlib.Path(os.environ.get("BOOK_AXE", AXE))
    if not path.exists():
        msg = (f"\n\n{'!' * 78}\n!!! axe-core NOT FOUND AT {path}: THE ACCESSIBILITY TEST OF THE SITE DID NOT RUN.\n"
               f"!!! Install it with `make site-deps` (npm install axe-core@{AXE_VERSION} into .cache/node,\n"
               f"!!! as .ci/run does).\n{'!' * 78}\n")
        if os.environ.get("CI") or os.environ.get("BOOK_AXE_REQUIRED") == "1":
            pytest.fail(msg)
        sys.stderr.write(msg)
        warnings.warn(msg)
        pytest.skip(msg)
    return path.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def axe_results(browser, server, screenshots, axe_script):
    found = {}
    for doc in PAGES:
        v = Visit(browser, server, f"{doc}.html")
        try:
            v.page.evaluate(WAIT_MATHJAX_JS)
            v.page.wait_for_load_state("networkidle")
            v.page.add_script_tag(content=axe_script)
            light = v.page.evaluate(AXE_RUN_JS)
            v.page.evaluate(DARK_JS)
            dark = v.page.evaluate(AXE_RUN_JS)
        finally:
            v.close()
        found[doc] = {"light": light, "dark": dark}
    counts = {doc: {theme: {impact: sum(len(x["nodes"]) for x in r[theme] if x["impact"] == impact)
                            for impact in ("critical", "serious", "moderate", "minor")}
                    for theme in ("light", "dark")} for doc, r in found.items()}
    (screenshots / "axe.json").write_text(json.dumps({"counts (elements) by impact": counts, "violations": found}, indent=1))
    return found


@pytest.mark.parametrize("theme", ["light", "dark"])
@pytest.mark.parametrize("doc", PAGES)
def test_axe_no_serious_or_critical_violation(axe_results, doc, theme):
    bad = [f"{x['impact']} {x['id']} ({x['help']}): {len(x['nodes'])} elements, e.g. {x['nodes'][:3]}"
           for x in axe_results[doc][theme] if x["impact"] in ("serious", "critical")]
    assert not bad, _report(doc, f"serious or critical axe-core violations ({theme})", bad)
