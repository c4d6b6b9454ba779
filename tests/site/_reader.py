"""What a reader sees on a page, measured in the browser (issue 12).  The JavaScript below runs
in every page of the toc, at 1280 px (a laptop), at 390 px (a phone) and in print layout; the
tests in test_browser.py assert on what it returns, and the fixture writes the counts per page to
``_build/screenshots/reader-view.json``.

Definitions (all in CSS pixels):
- a display equation is *cut* when its typeset content is wider than its MathJax box (it
  would scroll, and headless browsers and many systems hide the scrollbar), or the box runs
  under the equation number or past the article's right edge;
- a code block *scrolls* when its content is wider than the block; a code *line* is too long
  when it has more than 88 characters (cell inputs and code examples; outputs only must not
  scroll);
- a figure is *downscaled* when it is shown narrower than its natural width (its labels shrink
  below the 12 pt they were drawn at);
- *raw TeX* is a dollar sign, a TeX command or ``\\(``, ``\\[`` left in the visible text
  (code and typeset math excluded), and a *raw role or directive* is MyST syntax such as
  ``{eq}`` or ``:::{exercise}`` left as text; an *equation label* is ``eq-...`` shown as text;
- a *bare title* is a link to a chapter whose text is the chapter's title, inside a sentence,
  not preceded by "chapter N (" (or "chapter N, " / "chapter N: "; a link that opens a table
  cell or a list item is a heading and reads);
- a *doubled word* is the same word twice in a row ("exercise Exercise 5.2");
- the page *scrolls sideways* at 390 px when the document is wider than the viewport.
"""

MAX_LINE = 88

# MathJax has typeset the page (or there is no math); then every <details> is opened so that
# folded code can be measured too (after the screenshot, which shows the page as it loads)
WAIT_MATHJAX_JS = """async () => {
  if (!document.querySelector('.math')) return 'no-math';
  for (let i = 0; i < 200 && !(window.MathJax && MathJax.startup && MathJax.startup.promise); i++)
    await new Promise(r => setTimeout(r, 50));
  if (!(window.MathJax && MathJax.startup && MathJax.startup.promise)) return 'no-mathjax';
  await MathJax.startup.promise;
  return 'typeset';
}"""

OPEN_DETAILS_JS = """() => { document.querySelectorAll('article details').forEach(d => d.open = true); }"""

_COMMON_JS = r"""
  const art = document.querySelector('article.bd-article') || document.querySelector('article') || document.body;
  const label = (el) => {
    const box = el.closest('[id]');
    return (box && box.id ? '#' + box.id + ' ' : '') + (el.textContent || '').replace(/\s+/g, ' ').trim().slice(0, 60);
  };
  const equations = () => {
    const cut = [];
    const artRight = art.getBoundingClientRect().right;
    for (const m of art.querySelectorAll('mjx-container[display="true"]')) {
      const math = m.querySelector('mjx-math');
      const box = m.getBoundingClientRect();
      const content = Math.max(m.scrollWidth, math ? math.getBoundingClientRect().width : 0);
      const div = m.closest('div.math');
      const eqno = div && div.querySelector('.eqno');
      let why = null;
      if (content > m.clientWidth + 1) why = `content ${Math.round(content)} px > box ${m.clientWidth} px`;
      else if (box.right > artRight + 1) why = `box ends ${Math.round(box.right - artRight)} px past the column`;
      else if (eqno && eqno.getBoundingClientRect().width > 0 && box.right > eqno.getBoundingClientRect().left + 1
               && box.left < eqno.getBoundingClientRect().left)
        why = 'runs under the equation number';
      if (why) cut.push(`${div && div.id ? div.id : label(m)}: ${why}`);
    }
    return cut;
  };
  const scrollingCode = () => {
    const out = [];
    for (const pre of art.querySelectorAll('pre')) {
      if (pre.offsetParent === null) continue;
      if (pre.scrollWidth > pre.clientWidth + 1)
        out.push(`${pre.scrollWidth} > ${pre.clientWidth} px: ${(pre.innerText || '').split('\n')[0].slice(0, 50)}`);
    }
    return out;
  };
"""

