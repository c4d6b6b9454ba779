"""Checks of the built HTML without a browser: accessibility (alt text or captions, heading
order), figures readable in the dark theme (opaque white background), the downloadable notebooks
are the executed ones, the search index finds chapter 5, the instructor page matches the
notebooks."""

import io
import json
import pathlib
import re

import nbformat
import pytest
from bs4 import BeautifulSoup

from _site import NOTEBOOK_PAGES, PAGES, ROOT, book


def _soup(html_dir, doc):
    return BeautifulSoup((html_dir / f"{doc}.html").read_text(encoding="utf-8"), "html.parser")


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


def _chapter_images(html_dir):
    images = set()
    for doc in NOTEBOOK_PAGES:
        for img in _article(_soup(html_dir, doc)).find_all("img"):
            src = img.get("src") or ""
            if "_images/" in src and src.endswith(".png"):
                images.add((html_dir / doc).parent.joinpath(src).resolve())
    return sorted(images)


def test_figures_have_an_opaque_white_background(html_dir):
    """Readable in the dark theme: a transparent figure would show black text on a dark page."""
    from PIL import Image

    images = _chapter_images(html_dir)
    if not images:
        pytest.skip("no figure in the built chapters")
    bad = []
    for path in images:
        im = Image.open(path)
        rgba = im.convert("RGBA")
        w, h = rgba.size
        corners = [rgba.getpixel((x, y)) for x in (0, w - 1) for y in (0, h - 1)]
        if any(c[3] < 255 or min(c[:3]) < 235 for c in corners):
            bad.append(f"{path.name}: corners {corners}")
    assert not bad, "figures without an opaque white background:\n" + "\n".join(bad)


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
    executed = html_dir.parent / "jupyter_execute" / f"{doc}.ipynb"
    assert target.read_bytes() == executed.read_bytes()
    # same cells as the source (solutions included: the website shows them folded)
    src = nbformat.read(str(ROOT / f"{doc}.ipynb"), as_version=4)
    assert [c.source for c in nb.cells] == [c.source for c in src.cells], \
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
    text = _article(_soup(html_dir, "book/instructors")).get_text(" ", strip=True)
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
