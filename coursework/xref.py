"""The book's numbers and references as the website prints them, read from the sources.

The student edition (:mod:`coursework.student`) opens each chapter on its own in JupyterLab,
where jupyterlab-myst numbers equations and exercises per notebook from 1 and cannot resolve a
reference to another chapter or a citation.  :func:`book_index` computes what Sphinx computes
for the website, without building it:

- a chapter's number: its position among the chapters of the numbered parts of ``_toc.yml``
  (numbered continuously across parts, as ``use_multitoc_numbering`` does), none elsewhere;
- an equation's number ``c.k``: the k-th labelled display equation of chapter ``c``
  (``$$ ... $$ (label)``; Sphinx numbers only labelled ones), in document order, solutions
  included;
- an exercise's number ``c.k``: the k-th ``{exercise}`` of the chapter; a figure's number
  ``c.k``: the k-th code cell with ``mystnb.figure.name`` metadata;
- a citation's text: author-year as sphinxcontrib-bibtex's ``author_year`` style prints it
  ("Rasmussen and Williams (2006)", "(Bishop, 2006)"), and the entry for a reference list.

tests/site/test_numbering.py compares these numbers with the built website, tests/site/test_pdf.py
with the PDF and tests/site/test_jupyterlab.py with what JupyterLab shows.
"""

from __future__ import annotations

import dataclasses
import pathlib
import re

import yaml

from . import book

#: the closing line of a labelled display equation, ``$$ (eq-label)``
EQ_LABEL_RE = re.compile(r"^\s*\$\$\s*\((?P<label>[^)\s]+)\)\s*$", re.M)
#: a MyST role with its content: {eq}`label`, {cite:t}`a,b`, {doc}`text <target>`
ROLE_RE = re.compile(r"\{(?P<role>eq|numref|ref|doc|cite(?::[a-z]+)?)\}`(?P<body>[^`]+)`")
EXPLICIT_RE = re.compile(r"^(?P<text>.*?)\s*<(?P<target>[^<>]+)>$", re.S)


@dataclasses.dataclass(frozen=True)
class Target:
    """Something a reference can point at: an equation, exercise, figure or chapter."""

    kind: str  # "equation", "exercise", "figure" or "chapter"
    doc: str  # the chapter's file stem, e.g. "05_laplace"
    number: str  # "5.3" (equations, exercises, figures); "5" (chapters); "" if unnumbered
    title: str = ""


@dataclasses.dataclass
class BookIndex:
    targets: dict  # label (or chapter stem) -> Target
    chapters: dict  # chapter stem -> Target(kind="chapter")
    bib: dict  # citation key -> pybtex Entry
    pages: dict = dataclasses.field(default_factory=dict)  # other pages (Markdown): stem -> Target

    def chapter_of(self, target):
        """The chapter stem a ``{doc}`` target names ("04_map_prior", "book/04_map_prior")."""
        stem = pathlib.PurePosixPath(target.strip()).name
        return stem if stem in self.chapters else None


CODE_LABEL_RE = re.compile(
    r"(?P<before>(?:\b(?:[Ee]q\.|[Ee]quation|[Ee]xercise|[Ff]ig\.|[Ff]igure) )|\(?)"
    rf"(?P<label>{book.CODE_LABEL_PATTERN})(?P<after>\)?)"
)


def number_code_labels(text, targets):
    """``text`` (a code cell) with the book's labels in its comments and strings written as the
    reader sees them numbered: an equation as "(5.9)" (in parentheses of its own only when it
    has none), an exercise as "Exercise 6.2", a figure
    as "Fig. 1.1"; a word before the label that already says what it is ("equation", "Eq.",
    "exercise", "Fig.") keeps its place.  Labels not in ``targets`` are left as they are.

    >>> t = {"eq-a": Target("equation", "x", "5.9"), "ex-b": Target("exercise", "x", "6.2")}
    >>> number_code_labels("# the step eq-a, see exercise ex-b (eq-a) (eq-a, eq-a) eq-zz", t)
    '# the step (5.9), see exercise 6.2 (5.9) (5.9, 5.9) eq-zz'
    >>> number_code_labels("x = 1  # Eq. eq-a for C; ex-b", t)
    'x = 1  # Eq. (5.9) for C; Exercise 6.2'
    """

    def number(m):
        target = targets.get(m.group("label"))
        if target is None or not target.number:
            return m.group(0)
        before, after = m.group("before"), m.group("after")
        if target.kind == "equation":  # in parentheses already: "(eq-a)", "(eq-a, eq-b)"
            if before == "(" or after == ")":
                return f"{before}{target.number}{after}"
            return f"{before}({target.number}){after}"
        named = before.strip() != "" and before != "("
        word = {"exercise": "Exercise", "figure": "Fig."}.get(target.kind, "")
        shown = target.number if named or not word else f"{word} {target.number}"
        return f"{before}{shown}{after}"

    return CODE_LABEL_RE.sub(number, text)


