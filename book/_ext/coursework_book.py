"""Local Sphinx extension of the course book (registered in _config.yml, ``local_extensions``).

1. ``build-finished``: the download button of a notebook page links to ``_sources/<doc>.ipynb``,
   which Sphinx copies from the *unexecuted* source.  This copies the executed notebook that
   MyST-NB wrote to ``<build>/jupyter_execute/<doc>.ipynb`` over it, so a reader who downloads a
   chapter gets its outputs and figures, with lines at the top of its first code cell that stop
   with the install command when blrlib is missing.  Beside them: the blrlib wheel and a
   ``requirements.txt`` (what the chapters import, pinned), ``NOTEBOOK_ARCHIVE`` (every executed
   chapter, the wheel and the requirements in one zip; the intro page links them with the
   roles ``{notebook-archive}``, ``{blrlib-wheel}`` and ``{notebook-requirements}``), and the
   whole-book PDF of ``make pdf`` (``<build>/latex/book.pdf``) as ``BOOK_PDF`` when it exists.
2. Directives for the instructor page, generated from the chapters at build time:
   ``{coursework-chapters}`` (title, estimated time, learning goals of every chapter) and
   ``{coursework-points}`` (every exercise with its grade id and points).
3. Two fixes for errors that the browser test found in the console of every page:
   sphinx-thebe 0.3.1 adds its inline configuration script twice (``const THEBE_JS_URL``
   declared twice is a SyntaxError), so duplicate scripts are dropped from each page; and the
   theme's ``default_mode`` is empty, which pydata-sphinx-theme reports on a reader's first
   visit ("Got invalid theme mode"), so it is set to ``auto`` (follow the reader's system).
4. The page furniture: the header bar that pydata-sphinx-theme adds with a second search field
   (the sidebar has one already) is switched off, and every page's download menu gets a link to
   the whole-book PDF when there is one (never a dead link).
5. The API page: blrlib docstrings name the book's equations by label (``eq-sigmoid`` in double
   backquotes); ``autodoc-process-docstring`` turns each into an ``:eq:`` reference, so the page
   shows the equation number, linked.
6. The bibliography: a pybtex style ``book_author_year`` whose labels are author-year ("Bishop
   2006", "Rasmussen and Williams 2006", "Polson et al. 2013"), sorted by author and year, the
   same form as the author-year citations in the text; TeX math in an entry is typeset; its
   entries are list items of their list (ARIA).
7. Figures on the website are SVG with their text kept as text: the kernels of an HTML build
   get an IPython profile and a matplotlibrc of the build's own (the notebooks are unchanged).
   The profile's startup file (``kernel_startup.py``, which ``make pdf`` installs too) lets
   pandas print tables up to the code column's 88 characters in one block.
8. Empty header cells of notebook output tables (pandas) become ordinary cells.  Tables on a
   phone: a table of four columns or more (the instructors' generated tables, the notation
   tables) reads as one block per row, each value beside its column's name (labels written
   here, layout in book.css); a code word in a table cell breaks only after "_" or "(" or
   before "." (``<wbr>``), never mid-name.
9. The PDF (LaTeX builder only): part pages titled once ("Part I" and the caption without its
   own "Part I:"); "Solution to Exercise 5.1" with its space; every wide table's columns wrap
   within the text width (column widths from the cells' text, each column at least as wide
   as its longest code word, which LaTeX would otherwise break at "_", "(" or ".");
   exercises numbered per chapter (5.1) as on the website, not per section (jupyter-book's LaTeX sets ``numfig_secnum_depth``
   to 2 for the equations, which sphinx-exercise would number 5.10.1); the appendix chapters
   lettered (the website does not number them); the answer code of the exercises printed
   (the website folds it, ``hide-input``; the PDF cannot unfold).
"""

from __future__ import annotations

import os
import pathlib
import re
import shutil
import unicodedata
import zipfile

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.util import logging, texescape
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util.docutils import SphinxDirective
from sphinx.util.osutil import relative_uri

from coursework import book
from literal_blocks import set_literal_text

logger = logging.getLogger(__name__)

#: every executed chapter notebook in one zip, at the root of the HTML output (intro page links it)
NOTEBOOK_ARCHIVE = "bayesian-logistic-regression-notebooks.zip"
#: the whole book as one PDF (``make pdf``), at the root of the HTML output (download menu)
BOOK_PDF = "bayesian-logistic-regression.pdf"


def _toc_chapters(env):
    toc = getattr(env.config, "external_toc_path", None) or "_toc.yml"
    srcdir = pathlib.Path(env.srcdir)
    toc_path = pathlib.Path(toc) if pathlib.Path(toc).is_absolute() else srcdir / toc
    return book.toc_notebooks(srcdir, toc_path)


def _docname(env, path):
    return "/" + path.relative_to(pathlib.Path(env.srcdir)).with_suffix("").as_posix()


