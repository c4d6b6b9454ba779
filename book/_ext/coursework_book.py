"""Local Sphinx extension of the course book (registered in _config.yml, ``local_extensions``).

1. ``build-finished``: the download button of a notebook page links to ``_sources/<doc>.ipynb``,
   which Sphinx copies from the *unexecuted* source.  This copies the executed notebook that
   MyST-NB wrote to ``<build>/jupyter_execute/<doc>.ipynb`` over it, so a reader who downloads a
   chapter gets its outputs and figures.
2. Directives for the instructor page, generated from the chapters at build time:
   ``{coursework-chapters}`` (title, estimated time, learning goals of every chapter) and
   ``{coursework-points}`` (every exercise with its grade id and points).
3. Two fixes for errors that the browser test found in the console of every page:
   sphinx-thebe 0.3.1 adds its inline configuration script twice (``const THEBE_JS_URL``
   declared twice is a SyntaxError), so duplicate scripts are dropped from each page; and the
   theme's ``default_mode`` is empty, which pydata-sphinx-theme reports on a reader's first
   visit ("Got invalid theme mode"), so it is set to ``auto`` (follow the reader's system).
"""

from __future__ import annotations

import pathlib
import shutil

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

from coursework import book

logger = logging.getLogger(__name__)


def _toc_chapters(env):
    toc = getattr(env.config, "external_toc_path", None) or "_toc.yml"
    srcdir = pathlib.Path(env.srcdir)
    toc_path = pathlib.Path(toc) if pathlib.Path(toc).is_absolute() else srcdir / toc
    return book.toc_notebooks(srcdir, toc_path)


def _docname(env, path):
    return "/" + path.relative_to(pathlib.Path(env.srcdir)).with_suffix("").as_posix()


def _cell(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


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
                 "| Pen-and-paper exercises | Points (graded by hand) |",
                 "| :-- | --: | --: | --: | --: | --: |"]
        goals = []
        total_min = total_auto = total_hand = 0
        for path, s in self.chapters():
            doc = _docname(self.env, path)
            coding = [e for e in s["exercises"] if e.coding]
            paper = [e for e in s["exercises"] if e.by_hand]
            auto, hand = sum(e.points for e in coding), sum(e.points for e in paper)
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
            "15 minutes per coding and 10 per pen-and-paper exercise); the others are stated by "
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
                elif e.by_hand:
                    hand += e.points
                    lines.append(f"| {{ref}}`{e.label}` | {_cell(e.title)} | `{e.answer_id}` "
                                 f"| {e.points:g} | by hand |")
                else:
                    lines.append(f"| {{ref}}`{e.label}` | {_cell(e.title)} | (none) | – | not graded |")
        lines.append(f"| **Total** | | | **{auto + hand:g}** | **{auto:g} automatically, {hand:g} by hand** |")
        return self.render("\n".join(lines))


def copy_executed_notebooks(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    outdir = pathlib.Path(app.outdir)
    executed = outdir.parent / "jupyter_execute"
    for docname in sorted(app.env.found_docs):
        if pathlib.Path(app.env.doc2path(docname)).suffix != ".ipynb":
            continue
        src = executed / f"{docname}.ipynb"
        dst = outdir / "_sources" / f"{docname}.ipynb"
        if not src.exists():
            logger.warning(f"coursework_book: no executed notebook {src} for the download of {docname}")
            continue
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dst)


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


def setup(app):
    app.connect("html-page-context", fix_page_scripts, priority=900)
    app.add_directive("coursework-chapters", CourseworkChapters)
    app.add_directive("coursework-points", CourseworkPoints)
    app.connect("build-finished", copy_executed_notebooks)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