READER_JS_1280 = "async () => {" + _COMMON_JS + r"""
  const out = {};
  out.cut_equations = equations();
  out.display_equations = art.querySelectorAll('mjx-container[display="true"]').length;
  out.math_box_px = Math.max(0, ...[...art.querySelectorAll('mjx-container[display="true"]')].map(m => m.clientWidth));
  // code: over-long lines in inputs and examples (not outputs); blocks that scroll
  const inputs = [...art.querySelectorAll('pre')].filter(p => !p.closest('.cell_output, .output'));
  out.long_code_lines = [];
  for (const pre of inputs)
    for (const line of (pre.textContent || '').split('\n'))
      if (line.length > %(max_line)d) out.long_code_lines.push(`(${line.length}) ${line.slice(0, 60)}`);
  out.scrolling_code = scrollingCode();
  out.code_blocks = art.querySelectorAll('pre').length;
  // figures at natural size
  out.downscaled_figures = [];
  for (const img of art.querySelectorAll('img')) {
    if (!img.complete) await new Promise(r => { img.onload = img.onerror = r; setTimeout(r, 5000); });
    const shown = img.getBoundingClientRect().width;
    if (img.naturalWidth && shown < img.naturalWidth - 2)
      out.downscaled_figures.push(`${(img.getAttribute('src') || '').split('/').pop().slice(0, 16)}: natural ${img.naturalWidth} px, shown ${Math.round(shown)} px`);
  }
  out.figures = art.querySelectorAll('img').length;
  // visible text without code and typeset math
  const copy = art.cloneNode(true);
  // blocks go; inline math and code leave a placeholder, so that "and $x$ and" is no doubled word
  copy.querySelectorAll('pre, .highlight, script, style, .cell_input, .cell_output, .eqno').forEach(e => e.remove());
  copy.querySelectorAll('mjx-container, code').forEach(e => e.replaceWith(document.createTextNode(' \u27e8\u00b7\u27e9 ')));
  document.body.appendChild(copy);
  const text = copy.innerText;
  copy.remove();
  const grab = (re) => [...text.matchAll(re)].map(m => text.slice(Math.max(0, m.index - 30), m.index + m[0].length + 30).replace(/\s+/g, ' '));
  out.raw_tex = grab(/\$|\\[A-Za-z]{2,}|\\[()\[\]]/g);
  out.raw_roles = grab(/\{(eq|doc|cite(:[a-z]+)?|ref|numref|math|download|term|abbr|exercise|solution|figure|note|bibliography|eval-rst)\}|^\s*(:::+|```+)|^:label:/gm);
  out.equation_labels = grab(/(^|[^\w#-])eq-[a-z0-9]+(-[a-z0-9]+)*\b/g);
  out.doubled_words = grab(/(?<![\w-])([A-Za-z]{2,})[ \u00a0]+\1\b/gi);   // not "plug-in in"
  // cross-references to chapters: "chapter N (Title)", never a bare title in a sentence
  const chapters = {};
  for (const a of document.querySelectorAll('nav.bd-docs-nav a.reference.internal')) {
    const m = (a.textContent || '').trim().match(/^(\d+)\.\s+(.*)$/);
    if (m) chapters[new URL(a.href, location.href).pathname] = {num: m[1], title: m[2].replace(/\s+/g, ' ')};
  }
  out.bare_titles = [];
  for (const a of art.querySelectorAll('a.reference.internal')) {
    const url = new URL(a.href, location.href);
    const ch = chapters[url.pathname];
    const text = (a.textContent || '').replace(/\s+/g, ' ').trim();
    if (!ch || url.hash || text !== ch.title) continue;
    // the text before the link in its sentence's block; a link that opens a list item or a
    // table cell is a heading of that item and reads (in a cell that book/_ext gave a column
    // label, hidden unless the row reads as a block on a phone, the cell's value is the item)
    const item = a.closest('.book-cell-value, li, td, th');
    const box = a.closest('p, li, td, th, dt, dd, figcaption, caption, h1, h2, h3, h4') || a.parentElement;
    const textBefore = (el) => {
      const range = document.createRange();
      range.setStart(el, 0);
      range.setEndBefore(a);
      return range.toString().replace(/\s+/g, ' ');
    };
    const before = textBefore(box);
    if (item && !textBefore(item).trim()) continue;
    // "chapter 5 (Title)", "chapter 5, Title", "chapter 5: Title"
    if (new RegExp(`(^|\\D)${ch.num}\\s*[(,:]\\s*$`).test(before)) continue;
    out.bare_titles.push(`"...${before.slice(-30)}[${text}]" (chapter ${ch.num})`);
  }
  // the favicon: declared and served
  const icon = document.querySelector('link[rel~="icon"]');
  out.favicon = null;
  if (icon) {
    try {
      const r = await fetch(icon.href);
      const type = r.headers.get('content-type') || '';
      out.favicon = r.ok && type.startsWith('image/') ? icon.getAttribute('href') : null;
    } catch (e) { out.favicon = null; }
  }
  out.page_width = document.documentElement.scrollWidth;
  return out;
}""".replace("%(max_line)d", str(MAX_LINE))