def _cell(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


#: the class of a table whose rows read as blocks on a narrow screen (book.css), each cell
#: labelled with its column's name (a label element, written by the HTML translator)
STACKED_TABLE = "book-stacked-table"
#: a table of the text with this many columns or more gets that layout on the website: the
#: instructors' generated tables (5 and 6 columns) and the notation tables (4) were 380 to
#: 680 px wide at 390 px (a 358 px column); the chapters' tables have 3 columns and wrap
STACK_COLUMNS = 4


class StackWideTables(SphinxPostTransform):
    """A table of ``STACK_COLUMNS`` columns or more (with a header row) gets ``STACKED_TABLE``
    in the HTML (only: the PDF's tables are laid out by LatexTableColumns)."""

    default_priority = 900
    formats = ("html",)

    def run(self, **kwargs):
        for table in self.document.findall(nodes.table):
            group = next((c for c in table.children if isinstance(c, nodes.tgroup)), None)
            if (group is not None and group.get("cols", 0) >= STACK_COLUMNS
                    and any(isinstance(c, nodes.thead) for c in group.children)):
                table["classes"].append(STACKED_TABLE)


class _CourseworkDirective(SphinxDirective):
    has_content = False

    def chapters(self):
        out = []
        for path in _toc_chapters(self.env):
            self.env.note_dependency(str(path))
            out.append((path, book.chapter_summary(book.read(path))))
        return out

    def render(self, text):
        container = nodes.container(classes=["coursework-generated"])
        self.state.nested_parse(StringList(text.splitlines(), source=self.env.docname),
                                self.content_offset, container)
        return container.children


class CourseworkChapters(_CourseworkDirective):
    """Per chapter: estimated time, coding and pen-and-paper exercises with their points,
    learning goals."""

    def run(self):
        lines = ["| Chapter | Estimated time | Coding exercises | Points (graded automatically) "
                 "| Pen-and-paper exercises | Points (graded by hand, with written parts) |",
                 "| :-- | --: | --: | --: | --: | --: |"]
        goals = []
        total_min = total_auto = total_hand = 0
        for path, s in self.chapters():
            doc = _docname(self.env, path)
            coding = [e for e in s["exercises"] if e.coding]
            paper = [e for e in s["exercises"] if e.by_hand]
            auto = sum(e.points for e in coding)
            hand = sum(p.points for e in s["exercises"] for p in e.hand_parts)
            total_min += s["minutes"]
            total_auto += auto
            total_hand += hand
            mark = "" if s["stated"] else "*"
            lines.append(f"| {{doc}}`{doc}` | {s['minutes']} min{mark} | {len(coding)} | {auto:g} "
                         f"| {len(paper)} | {hand:g} |")
            goals.append(f"- {{doc}}`{doc}` (about {s['minutes']} min{mark})")
            goals += [f"  - {g}" for g in s["goals"]] or ["  - (no learning goals listed)"]
        lines.append(f"| **Total** | **{total_min / 60:.1f} h** | | **{total_auto:g}** | | **{total_hand:g}** |")
        text = "\n".join(lines) + "\n\n" + (
            "Times marked * are estimates (100 words of prose a minute, a minute per code cell, "
            "15 minutes per coding exercise, 5 more with a written part, and 10 per pen-and-paper "
            "exercise); the others are stated by "
            "the chapter.\n\nLearning goals, as each chapter states them:\n\n") + "\n".join(goals)
        return self.render(text)


class CourseworkPoints(_CourseworkDirective):
    """Every exercise of the book: label (linked), title, the cell that is graded (the check
    cell.s grade id, or the answer cell of a pen-and-paper exercise), its points, how it is graded."""

    def run(self):
        lines = ["| Exercise | Title | Graded cell (grade id) | Points | Graded |",
                 "| :-- | :-- | :-- | --: | :-- |"]
        auto = hand = 0.0
        for _path, s in self.chapters():
            for e in s["exercises"]:
                if e.coding:
                    auto += e.points
                    lines.append(f"| {{ref}}`{e.label}` | {_cell(e.title)} | `{e.check_id}` "
                                 f"| {e.points:g} | automatically |")
                    for part in e.hand_parts:  # its written part
                        hand += part.points
                        lines.append(f"| {{ref}}`{e.label}`, in words | {_cell(e.title)} "
                                     f"| `{part.answer_id}` | {part.points:g} | by hand |")
                elif e.by_hand:
                    hand += e.points
                    lines.append(f"| {{ref}}`{e.label}` | {_cell(e.title)} | `{e.answer_id}` "
                                 f"| {e.points:g} | by hand |")
                else:
                    lines.append(f"| {{ref}}`{e.label}` | {_cell(e.title)} | (none) | – | not graded |")
        lines.append(f"| **Total** | | | **{auto + hand:g}** | **{auto:g} automatically, {hand:g} by hand** |")
        return self.render("\n".join(lines))


def copy_executed_notebooks(app, exception):
    """The downloads of the website: each chapter's executed notebook (first code cell with the
    install line, :func:`with_install_check`), the zip of all of them, the blrlib wheel and the
    requirements file beside it (:data:`REQUIREMENTS`), and the PDF when ``make pdf`` made one."""
    if exception is not None or app.builder.format != "html":
        return
    outdir = pathlib.Path(app.outdir)
    executed = outdir.parent / "jupyter_execute"
    wheel = build_blrlib_wheel(pathlib.Path(app.srcdir), outdir)
    archived = []
    for docname in sorted(app.env.found_docs):
        if pathlib.Path(app.env.doc2path(docname)).suffix != ".ipynb":
            continue
        src = executed / f"{docname}.ipynb"
        dst = outdir / "_sources" / f"{docname}.ipynb"
        if not src.exists():
            logger.warning(f"coursework_book: no executed notebook {src} for the download of {docname}")
            continue
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_text(with_install_check(src.read_text(encoding="utf-8"), wheel.name), encoding="utf-8")
        archived.append((dst, docname))
    requirements = outdir / REQUIREMENTS
    requirements.write_text(notebook_requirements([p for p, _ in archived], wheel.name), encoding="utf-8")
    write_notebook_archive(outdir / NOTEBOOK_ARCHIVE, archived, extra=[wheel, requirements])
    pdf = _made_pdf(app)
    if pdf is not None and pdf != outdir / BOOK_PDF:
        shutil.copyfile(pdf, outdir / BOOK_PDF)


#: beside the notebooks' zip on the website (and in it): what the chapters import, pinned
REQUIREMENTS = "requirements.txt"

#: the first lines of every downloadable chapter's first code cell; {message} is one line
INSTALL_CHECK = """\
import importlib.util  # blrlib, the book's library: if it is missing, say how to install it

if importlib.util.find_spec("blrlib") is None:
    class BlrlibMissing(ModuleNotFoundError):
        def _render_traceback_(self):  # Jupyter shows this one line, not a traceback
            return [str(self)]

    raise BlrlibMissing({message!r})

"""


def install_message(wheel_name):
    return (f"blrlib is not installed: put {REQUIREMENTS} and {wheel_name} (from the book's website, "
            f"beside the notebooks' zip) in this notebook's folder and run  "
            f"%pip install -r {REQUIREMENTS}  in a cell (or pip install -r {REQUIREMENTS} in a terminal there)")


def with_install_check(notebook_json, wheel_name):
    """The notebook (JSON text) with :data:`INSTALL_CHECK` at the top of its first code cell:
    a reader who downloaded one chapter and runs it without blrlib gets one line with the
    command that installs it, instead of a ModuleNotFoundError deep in a traceback."""
    import json

    nb = json.loads(notebook_json)
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            cell["source"] = INSTALL_CHECK.format(message=install_message(wheel_name)) + source
            break
    return json.dumps(nb, indent=1, ensure_ascii=False) + "\n"


def build_blrlib_wheel(srcdir, outdir):
    """blrlib as a wheel at the root of the website, built from a copy of the sources (so the
    build leaves nothing in the repository) without network (``--no-build-isolation``)."""
    import subprocess
    import sys
    import tempfile

    for old in outdir.glob("blrlib-*.whl"):
        old.unlink()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        src = tmp / "src"
        src.mkdir()
        ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
        for name in ("blrlib", "coursework"):
            shutil.copytree(srcdir / name, src / name, ignore=ignore)
        for name in ("pyproject.toml", "README.md", "LICENSE"):
            if (srcdir / name).exists():
                shutil.copyfile(srcdir / name, src / name)
        env = dict(os.environ, SOURCE_DATE_EPOCH="1767225600", PIP_DISABLE_PIP_VERSION_CHECK="1")
        done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                               "--wheel-dir", str(tmp / "dist"), str(src)], env=env, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"coursework_book: building the blrlib wheel failed:\n{done.stdout}{done.stderr}")
        (wheel,) = (tmp / "dist").glob("blrlib-*.whl")
        if wheel.name != blrlib_wheel_name(srcdir):          # the intro page links that name
            raise RuntimeError(f"coursework_book: built {wheel.name}, expected {blrlib_wheel_name(srcdir)}")
        return pathlib.Path(shutil.copyfile(wheel, outdir / wheel.name))