def _toc_docs(root, toc):
    """``[(docname, numbered)]`` in toc order, e.g. ``("book/05_laplace", True)``."""
    data = yaml.safe_load((pathlib.Path(root) / toc).read_text())
    out = []

    def walk(items, numbered):
        for item in items or []:
            if "file" in item:
                out.append((item["file"], numbered))
            for key in ("sections", "chapters"):
                if key in item:
                    walk(item[key], numbered)

    for part in data.get("parts", []):
        walk(part.get("chapters"), bool(part.get("numbered")))
    walk(data.get("chapters"), bool(data.get("options", {}).get("numbered")))
    return out


def equation_labels(nb):
    """The labels of a notebook's numbered display equations, in document order."""
    return [m.group("label") for c in nb.cells if c.cell_type == "markdown"
            for m in EQ_LABEL_RE.finditer(book.source(c))]


def figure_labels(nb):
    """The names of a notebook's numbered figures (code cells with ``mystnb.figure.name``)."""
    out = []
    for c in nb.cells:
        fig = (c.metadata.get("mystnb") or {}).get("figure") or {}
        if c.cell_type == "code" and isinstance(fig, dict) and fig.get("name"):
            out.append(fig["name"])
    return out


def book_index(root=book.ROOT, toc="_toc.yml", bibfiles=None):
    """Every chapter, equation, exercise and figure of the book with its website number, and
    the bibliography (``bibfiles``, default: ``bibtex_bibfiles`` of ``_config.yml``)."""
    root = pathlib.Path(root)
    targets, chapters, pages, n = {}, {}, {}, 0
    for docname, numbered in _toc_docs(root, toc):
        path = root / f"{docname}.ipynb"
        if not path.exists():
            md = root / f"{docname}.md"
            if md.exists():  # a page of the website that is not a notebook: its title
                title = next((line[2:].strip() for line in md.read_text().splitlines()
                              if line.startswith("# ")), md.stem)
                pages[md.stem] = Target("page", md.stem, "", title)
            continue
        nb = book.read(path)
        stem = path.stem
        c = ""
        if numbered:
            n += 1
            c = str(n)
        title = book.chapter_summary(nb)["title"]
        chapters[stem] = targets[stem] = Target("chapter", stem, c, title)

        def num(k):
            return f"{c}.{k}" if c else str(k)

        for k, label in enumerate(equation_labels(nb), 1):
            targets[label] = Target("equation", stem, num(k))
        for k, e in enumerate(book.exercises(nb), 1):
            if e.label:
                targets[e.label] = Target("exercise", stem, num(k), e.title)
        for k, label in enumerate(figure_labels(nb), 1):
            targets[label] = Target("figure", stem, num(k))
    return BookIndex(targets, chapters, read_bibliography(root, bibfiles), pages)


def read_bibliography(root, bibfiles=None):
    """Citation key -> pybtex entry of the book's .bib files ({} when there are none)."""
    root = pathlib.Path(root)
    if bibfiles is None:
        config = root / "_config.yml"
        data = yaml.safe_load(config.read_text()) if config.exists() else {}
        bibfiles = (data or {}).get("bibtex_bibfiles") or []
    entries = {}
    if not bibfiles:
        return entries
    from pybtex.database import parse_file

    for f in bibfiles:
        path = root / f
        if path.exists():
            entries.update(parse_file(str(path)).entries)
    return entries


# --------------------------------------------------------------------------- citations

def _plain(latex):
    from pybtex.richtext import Text

    return Text.from_latex(str(latex)).render_as("text")


def cite_authors(entry):
    """"Bishop", "Rasmussen and Williams", "Polson et al." (as the website prints them)."""
    people = entry.persons.get("author") or entry.persons.get("editor") or []
    names = [_plain(" ".join(p.prelast_names + p.last_names)) for p in people]
    if not names:
        return _plain(entry.fields.get("organization") or entry.fields.get("title", "?"))
    if len(names) == 1:
        return names[0]
    if len(names) == 2:
        return f"{names[0]} and {names[1]}"
    return f"{names[0]} et al."


def cite_text(entry, kind):
    """A citation as text: ``t`` "Rasmussen and Williams (2006)", ``p`` "Bishop, 2006" (the
    caller adds the parentheses around a group of parenthetical citations; the website
    prints the same with square brackets)."""
    year = entry.fields.get("year", "n.d.")
    if kind == "t":
        return f"{cite_authors(entry)} ({year})"
    return f"{cite_authors(entry)}, {year}"


def reference_entry(entry):
    """One entry of the reference list at the end of a notebook, as Markdown: authors, year,
    title, where it appeared (pybtex's plain style, rendered as text)."""
    from pybtex.plugin import find_plugin

    style = find_plugin("pybtex.style.formatting", "plain")()
    formatted = next(iter(style.format_entries([entry])))
    text = formatted.text.render_as("text")
    return f"{cite_authors(entry)} ({entry.fields.get('year', 'n.d.')}). {text}"