READER_JS_390 = "async () => {" + _COMMON_JS + r"""
  const W = document.documentElement.clientWidth;
  const out = {page_width: document.documentElement.scrollWidth, viewport: W, too_wide: []};
  if (out.page_width > W + 1) {
    // the widest elements that are not inside a box that scrolls or clips on its own
    for (const e of document.querySelectorAll('body *')) {
      const b = e.getBoundingClientRect();
      if (b.right <= W + 1 || e.offsetParent === null) continue;
      let contained = false;
      for (let p = e.parentElement; p && p !== document.body; p = p.parentElement) {
        const s = getComputedStyle(p);
        if (['auto', 'scroll', 'hidden', 'clip'].includes(s.overflowX) && p.getBoundingClientRect().right <= W + 1) { contained = true; break; }
      }
      if (!contained) out.too_wide.push(`${e.tagName.toLowerCase()}.${[...e.classList].join('.')} ends at ${Math.round(b.right)} px: ${(e.textContent || '').replace(/\s+/g, ' ').trim().slice(0, 40)}`);
      if (out.too_wide.length >= 10) break;
    }
  }
  // a figure that keeps a readable width scrolls in its own box (book.js), which must fit
  out.figures_wider_than_column = [...art.querySelectorAll('img')].map(i => i.closest('.book-figure-scroll') || i)
      .filter(b => b.getBoundingClientRect().right > art.getBoundingClientRect().right + 1).length;
  return out;
}"""

# print layout (emulated print media at an A4 column of 720 px): code wraps, equations whole
READER_JS_PRINT = "() => {" + _COMMON_JS + r"""
  return {cut_equations: equations(), scrolling_code: scrollingCode(),
          page_width: document.documentElement.scrollWidth, viewport: document.documentElement.clientWidth};
}"""

PRINT_WIDTH = 720

# tables (issue: the instructors' page at 390 px): every table of the article, after the folded
# code cells are opened; a table is *wider than its box* when its content (the table's laid-out
# width, or what overflows its cells) is wider than the part of it the reader sees: the client
# width of the nearest ancestor that scrolls or clips sideways (the theme wraps each table in a
# box that scrolls), or the article's column when none does -- the reader must scroll sideways
# inside the box, and the row labels scroll away.  A *prose* table is written in the text
# (Markdown, or generated by book/_ext); an *output* table is a notebook cell's output (a
# pandas DataFrame's HTML).  Each table is named by the id of its section and its header.
TABLES_JS = r"""() => {
  const art = document.querySelector('article.bd-article') || document.querySelector('article') || document.body;
  const out = {prose: 0, output: 0, hidden: 0, wide_prose: [], wide_output: [], widest_prose_px: 0};
  const artBox = art.getBoundingClientRect();
  for (const t of art.querySelectorAll('table')) {
    if (t.parentElement.closest('table')) continue;        // a table inside a table is measured with it
    const kind = t.closest('.cell_output, .output') ? 'output' : 'prose';
    if (t.offsetParent === null) { out.hidden++; continue; }
    out[kind]++;
    let box = null;
    for (let p = t.parentElement; p && p !== art.parentElement; p = p.parentElement)
      if (['auto', 'scroll', 'hidden', 'clip'].includes(getComputedStyle(p).overflowX)) { box = p; break; }
    const r = t.getBoundingClientRect();
    const content = Math.max(r.width, t.scrollWidth);
    let seen;
    if (box) {
      const b = box.getBoundingClientRect();
      seen = Math.min(box.clientWidth, artBox.right - b.left - box.clientLeft);
    } else seen = artBox.right - r.left;
    const section = (t.closest('section[id]') || {}).id || '';
    const head = [...t.querySelectorAll('thead th, thead td')].map(c => c.textContent.replace(/\s+/g, ' ').trim())
        .join(' | ').slice(0, 70);
    const name = `${section}: ${head || (t.textContent || '').replace(/\s+/g, ' ').trim().slice(0, 40)}`;
    if (kind === 'prose') out.widest_prose_px = Math.max(out.widest_prose_px, Math.round(content));
    if (content > seen + 1)
      out[kind === 'prose' ? 'wide_prose' : 'wide_output'].push(`${name} (${Math.round(content)} px in a box of ${Math.round(seen)} px)`);
  }
  return out;
}"""