def notebook_requirements(notebooks, wheel_name):
    """The requirements file of the downloads: every distribution a chapter imports (its
    import statements, read with ``ast``), pinned to the version the website was built with,
    and the blrlib wheel."""
    import ast
    import importlib.metadata
    import json
    import sys

    modules = set()
    for path in notebooks:
        for cell in json.loads(pathlib.Path(path).read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] != "code":
                continue
            source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            lines = [line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))]
            try:
                tree = ast.parse("\n".join(lines))
            except SyntaxError:
                continue
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    modules.update(a.name.split(".")[0] for a in node.names)
                elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                    modules.add(node.module.split(".")[0])
    dists = importlib.metadata.packages_distributions()
    pins = set()
    for module in modules - set(sys.stdlib_module_names) - {"blrlib", "coursework"}:
        for dist in dists.get(module, []):
            pins.add(f"{dist}=={importlib.metadata.version(dist)}")
    return ("# What the book's chapters import, at the versions the website was built with (Python 3.11),\n"
            "# and blrlib, the book's library. In a folder with this file, the wheel and the notebooks:\n"
            f"#     pip install -r {REQUIREMENTS}\n"
            + "".join(f"{p}\n" for p in sorted(pins, key=str.lower)) + f"./{wheel_name}\n")


def write_notebook_archive(path, notebooks, extra=()):
    """Zip the executed notebooks (``(file, docname)`` pairs) and the ``extra`` files (the wheel
    and the requirements) with a fixed timestamp, so the same notebooks give the same archive."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        members = [(src, f"{pathlib.PurePosixPath(docname).name}.ipynb") for src, docname in notebooks]
        members += [(f, pathlib.Path(f).name) for f in extra]
        for src, name in members:
            info = zipfile.ZipInfo(f"bayesian-logistic-regression/{name}", date_time=(2026, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, pathlib.Path(src).read_bytes())


def _made_pdf(app):
    """The whole-book PDF of ``make pdf`` (``<build>/latex/book.pdf``, or its copy beside the
    website), or None."""
    for pdf in (pathlib.Path(app.outdir).parent / "latex" / "book.pdf", pathlib.Path(app.outdir) / BOOK_PDF):
        if pdf.exists():
            return pdf
    return None


def blrlib_wheel_name(srcdir):
    """The file name of the wheel :func:`build_blrlib_wheel` makes (version from pyproject.toml)."""
    import tomllib

    project = tomllib.loads((pathlib.Path(srcdir) / "pyproject.toml").read_text())["project"]
    return f"{project['name']}-{project['version']}-py3-none-any.whl"


def _root_file_role(filename):
    """A role that links its text to ``filename`` (or a callable of the source folder giving it)
    at the root of the HTML output."""

    def role(name, rawtext, text, lineno, inliner, options=None, content=()):
        env = inliner.document.settings.env
        builder = env.app.builder
        try:
            here = builder.get_target_uri(env.docname)
        except Exception:                                  # builders without page URIs (LaTeX)
            here = env.docname + ".html"
        target = filename(env.srcdir) if callable(filename) else filename
        node = nodes.reference(rawtext, text, refuri=relative_uri(here, target), classes=["book-download"])
        return [node], []

    return role


#: ``{notebook-archive}`text``` links ``text`` to the archive of executed notebooks
notebook_archive_role = _root_file_role(NOTEBOOK_ARCHIVE)


def fix_page_scripts(app, pagename, templatename, context, doctree):
    scripts, seen, unique = context.get("script_files") or [], set(), []
    for js in scripts:
        key = (getattr(js, "filename", None) or None, repr(sorted(getattr(js, "attributes", {}).items())))
        if key not in seen:
            seen.add(key)
            unique.append(js)
    scripts[:] = unique
    if not context.get("default_mode"):
        context["default_mode"] = "auto"


def note_book_pdf(app, config):
    """Whether ``make pdf`` made the whole-book PDF, in the HTML context: when that changes,
    Sphinx writes every page again (without reading and executing the chapters again), so the
    download menu links the PDF exactly when the site has it."""
    config.html_context = {**(config.html_context or {}), "book_pdf": _made_pdf(app) is not None}


def add_book_pdf_button(app, pagename, templatename, context, doctree):
    """Add "the whole book (.pdf)" to the download menu of every page (after the theme's own
    buttons, priority 501), when there is a PDF (``make pdf``): never a dead link."""
    if not context.get("book_pdf"):
        return
    for group in context.get("header_buttons") or []:
        if group.get("label") == "download-buttons":
            group["buttons"].append({
                "type": "link",
                "url": context["pathto"](BOOK_PDF, 1),
                "text": "book .pdf",
                "tooltip": "Download the whole book as a PDF",
                "icon": "fas fa-book",
                "label": "download-book-pdf-button",
            })


def drop_header_search(app, config):
    """pydata-sphinx-theme puts a search field in a header bar of its own unless
    ``navbar_persistent`` is set; the sidebar already has the book's search field."""
    options = config.html_theme_options
    options.setdefault("navbar_persistent", [])


