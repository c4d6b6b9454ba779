/* The course book's behaviour on top of sphinx-book-theme (registered in _config.yml,
   html_js_files; tests in tests/site/test_browser.py).

   1. Solutions.  sphinx-exercise puts a link to the exercise in each solution's title bar
      ("Solution to Exercise 5.1"), and sphinx-togglebutton folds the solution and listens for
      clicks on that bar.  A click on the link jumped to the exercise and left the solution
      closed; a click on the link or on the chevron's <path> threw a TypeError in
      togglebutton.js (it finds its button only for a few kinds of click target).  Here a click
      anywhere on the title bar of a folded admonition (link, text, chevron or button) opens or
      closes it, and togglebutton's own handler never runs.
   2. The fold buttons say what they do ("Show the solution to Exercise 5.1") instead of
      togglebutton's "Toggle hidden content", and follow the state of their admonition.
   3. Figures (SVG, their text kept as text) on a narrow screen: a figure is never shown so
      small that its smallest text is under 10 CSS px; when the column is narrower than that
      needs, the figure keeps that width and scrolls sideways in its own box, with a visible
      scrollbar.  A display equation that MathJax could not break and that scrolls gets the
      same visible scrollbar (class book-scroll-cue); when the column's width changes, MathJax
      breaks the equations again for the new width. */

