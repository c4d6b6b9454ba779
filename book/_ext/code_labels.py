"""Sphinx extension of the course book: labels in code written as numbers.

The chapters' code names the book's equations, exercises and figures by label in comments and
docstrings ("# the full Newton step eq-newton"), which keeps them right when equations are
added; the reader sees numbers everywhere else. This post-transform writes each such label as
the number the page shows ("(3.2)", "exercise 6.3", "Fig. 1.1") in every code and output block
of a chapter, on the website and in the PDF, with the numbers of :func:`coursework.xref.book_index`
(the student edition's, which ``tests/site/test_numbering.py`` checks against the website's).
The notebooks themselves are unchanged.
"""

from __future__ import annotations

import pathlib

from docutils import nodes
from sphinx.transforms.post_transforms import SphinxPostTransform

from coursework import xref
from literal_blocks import set_literal_text

_TARGETS = {}


def read_numbers(app):
    """The book's labels and numbers, once per build (before any page is written)."""
    _TARGETS.clear()
    root = pathlib.Path(app.srcdir)
    if (root / "_toc.yml").exists():
        _TARGETS.update(xref.book_index(root).targets)


class CodeLabelNumbers(SphinxPostTransform):
    """Every literal block of a notebook page with its labels written as numbers."""

    default_priority = 800

    def run(self, **kwargs):
        # the LaTeX builder resolves the whole book as one tree under the root page's name
        notebook = str(self.env.doc2path(self.env.docname)).endswith(".ipynb")
        if not _TARGETS or not (notebook or self.app.builder.format == "latex"):
            return
        for block in list(self.document.findall(nodes.literal_block)):
            text = block.astext()
            new = xref.number_code_labels(text, _TARGETS)
            if new != text:
                set_literal_text(block, new)


def setup(app):
    app.connect("builder-inited", read_numbers)
    app.add_post_transform(CodeLabelNumbers)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