# --------------------------------------------------------------- API page: equation labels

EQ_LABEL_RE = re.compile(r"``(eq-[A-Za-z0-9_-]+)``")


def link_equation_labels(app, what, name, obj, options, lines):
    """``eq-sigmoid`` in a docstring becomes ``:eq:`eq-sigmoid``` (rendered "(1.2)", linked)."""
    for i, line in enumerate(lines):
        lines[i] = EQ_LABEL_RE.sub(r":eq:`\1`", line)


# --------------------------------------------------------------- PDF: references to exercises

class LatexExerciseReferences(SphinxPostTransform):
    """In the PDF, a reference to an exercise of another page (the instructor page's table)
    points at the label sphinx-exercise writes (``exercise:<label>``); Sphinx's own
    ``docname:label`` is never defined there, and LaTeX would print "??"."""

    default_priority = 30          # after the references are resolved (10) and sphinx-exercise (22)
    formats = ("latex",)

    def run(self, **kwargs):
        registry = getattr(self.env, "sphinx_exercise_registry", {})
        for node in list(self.document.findall(nodes.reference)):
            uri = node.get("refuri", "")
            label = uri.split("#", 1)[1] if uri.startswith("%") and "#" in uri else None
            if not label or label not in registry or "exercise" not in type(registry[label].get("node")).__name__:
                continue
            text = texescape.escape(node.astext(), self.config.latex_engine)
            node.replace_self(nodes.raw("", f"\\hyperref[exercise:{label}]{{{text}}}", format="latex"))


# --------------------------------------------------------------- PDF: parts, solutions, tables

PART_PREFIX_RE = re.compile(r"^Part\s+[IVXLC]+\s*[:.]\s*")


class LatexPartTitles(SphinxPostTransform):
    """The toc's captions "Part I: Bayesian logistic regression" become LaTeX parts, which
    print "Part I" themselves: the part page keeps the caption without its prefix.  (After
    sphinx-jupyterbook-latex made the parts, priority 700.)"""

    default_priority = 800
    formats = ("latex",)

    def run(self, **kwargs):
        for section in list(self.document.findall(nodes.section)):
            if not section.children or not isinstance(section.children[0], nodes.title):
                continue
            title = section.children[0]
            text = title.astext()
            if section.get("docname") != text:
                continue
            if PART_PREFIX_RE.match(text):
                title.children = [nodes.Text(PART_PREFIX_RE.sub("", text))]
            elif text == "Appendix":
                # its chapters are lettered A, B, ... (unnumbered on the website)
                holder = section.parent
                holder.parent.insert(holder.parent.index(holder), nodes.raw("", "\\appendix\n", format="latex"))


class LatexAnswerCode(SphinxPostTransform):
    """The PDF prints the answer code of the exercises.  On the website an answer cell (nbgrader
    ``solution``, tagged ``hide-input``) is folded behind "Show the answer code";
    sphinx-jupyterbook-latex drops every ``hide-input`` input from the PDF (priority 400),
    where nothing can be unfolded, and solutions that refer to "the code above" (Solution
    5.2(c)) then referred to nothing.  Before that, the answer cells lose their ``hide-input``
    and get a caption; the checks stay out of the PDF, ``remove-input`` cells never reach it."""

    default_priority = 390
    formats = ("latex",)

    def run(self, **kwargs):
        for cell in list(self.document.findall(nodes.container)):
            if cell.get("nb_element") != "cell_code" or "tag_hide-input" not in cell.get("classes", []):
                continue
            meta = cell.get("cell_metadata") or {}
            if not (meta.get("nbgrader") or {}).get("solution"):
                continue
            cell["classes"] = [c for c in cell["classes"] if c != "tag_hide-input"]
            cell.attributes.pop("hide_mode", None)
            caption = nodes.paragraph("", "", nodes.emphasis("", "The answer code:"))
            cell.parent.insert(cell.parent.index(cell), caption)


class SolutionTitles(SphinxPostTransform):
    """sphinx-exercise titles a solution "Solution to" + a link whose text starts with a
    space; in LaTeX that space is lost ("Solution toExercise 5.1"), on the website it is
    underlined as part of the link ("Solution to_Exercise 5.1"): move it out of the link."""

    default_priority = 23          # after sphinx-exercise resolved the titles (21, 22)
    formats = ("latex", "html")

    def run(self, **kwargs):
        for node in list(self.document.findall(nodes.Element)):
            if type(node).__name__ != "solution_node" or not node.children:
                continue
            title = node.children[0]
            kids = list(title.children)
            for i, child in enumerate(kids[:-1]):
                nxt = kids[i + 1]
                if not isinstance(child, nodes.Text) or isinstance(nxt, nodes.Text):
                    continue
                first = next(iter(nxt.findall(nodes.Text)), None)
                if first is not None and str(first).startswith(" "):
                    first.parent.replace(first, nodes.Text(str(first).lstrip()))
                    title.replace(child, nodes.Text(str(child).rstrip() + " "))


#: a table wider than this many characters of text gets wrapping columns in the PDF
TABLE_WRAP_CHARS = 60
#: no column is given more than this many characters' share (its text wraps instead)
TABLE_COLUMN_CAP = 36
#: a wrapped table with more rows than this is typeset as a longtable (see LatexTableColumns)
LONGTABLE_ROWS = 8
#: the text width in characters of the table font, padding included (about 6 pt each on a
#: 6.3 in line): shares are relative, so a table whose shares add up to more than this would
#: give a column less room than its longest word (the points table's "Points" header)
TABLE_LINE_CHARS = 72
#: a column whose every cell has at most this many characters keeps its width (column_shares)
TABLE_SHORT_CHARS = 14