(() => {
  "use strict";

  // 4. Where MathJax may break a display equation (its automatic line breaking at the column's
  //    width).  MathJax breaks at operators; a few of those breaks misread, and which of them
  //    MathJax picks depends on a few pixels of width, so they are ruled out before layout, in
  //    the MathML of every formula (a TeX post-filter), at every width:
  //    - an opening bracket that follows an identifier, a function (after its invisible
  //      application), a fraction or a scripted matrix -- "p_n" | "(1 - p_n)" reads as a
  //      product, "nabla^2 f" | "(w)" loses its argument;
  //    - inside the base of a scripted expression, or inside a bracket that carries a
  //      script -- "(K" | "+ sigma^2 I)^{-1}" parts an inverse from its matrix;
  //    - at a thin space between factors (\, \; -- a \quad between two parts may break);
  //    - inside the left-hand cell of an aligned row (its right-hand cells break instead).
  //    The book's tests (tests/site/test_reading.py) look for such breaks at 390 and 1280 px.
  const OPEN_BRACKETS = new Set(["(", "[", "{", "\u27e8", "\u2016", "|", "\u230a", "\u2308"]);
  const CLOSE_BRACKETS = {")": "(", "]": "[", "}": "{", "\u27e9": "\u27e8", "\u2016": "\u2016", "|": "|"};
  const INVISIBLE_OPS = new Set(["\u2061", "\u2062", "\u2063", "\u2064"]);
  // an explicit break (\break, a newline) is kept
  const noBreak = (x) => {
    if (x.attributes.getExplicit("linebreak") !== "newline") x.attributes.set("linebreak", "nobreak");
  };
  const noBreakIn = (node) => node.walkTree((x) => { if (x.isKind("mo") || x.isKind("mspace")) noBreak(x); });
  const isOperator = (n) => n.isKind("mo") && !INVISIBLE_OPS.has(n.getText());
  const keepBreaksWhereTheyRead = ({data}) => {
    data.root.walkTree((node) => {
      if (node.isKind("mo") && OPEN_BRACKETS.has(node.getText())) {
        // what stands before the bracket on its line: climb while it opens its row
        let n = node;
        while (n.parent && n.parent.childNodes.indexOf(n) === 0
               && (n.parent.isKind("mrow") || n.parent.isKind("TeXAtom") || n.parent.isInferred)) n = n.parent;
        const row = n.parent ? n.parent.childNodes : [];
        let i = row.indexOf(n) - 1;
        while (i >= 0 && row[i].isKind("mspace")) i--;
        if (i >= 0 && !isOperator(row[i])) {
          // nor at a space between them ("(2 pi)^{d/2}\," | "|A|")
          for (let k = i; k < row.indexOf(n); k++) if (row[k].isKind("mspace")) noBreak(row[k]);
          node.attributes.set("linebreak", "nobreak");
        }
      } else if (node.isKind("mo") && INVISIBLE_OPS.has(node.getText())) {
        // nor right after a function's invisible application ("arg" | "min_w ...")
        node.attributes.set("linebreak", "nobreak");
        const row = node.parent ? node.parent.childNodes : [];
        const next = row[row.indexOf(node) + 1];
        if (next && next.isEmbellished) next.coreMO().attributes.set("linebreak", "nobreak");
      } else if ((node.isKind("msub") || node.isKind("msup") || node.isKind("msubsup"))
                 && node.childNodes[0] && !node.childNodes[0].isToken) {
        noBreakIn(node.childNodes[0]);
      } else if ((node.isKind("msub") || node.isKind("msup") || node.isKind("msubsup"))
                 && node.childNodes[0] && node.childNodes[0].isKind("mo")
                 && CLOSE_BRACKETS[node.childNodes[0].getText()] && node.parent) {
        // nor inside a bracket that carries a script: "(K" | "+ sigma^2 I)^{-1}" parts an
        // inverse (a transpose, a power) from its matrix
        const row = node.parent.childNodes;
        const open = CLOSE_BRACKETS[node.childNodes[0].getText()];
        let depth = 0;
        for (let i = row.indexOf(node) - 1; i >= 0; i--) {
          const t = row[i].isKind("mo") ? row[i].getText() : null;
          if (t === node.childNodes[0].getText() && t !== open) depth++;
          if (t === open) { if (depth === 0) break; depth--; }
          noBreakIn(row[i]);
        }
      } else if (node.isKind("mspace") && !/^[1-9][\d.]*em$/.test(String(node.attributes.get("width")))) {
        // nor at a thin space between factors ("p_n (1 - p_n)\," | "x_n x_n^T"); a \quad breaks
        noBreak(node);
      } else if (node.isKind("mtable")) {
        for (const tr of node.childNodes) {
          const cells = tr.childNodes.slice(tr.isKind("mlabeledtr") ? 1 : 0);
          if (cells.length > 1) cells.forEach((cell, k) => { if (k % 2 === 0) noBreakIn(cell); });
        }
      }
    });
  };
  const mathjax = (window.MathJax = window.MathJax || {});
  mathjax.startup = mathjax.startup || {};
  const ready = mathjax.startup.ready;
  mathjax.startup.ready = () => {
    if (ready) ready(); else window.MathJax.startup.defaultReady();
    for (const jax of window.MathJax.startup.input || []) {
      if (jax.postFilters && jax.name === "TeX") jax.postFilters.add(keepBreaksWhereTheyRead, 100);
    }
  };

  const titleText = (title) => {
    const copy = title.cloneNode(true);
    copy.querySelectorAll("button, svg").forEach((e) => e.remove());
    return (copy.textContent || "").replace(/\s+/g, " ").trim();
  };

  const labelButton = (button) => {
    const box = document.getElementById(button.dataset.target || "");
    const title = button.closest(".admonition-title");
    if (!box || !title) return;
    const what = titleText(title) || "content";
    const hidden = box.classList.contains("toggle-hidden");
    const name = `${hidden ? "Show" : "Hide"} the ${what.charAt(0).toLowerCase()}${what.slice(1)}`;
    if (button.getAttribute("aria-label") !== name) button.setAttribute("aria-label", name);
    button.title = name;
  };

  const toggle = (button) => {
    if (typeof window.toggleHidden === "function") {
      window.toggleHidden(button);
    } else {
      // togglebutton.js absent: the same effect on the classes it uses
      const box = document.getElementById(button.dataset.target || "");
      if (!box) return;
      const hidden = box.classList.toggle("toggle-hidden");
      button.classList.toggle("toggle-button-hidden", hidden);
      button.setAttribute("aria-expanded", String(!hidden));
    }
    labelButton(button);
  };

  // capture phase on the document: runs before the listener togglebutton puts on the title
  document.addEventListener("click", (event) => {
    const target = event.target instanceof Element ? event.target : null;
    const title = target && target.closest(".admonition.toggle > .admonition-title");
    if (!title) return;
    const button = title.querySelector("button.toggle-button");
    if (!button) return;
    event.preventDefault();            // the link to the exercise does not navigate
    event.stopImmediatePropagation();  // togglebutton's handler does not run
    event.stopPropagation();
    toggle(button);
  }, true);

  const labelAll = () => document.querySelectorAll(".admonition.toggle > .admonition-title button.toggle-button").forEach(labelButton);

  // togglebutton adds its buttons on DOMContentLoaded; label them after it, and again whenever
  // an admonition is opened or closed some other way (printing opens them all)
  const start = () => {
    labelAll();
    // the theme's header buttons: a name that contains what they show (WCAG 2.5.3, axe-core
    // label-content-name-mismatch): the search field reads "Search Ctrl+K" as it shows, the
    // colour-mode button's icons are decoration of its name
    document.querySelectorAll(".search-button-field[aria-label]").forEach((b) => b.removeAttribute("aria-label"));
    // (Font Awesome replaces the <i> icons by <svg> with a <title> later: done again then)
    const quietIcons = (button) => button.querySelectorAll("i, svg").forEach((icon) => {
      if (icon.getAttribute("aria-hidden") === "true" && !icon.querySelector("title")) return;
      icon.setAttribute("aria-hidden", "true");
      icon.removeAttribute("title");
      icon.removeAttribute("role");
      icon.removeAttribute("aria-labelledby");
      icon.querySelectorAll("title").forEach((t) => t.remove());
    });
    document.querySelectorAll(".theme-switch-button").forEach((button) => {
      quietIcons(button);
      new MutationObserver(() => quietIcons(button)).observe(button, {childList: true, subtree: true});
    });
    const observer = new MutationObserver((mutations) => {
      for (const m of mutations) {
        const button = m.target.querySelector && m.target.querySelector(":scope > .admonition-title button.toggle-button");
        if (button) labelButton(button);
      }
    });
    document.querySelectorAll(".admonition.toggle").forEach((box) => observer.observe(box, {attributes: true, attributeFilter: ["class"]}));
  };
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", () => setTimeout(start, 0));
  } else {
    setTimeout(start, 0);
  }

  // ------------------------------------------------------------------ 3. figures, wide equations
  const MIN_TEXT_PX = 10;
  const svgText = new Map();     // src -> {width: viewBox width, smallest: smallest font size}, in SVG units

  const readSvg = async (src) => {
    if (!svgText.has(src)) {
      svgText.set(src, fetch(src).then((r) => r.text()).then((text) => {
        const svg = new DOMParser().parseFromString(text, "image/svg+xml").documentElement;
        const box = (svg.getAttribute("viewBox") || "").trim().split(/[\s,]+/).map(Number);
        let smallest = Infinity;
        for (const t of svg.querySelectorAll("text, tspan")) {
          const m = (t.getAttribute("style") || "").match(/font(?:-size)?:[^;]*?([\d.]+)px/);
          const size = m ? parseFloat(m[1]) : parseFloat(t.getAttribute("font-size") || "");
          if (size > 0 && t.textContent.trim()) smallest = Math.min(smallest, size);
        }
        return box.length === 4 && box[2] > 0 && smallest < Infinity ? {width: box[2], smallest} : null;
      }).catch(() => null));
    }
    return svgText.get(src);
  };

  const fitFigure = async (img) => {
    const info = await readSvg(img.currentSrc || img.src);
    if (!info) return;
    let box = img.parentElement;
    if (!box.classList.contains("book-figure-scroll")) {
      box = document.createElement("div");
      box.className = "book-figure-scroll";
      img.replaceWith(box);
      box.appendChild(img);
    }
    const natural = img.naturalWidth || info.width * 4 / 3;
    const needed = Math.min(natural, MIN_TEXT_PX / info.smallest * info.width);
    const tooNarrow = box.clientWidth + 0.5 < needed;
    img.style.minWidth = tooNarrow ? `${Math.ceil(needed)}px` : "";
    box.classList.toggle("book-scrolls", tooNarrow);
    box.tabIndex = tooNarrow ? 0 : -1;     // a box that scrolls can be scrolled from the keyboard
    if (tooNarrow) box.setAttribute("aria-label", `${img.alt || "Figure"} (scroll sideways to see all of it)`);
    else box.removeAttribute("aria-label");
  };

  const markWideEquations = () => {
    for (const m of document.querySelectorAll('article mjx-container[display="true"]')) {
      m.classList.toggle("book-scroll-cue", m.scrollWidth > m.clientWidth + 1);
    }
  };

  const fitAll = () => {
    document.querySelectorAll("article img").forEach((img) => {
      if (!/\/_images\/[^/]*\.svg($|\?)/.test(img.currentSrc || img.src)) return;
      if (img.complete) fitFigure(img); else img.addEventListener("load", () => fitFigure(img), {once: true});
    });
    markWideEquations();
  };
  // MathJax breaks equations for the width their box had when it typeset them: when the
  // column's width changes (a phone turned, a window resized), measure and break them again
  let resizeTimer = null;
  let lastWidth = document.documentElement.clientWidth;
  const relayout = async () => {
    const width = document.documentElement.clientWidth;
    const mj = window.MathJax;
    if (width !== lastWidth && mj && mj.startup && mj.startup.document && mj._ && mj._.core && mj._.core.MathItem) {
      lastWidth = width;
      try {
        await mj.startup.promise;
        await mj.startup.document.rerenderPromise(mj._.core.MathItem.STATE.METRICS);
      } catch (e) { /* the equations stay as they were */ }
    }
    fitAll();
  };
  window.addEventListener("resize", () => { clearTimeout(resizeTimer); resizeTimer = setTimeout(relayout, 250); });
  const afterMath = () => {
    const mj = window.MathJax;
    if (mj && mj.startup && mj.startup.promise) mj.startup.promise.then(markWideEquations);
  };
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", () => { fitAll(); afterMath(); });
  } else {
    fitAll();
    afterMath();
  }
})();
