"""What the book's Sphinx extensions (coursework_book.py, code_labels.py) share: rewriting the
text of a literal block (a code or output block) after it was read."""

from __future__ import annotations

from docutils import nodes


def set_literal_text(block: nodes.literal_block, text: str) -> None:
    """Replace the text of ``block`` with ``text``, and its ``rawsource`` too: Sphinx
    highlights a literal block only when its rawsource is its text.

    >>> block = nodes.literal_block("x = 1  # eq-a", "x = 1  # eq-a")
    >>> set_literal_text(block, "x = 1  # (1.1)")
    >>> block.astext(), block.rawsource
    ('x = 1  # (1.1)', 'x = 1  # (1.1)')
    """
    block.rawsource = text
    block.children = []
    block += nodes.Text(text)