#: the PDF's text width in pt (jupyterBook class, letter paper; book.log: \\textwidth=469.75502pt)
TEXT_WIDTH_PT = 469.755
#: the width of one character of inline code in a table cell: DejaVu Sans Mono scaled to the
#: x-height of 10 pt TeX Gyre Pagella (bookprint.sty, ``Scale = MatchLowercase``: 0.469 /
#: 0.547 em), 0.602 em a character
CODE_CHAR_PT = 10 * 0.469 / 0.546875 * 0.6021
#: the padding of a table column (``2\tabcolsep``) in pt
COLUMN_PAD_PT = 12.0


def code_fraction(chars):
    """The fraction of the text width that a column needs so that a code word of ``chars``
    characters fits on one line of it (padding included; 0 for a column without code).

    >>> round(code_fraction(23) * TEXT_WIDTH_PT, 1)   # "log_marginal_likelihood"
    130.8
    """
    return (chars * CODE_CHAR_PT + COLUMN_PAD_PT) / TEXT_WIDTH_PT if chars else 0.0


def column_shares(longest, words, code=None):
    """Relative LaTeX column widths for cells whose longest text is ``longest`` characters and
    longest word ``words`` characters: in proportion to the text (capped at
    ``TABLE_COLUMN_CAP``), never narrower than the longest word plus padding.

    Shares are relative (``\\X{w}{total}``), so when they add up to more than the line a
    share of one character is less than one character.  Then the short columns (at most
    ``TABLE_SHORT_CHARS`` in every cell, their header included: "Points", "Introduced") are
    given exactly their text plus padding, and the other columns the rest of the line in
    proportion to their text; the shares then add up to the line.  Without this the
    points table's "Points" header ran 16 pt into the next column.

    ``code`` gives each column's longest code word (a literal's longest run without a space,
    ``log_marginal_likelihood``) in characters.  Such a word would be broken at ``_``, ``(``
    or ``.``, so a column is never narrower than its longest code word at the table's font
    (:func:`code_fraction`): those columns get exactly that, the others the rest of the line
    in proportion to their shares.  When the code words together do not fit the line
    (:func:`code_fits` is false; the caller warns), the shares are returned as without them.

    >>> column_shares([6, 80, 3], [6, 12, 1])
    [7, 36, 3]
    >>> column_shares([13, 40, 30, 6, 13], [8, 14, 30, 6, 13])
    [15, 19, 15, 8, 15]

    A notation table (symbol, meaning, ``blrlib`` name, chapter) whose third column holds
    ``log_marginal_likelihood`` (23 characters) keeps that word on one line; the others
    give up the room:

    >>> column_shares([40, 80, 30, 10], [12, 14, 23, 5])
    [21, 21, 18, 12]
    >>> shares = column_shares([40, 80, 30, 10], [12, 14, 23, 5], code=[0, 0, 23, 0])
    >>> shares
    [20, 20, 21, 11]
    >>> shares[2] / sum(shares) >= code_fraction(23)
    True
    """
    natural = [max(w + 1, min(n, TABLE_COLUMN_CAP), 3) for n, w in zip(longest, words)]
    shares = natural
    if sum(natural) > TABLE_LINE_CHARS:
        short = [n <= TABLE_SHORT_CHARS for n in longest]
        fixed = sum(n + 2 for n, s in zip(longest, short) if s)
        want = [min(n, TABLE_COLUMN_CAP) for n, s in zip(longest, short) if not s]
        rest = TABLE_LINE_CHARS - fixed
        if want and rest >= 8 * len(want):  # else nothing to share, or too little: as the text says
            scale = rest / sum(want)
            wanted = iter(max(3, round(w * scale)) for w in want)
            shares = [n + 2 if s else next(wanted) for n, s in zip(longest, short)]
    if not code or not code_fits(code):
        return shares
    need = [code_fraction(c) for c in code]
    total = sum(shares)
    pinned = set()
    while True:   # pin each column too narrow for its code; the others share what is left
        free = sum(shares[i] for i in range(len(shares)) if i not in pinned)
        left = 1.0 - sum(need[i] for i in pinned)
        more = {i for i in range(len(shares)) if i not in pinned
                and shares[i] / free * left < need[i]}
        if not more:
            break
        pinned |= more
    if not pinned:
        return shares
    # whole shares of the same total: the pinned ones rounded up, the others down
    out = [-(-need[i] * total // 1) if i in pinned else shares[i] / free * left * total // 1
           for i in range(len(shares))]
    return [max(1, int(s)) for s in out]


def code_fits(code):
    """Whether code words of these lengths (one per column, characters) fit side by side on
    the text width, each in its column with its padding.

    >>> code_fits([0, 0, 23, 0]), code_fits([30, 30, 30, 0])
    (True, False)
    """
    return sum(code_fraction(c) for c in code) <= 1.0


def _visible_text(node):
    """The text of a table cell as it prints, roughly: a formula counts a third of its TeX
    source (``\\(\\mathbf w_{\\mathrm{MAP}}\\)`` prints as three or four characters), as
    one word, so that a column of symbols is not given the room of their source."""
    parts = []
    for text in node.findall(nodes.Text):
        if any(isinstance(a, nodes.math) for a in _ancestors(text)):
            continue
        parts.append(str(text))
    for formula in node.findall(nodes.math):
        parts.append(" " + "x" * max(1, len(formula.astext()) // 3) + " ")
    return "".join(parts)


def _ancestors(node):
    while node.parent is not None:
        node = node.parent
        yield node


class LatexTableColumns(SphinxPostTransform):
    """A table whose cells hold more text than a line is typeset by Sphinx with ``l`` columns
    (longtable, more than 30 rows) or tabulary, and runs off the page (the instructor page's
    points table) or is cut mid-word.  Here each column gets a width in proportion to its
    longest cell (capped, at least its longest word), which Sphinx writes as wrapping
    ``\\X{w}{total}`` columns of the text width."""

    default_priority = 900
    formats = ("latex",)

    def run(self, **kwargs):
        for table in list(self.document.findall(nodes.table)):
            if "colwidths-given" in table.get("classes", []):
                continue
            for group in table.findall(nodes.tgroup):
                specs = [c for c in group.children if isinstance(c, nodes.colspec)]
                longest, words = [0] * len(specs), [1] * len(specs)
                code = [0] * len(specs)
                for row in group.findall(nodes.row):
                    col = 0
                    for entry in row.children:
                        if col >= len(specs):
                            break
                        text = _visible_text(entry)
                        longest[col] = max(longest[col], len(text))
                        words[col] = max([words[col]] + [len(w) for w in text.split()])
                        code[col] = max([code[col]] + [len(w) for lit in entry.findall(nodes.literal)
                                                       for w in lit.astext().split()])
                        col += 1 + entry.get("morecols", 0)
                if not specs or sum(longest) <= TABLE_WRAP_CHARS:
                    continue
                if not code_fits(code):
                    words_ = ", ".join(f"column {i + 1}: {c} characters" for i, c in enumerate(code) if c)
                    logger.warning(f"coursework_book: a table's code words ({words_}) do not fit the "
                                   f"PDF's text width side by side in one line each; LaTeX will "
                                   f"break them at '_', '(' or '.' (shorten them or split the table)",
                                   location=table)
                for spec, share in zip(specs, column_shares(longest, words, code)):
                    spec["colwidth"] = share
                table["classes"] = table.get("classes", []) + ["colwidths-given"]
                # Sphinx writes a table of 30 rows or fewer as a tabular, which cannot break
                # across pages: a notation table of 25 wrapped rows ran 155 pt off its page
                # (after an empty one).  A longtable breaks between rows; it cannot sit in a
                # box, so only tables directly in a section get one.
                rows = len(list(group.findall(nodes.row)))
                if rows > LONGTABLE_ROWS and isinstance(table.parent, nodes.section):
                    table["classes"].append("longtable")


def number_exercises_per_chapter(app):
    """jupyter-book's LaTeX extension sets ``numfig_secnum_depth = 2``, which the LaTeX writer
    needs (LaTeX numbers figures and equations per chapter under parts), but from which Sphinx
    also numbers the exercises, per section: 5.10.1.  The website numbers them per chapter
    (depth 1), so the exercise numbers are assigned with depth 1 (``builder-inited``) and the
    writer gets 2 back (``env-check-consistency``, after Sphinx assigned the numbers)."""
    if app.builder.format == "latex" and app.config.numfig_secnum_depth == 2:
        app.config.numfig_secnum_depth = 1
        app._coursework_secnum_depth = 2


def restore_secnum_depth(app, env):
    """Give the LaTeX writer its depth back once Sphinx has numbered the figures and
    exercises: ``env-get-updated``, after the toctree collector's handler (which numbers
    them), is emitted by every build; ``env-check-consistency`` only by one that read a
    document (with it alone, the second ``make pdf`` numbered the equations (1), (2), ...
    through the whole book instead of (4.1), (4.2), ...).  Returns no documents to rewrite."""
    depth = getattr(app, "_coursework_secnum_depth", None)
    if depth is not None:
        app.config.numfig_secnum_depth = depth
    return []


# --------------------------------------------------------------- bibliography: author-year

MATH_IN_TEXT_RE = re.compile(r"\$([^$]+)\$")


class BibliographyMath(SphinxPostTransform):
    """TeX math in a bibliography entry (a title such as "an improved $\\widehat R$") becomes a
    math node, typeset like the text's math instead of printed as raw TeX.  The entries are made
    by sphinxcontrib-bibtex's post-transform, after Sphinx decided which pages need MathJax, so
    MathJax is loaded on every page (``set_html_assets_policy("always")`` in ``setup``)."""

    default_priority = 20          # after sphinxcontrib-bibtex fills the bibliography (5)

    def run(self, **kwargs):
        for citation in list(self.document.findall(nodes.citation)):
            for element in list(citation.findall(nodes.TextElement)):
                if isinstance(element, (nodes.math, nodes.literal, nodes.label)) or "$" not in element.astext():
                    continue
                # pybtex splits "$\widehat R$" over several text nodes: join each run of them
                children, run = [], []
                for child in list(element.children) + [None]:
                    if isinstance(child, nodes.Text):
                        run.append(str(child))
                        continue
                    if run:
                        parts = MATH_IN_TEXT_RE.split("".join(run))
                        children += [nodes.Text(p) if i % 2 == 0 else nodes.math(f"${p}$", p)
                                     for i, p in enumerate(parts) if p]
                        run = []
                    if child is not None:
                        children.append(child)
                element.children = []
                element.extend(children)


def ascii_folded(text):
    """"Böhning" -> "bohning": the key the bibliography is sorted by (accents dropped, lower case)."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).lower()


def _register_author_year_style():
    from pybtex.plugin import register_plugin
    from pybtex.richtext import Text
    from pybtex.style.formatting.plain import Style as PlainStyle
    from pybtex.style.labels import BaseLabelStyle
    from pybtex.style.sorting.author_year_title import SortingStyle as AuthorYearTitleSorting
    from pybtex.style.formatting import toplevel
    from pybtex.style.formatting.unsrt import date, pages
    from pybtex.style.template import optional, optional_field, sentence, words

    def surname(person):
        text = " ".join(person.prelast_names + person.last_names)
        return Text.from_latex(text).render_as("text")

    class AuthorYearLabels(BaseLabelStyle):
        """"Bishop 2006", "Rasmussen and Williams 2006", "Polson et al. 2013"; a letter
        after the year tells apart two works with the same label."""

        def format_label(self, entry):
            people = entry.persons.get("author") or entry.persons.get("editor") or []
            names = [surname(p) for p in people]
            if not names:
                who = entry.fields.get("organization") or entry.fields.get("title", entry.key)
                names = [Text.from_latex(str(who)).render_as("text")]
            if len(names) == 1:
                who = names[0]
            elif len(names) == 2:
                who = f"{names[0]} and {names[1]}"
            else:
                who = f"{names[0]} et al."
            return f"{who} {entry.fields.get('year', 'n.d.')}"

        def format_labels(self, sorted_entries):
            # two works with one label get "1992a", "1992b" (labels must be unique); the text's
            # citations print the year alone and link their own entry
            labels = [self.format_label(e) for e in sorted_entries]
            seen = {}
            for label in labels:
                if labels.count(label) == 1:
                    yield label
                else:
                    seen[label] = seen.get(label, -1) + 1
                    yield label + "abcdefghijklmnopqrstuvwxyz"[seen[label]]

    class AuthorYearSorting(AuthorYearTitleSorting):
        """Sorted by author as the reader reads the name: "B{\\"o}hning" is Bohning (before
        Brier), not sorted by its TeX braces and backslash."""

        def person_key(self, person):
            return ascii_folded(Text.from_latex(super().person_key(person)).render_as("text"))

    class AuthorYearStyle(PlainStyle):
        default_label_style = "book_author_year"
        default_sorting_style = "book_author_year"

        def get_inproceedings_template(self, e):
            # "In Booktitle, pages 282-290, 2013." like an article's "Journal, 9:1-7, 2013."
            # (plain prints the year as a sentence of its own: "In Booktitle, 282-290. 2013.")
            return toplevel[
                sentence[self.format_names("author")],
                self.format_title(e, "title"),
                words[
                    "In",
                    sentence[
                        optional[self.format_editor(e, as_sentence=False)],
                        self.format_btitle(e, "booktitle", as_sentence=False),
                        self.format_volume_and_series(e, as_sentence=False),
                        optional[words["pages", pages]],
                        optional_field("organization"),
                        optional_field("publisher"),
                        optional_field("address"),
                        date,
                    ],
                ],
                sentence[optional_field("note")],
                self.format_web_refs(e),
            ]

    register_plugin("pybtex.style.labels", "book_author_year", AuthorYearLabels)
    register_plugin("pybtex.style.sorting", "book_author_year", AuthorYearSorting)
    register_plugin("pybtex.style.formatting", "book_author_year", AuthorYearStyle)


# --------------------------------------------------------------- accessibility of the HTML

EMPTY_TH_RE = re.compile(r"<th(\s[^>]*)?>(\s|&nbsp;)*</th>")


class EmptyTableHeaders(SphinxPostTransform):
    """A table in a notebook's output (pandas writes ``<th></th>`` in the corner above the row
    labels) has header cells with nothing in them, which screen readers announce as a header
    without a name (axe-core: empty-table-header).  An empty corner heads nothing: it becomes
    an ordinary empty cell."""

    default_priority = 900
    formats = ("html",)

    def run(self, **kwargs):
        for node in list(self.document.findall(nodes.raw)):
            if "html" not in node.get("format", "").split():
                continue
            text = node.astext()
            fixed = EMPTY_TH_RE.sub(lambda m: f"<td{m.group(1) or ''}></td>", text)
            if fixed != text:
                node.children = []
                node += nodes.Text(fixed)


SOLUTION_MARKER_RE = re.compile(
    rf"^[ \t]*({re.escape(book.BEGIN)}|{re.escape(book.END)}|{re.escape(book.HIDDEN_BEGIN)}"
    rf"|{re.escape(book.HIDDEN_END)})[ \t]*\n?",
    re.M,
)


class HideSolutionMarkers(SphinxPostTransform):
    """The nbgrader markers ``### BEGIN SOLUTION`` and ``### END SOLUTION`` of an answer cell,
    and ``### BEGIN HIDDEN TESTS`` / ``### END HIDDEN TESTS`` of a check cell, are for the
    student edition (coursework/student.py replaces or removes what they enclose); a reader of
    the website or the PDF sees the code without them.  The notebooks and the downloads keep
    them."""

    default_priority = 900
    formats = ("html", "latex")

    def run(self, **kwargs):
        for block in list(self.document.findall(nodes.literal_block)):
            text = block.astext()
            if not SOLUTION_MARKER_RE.search(text):
                continue
            in_cell = any("cell_input" in a.get("classes", []) for a in _ancestors(block))
            if not in_cell and self.app.builder.format != "latex":  # LaTeX: cells unwrapped
                continue
            set_literal_text(block, SOLUTION_MARKER_RE.sub("", text))


def visit_hide_cell_input(self, node):
    """MyST-NB's folded cell input, with the summary named by what it says ("Show the checks",
    "Show the answer code"; "Hide ..." when open) instead of MyST-NB's aria-label "Toggle
    hidden content", which screen readers announced for every fold button."""
    from html import escape

    self.body.append(f'<details class="admonition hide {" ".join(node["classes"])}">\n')
    self.body.append("<summary>\n")
    self.body.append(f'<p class="collapsed admonition-title">{escape(node["prompt_show"])}</p>\n')
    self.body.append(f'<p class="expanded admonition-title">{escape(node["prompt_hide"])}</p>\n')
    self.body.append("</summary>\n")


