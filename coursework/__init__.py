"""Coursework tooling of the course book: student edition, structure checks, autograding.

The chapters follow nbgrader's conventions (see DESIGN.md, "Book conventions"): each coding
exercise is a markdown cell with an ``{exercise}`` directive and a ``:label:``, one answer cell
(nbgrader ``solution: true``, grade id ``<label>-answer``) and right after it one check cell
(nbgrader ``grade: true``, ``points > 0``, grade id ``<label>-check``).

Modules: :mod:`coursework.book` (reading the toc and the exercises), :mod:`coursework.student`
(``make student``), :mod:`coursework.runner` (executing one notebook cell by cell in a fresh
kernel, in its own process) and :mod:`coursework.grade` (``make grade``).  Installed with
blrlib (``pip install -e .``), so ``python -m coursework.student`` and ``python -m
coursework.grade`` work from anywhere, and the book's Sphinx extension imports it.
"""

import sys

# jsonschema (imported by nbformat) compiles rfc3987-syntax's grammar at import, ~5 s of CPU per
# process; nbformat's schema uses no IRI format, so the coursework processes skip it.
sys.modules.setdefault("rfc3987_syntax", None)
