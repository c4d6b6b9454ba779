"""Coursework tooling of the course book: student edition, structure checks, autograding.

The chapters follow nbgrader's conventions (DESIGN.md "Book conventions", CONVENTIONS section
4): each coding exercise is a markdown cell with an ``{exercise}`` directive and a ``:label:``,
one answer cell (nbgrader ``solution: true``, grade id ``<label>-answer``) that states outside
its solution markers what to write, and right after it one check cell (nbgrader ``grade: true``,
``points > 0``, grade id ``<label>-check``) that assigns ``check_values``, and, when the
exercise also asks a question in words, right after the check one markdown answer cell for that
written part (grade id ``<label>-written``, graded by hand); a pen-and-paper exercise has one
markdown answer cell right after its ``{exercise}`` cell, graded by hand.

Modules: :mod:`coursework.book` (the toc, the exercises, the structure checks),
:mod:`coursework.student` (``make student``), :mod:`coursework.values` (``check_values``:
encoding in the kernel, defensive decoding and comparison in the grader),
:mod:`coursework.runner` (runs one notebook cell by cell in a fresh kernel, inside the
sandbox), :mod:`coursework.sandbox` (the bubblewrap sandbox and the results pipe),
:mod:`coursework.signing` (the results stream's HMAC signatures),
:mod:`coursework.cgroup` (a control group per parallel slot: memory and CPU share),
:mod:`coursework.grade` (``make grade``: a grading run's options, state and command line) with
its parts :mod:`coursework.intake`, :mod:`coursework.sources`, :mod:`coursework.hashing`,
:mod:`coursework.merging`, :mod:`coursework.scoring`, :mod:`coursework.names`,
:mod:`coursework.reports` and :mod:`coursework.feedback`,
:mod:`coursework.gradescope` (``make gradescope``: the Gradescope autograder bundle) and
:mod:`coursework.bench` (``make grade-bench``).
Installed with blrlib (``pip install -e .``), so ``python -m coursework.grade`` works from
anywhere, and the book's Sphinx extension imports it.
"""

import sys

# jsonschema (imported by nbformat) compiles rfc3987-syntax's grammar at import, ~5 s of CPU per
# process; nbformat's schema uses no IRI format, so the coursework processes skip it.
sys.modules.setdefault("rfc3987_syntax", None)