#: where a code word in a table cell may break on a narrow screen: after "_", "-", "(" or ","
#: and before "."
CODE_BREAK_RE = re.compile(r"(?<=[_(,-])(?=.)|(?<=.)(?=\.)")


def code_pieces(word, shortest=3):
    """A code word of a table cell cut where it may break over lines (``CODE_BREAK_RE``),
    every piece at least ``shortest`` characters long, so that no stub ("w" | "[0]") stands on a
    line of its own; the HTML writer puts a ``<wbr>`` between the pieces, which a reader who
    copies the word does not get.

    >>> code_pieces("gpc_log_marginal_likelihood")
    ['gpc_', 'log_', 'marginal_', 'likelihood']
    >>> code_pieces("add_intercept(X)")
    ['add_', 'intercept(X)']
    >>> code_pieces("X.shape[1]"), code_pieces("w[0]"), code_pieces("irls(X,")
    (['X.shape[1]'], ['w[0]'], ['irls(X,'])
    >>> code_pieces("res.log_evidence")
    ['res', '.log_', 'evidence']
    """
    out, start = [], 0
    for m in CODE_BREAK_RE.finditer(word):
        if m.start() - start >= shortest and len(word) - m.start() >= shortest:
            out.append(word[start:m.start()])
            start = m.start()
    return out + [word[start:]]


def _column_label(entry):
    """The name of the column of a body cell of a table marked ``STACKED_TABLE`` (the text of
    its header cell), or None."""
    row = entry.parent
    body = row.parent if row is not None else None
    if not isinstance(body, nodes.tbody):
        return None
    group = body.parent
    table = group.parent
    if STACKED_TABLE not in table.get("classes", []):
        return None
    head = next((c for c in group.children if isinstance(c, nodes.thead)), None)
    if head is None or not len(head.children):
        return None
    column = 0
    for cell in row.children:
        if cell is entry:
            break
        column += 1 + cell.get("morecols", 0)
    at = 0
    for cell in head.children[-1].children:
        if at <= column <= at + cell.get("morecols", 0):
            return " ".join(cell.astext().split()) or None
        at += 1 + cell.get("morecols", 0)
    return None


def bibliography_list_items(app):
    """The book's HTML translator.  docutils gives each bibliography entry
    ``role="doc-biblioentry"`` inside a ``role="list"``: a list whose children are not list
    items (axe-core: critical), and a role that DPUB-ARIA 1.1 deprecates.  The entries become
    list items of that list.  In a table, a code word may break over lines only where it reads
    (``code_pieces``: a ``<wbr>`` between two pieces, which book.css hides on a wide screen),
    not at any character (a phone broke
    ``gpc_log_marginal_likelihood`` as "gpc_log_marg" | "inal_likelihood"); a body cell of a
    ``STACKED_TABLE`` carries its column's name in a label element before the cell's value,
    which book.css shows on a narrow screen only."""
    if app.builder.format != "html":
        return
    base = app.builder.get_translator_class()

    class BookHTMLTranslator(base):
        _book_tables = 0

        def visit_citation(self, node):
            if not isinstance(node.previous_sibling(), type(node)):
                self.body.append('<div role="list" class="citation-list">\n')
            self.body.append(self.starttag(node, "div", classes=[node.tagname], role="listitem"))

        def visit_table(self, node):
            self._book_tables += 1
            super().visit_table(node)

        def depart_table(self, node):
            super().depart_table(node)
            self._book_tables -= 1

        def visit_entry(self, node):
            super().visit_entry(node)
            label = _column_label(node)
            if label:  # shown on a narrow screen only (book.css)
                self.body.append(f'<div class="book-cell-label">{self.encode(label)}</div>'
                                 '<div class="book-cell-value">')

        def depart_entry(self, node):
            if _column_label(node):
                self.body.append("</div>")
            super().depart_entry(node)

        def visit_Text(self, node):
            if not (self.protect_literal_text and self._book_tables):
                return super().visit_Text(node)
            for token in self.words_and_spaces.findall(self.encode(node.astext())):
                if token.strip():
                    self.body.append(f'<span class="pre">{"<wbr>".join(code_pieces(token))}</span>')
                elif token in " \n":
                    self.body.append(token)
                else:
                    self.body.append("&#160;" * (len(token) - 1) + " ")

    app.set_translator(app.builder.name, BookHTMLTranslator, override=True)


# --------------------------------------------------------------- figures: vector on the website

#: IPython and matplotlib settings of the kernels that execute the chapters for the website
KERNEL_IPYTHON_CONFIG = """\
# written by book/_ext/coursework_book.py for the website build: figures as SVG
c.InlineBackend.figure_formats = {"svg"}
"""
#: the startup file of the kernels of the website and the PDF (``make pdf`` copies it too)
KERNEL_STARTUP = pathlib.Path(__file__).with_name("kernel_startup.py")
KERNEL_MATPLOTLIBRC = """\
# written by book/_ext/coursework_book.py for the website build
# text stays text in the SVG (sharp, searchable, and its size can be measured by the site tests)
svg.fonttype: none
# the same figure gives the same file from one build to the next
svg.hashsalt: bayesian-logistic-regression
"""


def vector_figures_for_html(app):
    """Figures on the website are SVG: sharp at any device pixel ratio and zoom, their text
    real text.  The notebooks are left as they are: the kernels that MyST-NB starts for an
    HTML build inherit ``IPYTHONDIR`` (an IPython profile whose inline backend draws SVG) and
    ``MATPLOTLIBRC`` (text kept as text) from this process.  Other builders (the PDF) keep
    their own figure format."""
    if app.builder.format != "html":
        return
    root = pathlib.Path(app.doctreedir).parent / "kernel-config"
    profile = root / "ipython" / "profile_default"
    profile.mkdir(parents=True, exist_ok=True)
    (profile / "ipython_kernel_config.py").write_text(KERNEL_IPYTHON_CONFIG)
    # pandas prints tables up to the code column's 88 characters in one block (kernel_startup.py)
    (profile / "startup").mkdir(exist_ok=True)
    shutil.copyfile(KERNEL_STARTUP, profile / "startup" / KERNEL_STARTUP.name)
    (root / "matplotlibrc").write_text(KERNEL_MATPLOTLIBRC)
    os.environ["IPYTHONDIR"] = str(root / "ipython")
    os.environ["MATPLOTLIBRC"] = str(root / "matplotlibrc")


def setup(app):
    _register_author_year_style()
    app.connect("builder-inited", vector_figures_for_html)
    # after pydata-sphinx-theme, which sets its own translator class when the builder starts
    app.connect("builder-inited", bibliography_list_items, priority=900)
    app.add_post_transform(EmptyTableHeaders)
    app.add_post_transform(StackWideTables)
    app.add_post_transform(HideSolutionMarkers)
    from myst_nb.sphinx_ import HideCodeCellNode, depart_HideCellInput

    app.add_node(HideCodeCellNode, override=True, html=(visit_hide_cell_input, depart_HideCellInput))
    app.connect("config-inited", drop_header_search, priority=100)
    app.connect("config-inited", note_book_pdf, priority=100)
    app.connect("autodoc-process-docstring", link_equation_labels)
    app.connect("html-page-context", fix_page_scripts, priority=900)
    app.connect("html-page-context", add_book_pdf_button, priority=900)
    app.add_role("notebook-archive", notebook_archive_role)
    app.add_role("blrlib-wheel", _root_file_role(blrlib_wheel_name))
    app.add_role("notebook-requirements", _root_file_role(REQUIREMENTS))
    app.add_post_transform(LatexExerciseReferences)
    app.add_post_transform(BibliographyMath)
    app.add_post_transform(LatexPartTitles)
    app.add_post_transform(LatexAnswerCode)
    app.add_post_transform(SolutionTitles)
    app.add_post_transform(LatexTableColumns)
    app.connect("builder-inited", number_exercises_per_chapter, priority=900)
    app.connect("env-get-updated", restore_secnum_depth, priority=900)
    app.set_html_assets_policy("always")
    app.add_directive("coursework-chapters", CourseworkChapters)
    app.add_directive("coursework-points", CourseworkPoints)
    app.connect("build-finished", copy_executed_notebooks)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
