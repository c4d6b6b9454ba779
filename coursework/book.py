"""Read the table of contents, the chapters and their exercises."""

from __future__ import annotations

import ast
import dataclasses
import math
import pathlib
import re
import textwrap

import nbformat
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[1]  # coursework/book.py

EXERCISE_RE = re.compile(r"^(?P<fence>`{3,}|:{3,})\{exercise\}[ \t]*(?P<title>.*)$", re.M)
LABEL_RE = re.compile(r"^:label:[ \t]*(?P<label>\S+)[ \t]*$", re.M)
SOLUTION_RE = re.compile(r"^(?P<fence>`{3,}|:{3,})\{solution\}[ \t]*(?P<target>\S*)", re.M)
GATED_RE = re.compile(r"\{(exercise|solution)-(start|end)\}")
BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
HIDDEN_BEGIN, HIDDEN_END = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"
#: a label of the book's equations, exercises and figures as code names it ("eq-newton")
CODE_LABEL_PATTERN = r"\b(?:eq|ex|fig)-[a-z0-9]+(?:-[a-z0-9]+)*\b"


def toc_files(toc):
    """Yield every ``file:``/``root:`` entry of a jupyter-book toc, in order."""
    if isinstance(toc, dict):
        for key, value in toc.items():
            if key in ("file", "root"):
                yield value
            else:
                yield from toc_files(value)
    elif isinstance(toc, list):
        for item in toc:
            yield from toc_files(item)


def toc_notebooks(root=ROOT, toc="_toc.yml"):
    """The ``.ipynb`` chapters listed in the toc that exist, in toc order."""
    root = pathlib.Path(root)
    data = yaml.safe_load((root / toc).read_text())
    files = [root / f"{f}.ipynb" for f in toc_files(data)]
    return [f for f in files if f.exists()]


def nbgrader_meta(cell):
    meta = cell.get("metadata", {}).get("nbgrader", {})
    return meta if isinstance(meta, dict) else {}


def is_answer(cell):
    """A coding answer cell: a code cell that nbgrader treats as a solution."""
    m = nbgrader_meta(cell)
    return cell.get("cell_type") == "code" and bool(m.get("solution"))


def is_check(cell):
    """A check cell: a code cell with points (nbgrader ``grade``) that is not a solution."""
    m = nbgrader_meta(cell)
    return cell.get("cell_type") == "code" and bool(m.get("grade")) and not m.get("solution")


def is_manual_answer(cell):
    """The answer cell of a pen-and-paper exercise: a markdown cell that nbgrader grades by hand
    (``solution`` and ``grade`` both true)."""
    m = nbgrader_meta(cell)
    return cell.get("cell_type") == "markdown" and bool(m.get("solution")) and bool(m.get("grade"))


def source(cell):
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


DEFAULT_RTOL, DEFAULT_ATOL = 1e-6, 1e-9


def tolerances(cell):
    """``(rtol, atol)`` of a check cell: its metadata ``"coursework": {"rtol": .., "atol": ..}``,
    else the defaults (1e-6, 1e-9).  :func:`structure_problems` reports invalid values."""
    meta = cell.get("metadata", {}).get("coursework", {})
    meta = meta if isinstance(meta, dict) else {}
    rtol, atol = meta.get("rtol", DEFAULT_RTOL), meta.get("atol", DEFAULT_ATOL)
    return float(rtol), float(atol)


@dataclasses.dataclass
class Exercise:
    """One ``{exercise}`` of a chapter with the cells that belong to it: for a coding exercise
    its answer and check cells (and, when it also asks a question in words, the markdown answer
    cell of that written part right after the check), for a pen-and-paper exercise its markdown
    answer cell.  ``points`` are the points of the check (coding) or of the answer cell (pen and
    paper); ``written_points`` those of the written part."""

    label: str
    title: str
    cell: int  # index of the markdown cell holding the directive
    answers: list = dataclasses.field(default_factory=list)  # indices of code answer cells
    checks: list = dataclasses.field(default_factory=list)  # indices of check cells
    manual: list = dataclasses.field(default_factory=list)  # indices of markdown answer cells
    written: list = dataclasses.field(default_factory=list)  # a coding exercise's written part
    points: float = 0.0
    written_points: float = 0.0
    has_solution: bool = False

    @property
    def coding(self):
        return bool(self.answers or self.checks)

    @property
    def by_hand(self):
        """A pen-and-paper exercise, graded by hand from its markdown answer cell."""
        return bool(self.manual) and not self.coding

    @property
    def answer_id(self):
        return f"{self.label}-answer"

    @property
    def check_id(self):
        return f"{self.label}-check"

    @property
    def written_id(self):
        return f"{self.label}-written"

    @property
    def hand_parts(self):
        """What of this exercise is graded by hand, as :class:`HandPart`: the answer of a
        pen-and-paper exercise, or the written part of a coding exercise."""
        if self.by_hand:
            return [HandPart(self.label, self.answer_id, self.points, self.title, written=False)]
        if self.coding and self.written:
            return [
                HandPart(
                    self.label + WRITTEN_SUFFIX, self.written_id, self.written_points, self.title, written=True
                )
            ]
        return []


#: how the grades name the written part of a coding exercise: "ex-laplace-cov (written)"
WRITTEN_SUFFIX = " (written)"


@dataclasses.dataclass(frozen=True)
class HandPart:
    """An answer graded by hand: ``label`` as the grades name it (the exercise's label, with
    :data:`WRITTEN_SUFFIX` for a written part), the ``answer_id`` (grade id) of its markdown cell,
    its ``points`` and the exercise's ``title``."""

    label: str
    answer_id: str
    points: float
    title: str = ""
    written: bool = False


def read(path):
    return nbformat.read(str(path), as_version=4)


def exercises(nb):
    """The exercises of a notebook, in order, with the answer/check cells that follow each."""
    found, current = [], None
    for i, cell in enumerate(nb.cells):
        text = source(cell)
        if current is not None and is_manual_answer(cell):
            if current.coding:  # after the code: the written part of a coding exercise
                current.written.append(i)
                current.written_points += _points(cell)
            else:
                current.manual.append(i)
                current.points += _points(cell)
        elif cell.cell_type == "markdown":
            for m in EXERCISE_RE.finditer(text):
                lab = LABEL_RE.search(text, m.end())
                current = Exercise(
                    label=lab.group("label") if lab else "", title=m.group("title").strip(), cell=i
                )
                found.append(current)
            for m in SOLUTION_RE.finditer(text):
                for ex in found:
                    if ex.label and ex.label == m.group("target"):
                        ex.has_solution = True
        elif current is not None and is_answer(cell):
            current.answers.append(i)
        elif current is not None and is_check(cell):
            current.checks.append(i)
            current.points += _points(cell)
    return found


def _points(cell):
    pts = nbgrader_meta(cell).get("points")
    return float(pts) if isinstance(pts, (int, float)) and not isinstance(pts, bool) else 0.0


# --------------------------------------------------------------------------- what a stub must say

COMMENT_RE = re.compile(r"^\s*#(?!##\s*(BEGIN|END) SOLUTION)\s*(?P<text>.*\S)")
DEF_RE = re.compile(r"^\s*def\s+(?P<name>[A-Za-z_]\w*)\s*\(")
ASSIGN_RE = re.compile(r"^\s*(?P<name>[A-Za-z_]\w*)\s*(?:\[[^]]*\]\s*)?(?:[-+*/@]?=)(?!=)")


def _assigned_names(code):
    """Names that ``code`` binds at its top level (assignments, ``def``, ``class``, ``import``)."""
    try:
        tree = ast.parse(textwrap.dedent(code))
    except SyntaxError:
        return {m.group("name") for m in map(ASSIGN_RE.match, code.splitlines()) if m}
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        else:
            targets = getattr(node, "targets", None) or [getattr(node, "target", None)]
            for t in targets:
                for n in ast.walk(t) if t is not None else ():
                    if isinstance(n, ast.Name):
                        names.add(n.id)
    return names


def stub_statement_problem(src):
    """``None`` when the answer cell ``src`` states what to write outside its solution markers
    (so the student stub still says it), else a sentence saying what is missing.

    Accepted: a ``def`` line with its signature outside the markers (the markers inside the
    function), or a comment line outside the markers that names a value the solution assigns,
    e.g. ``# Compute log_ev_manual: the Laplace log evidence (a float).``
    """
    lines = src.split("\n")
    try:
        b = next(i for i, line in enumerate(lines) if line.strip() == BEGIN)
        e = next(i for i, line in enumerate(lines) if line.strip() == END)
    except StopIteration:
        return None  # reported as a missing BEGIN/END region
    outside = lines[:b] + lines[e + 1 :]
    region = "\n".join(lines[b + 1 : e])
    if any(DEF_RE.match(line) for line in outside):
        return None
    names = _assigned_names(region)
    comments = [m.group("text") for m in map(COMMENT_RE.match, outside) if m]
    for text in comments:
        if any(re.search(rf"(?<![\w.]){re.escape(n)}\b", text) for n in names):
            return None
    if not comments:
        return (
            "states nothing outside the solution markers, so the student stub would be bare: "
            "put the def line (with its signature) or a comment naming the value to compute "
            f"(e.g. '# Compute x: ...') above '{BEGIN}'"
        )
    return (
        f"has a comment outside the solution markers that names none of the values the "
        f"solution assigns ({', '.join(sorted(names)) or 'none'})"
    )


def without_hidden_tests(src):
    r"""The check cell ``src`` as the student edition shows it: the lines from each
    ``### BEGIN HIDDEN TESTS`` to the next ``### END HIDDEN TESTS`` removed (what nbgrader's
    ``ClearHiddenTests`` does), or ``None`` when the markers do not pair up.

    >>> without_hidden_tests("a = 1\n### BEGIN HIDDEN TESTS\nassert a == 1\n### END HIDDEN TESTS")
    'a = 1'
    >>> without_hidden_tests("### END HIDDEN TESTS") is None
    True
    """
    kept, hiding = [], False
    for line in src.split("\n"):  # a marker anywhere in a line, as nbgrader reads them
        if HIDDEN_BEGIN.lstrip("# ") in line:
            if hiding:
                return None
            hiding = True
        elif HIDDEN_END.lstrip("# ") in line:
            if not hiding:
                return None
            hiding = False
        elif not hiding:
            kept.append(line)
    return None if hiding else "\n".join(kept)


def is_check_values_assignment(node):
    """Whether the statement ``node`` assigns the name ``check_values`` (``check_values = ...``,
    also annotated or as one of several targets)."""
    if not isinstance(node, (ast.Assign, ast.AnnAssign)):
        return False
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    return any(isinstance(t, ast.Name) and t.id == "check_values" for t in targets)


def assigns_check_values(src):
    """Whether a check cell assigns ``check_values`` at its top level."""
    try:
        tree = ast.parse(src)
    except SyntaxError:
        return bool(re.search(r"^check_values\s*=", src, re.M))
    return any(is_check_values_assignment(node) for node in tree.body)


def _base_name(node):
    while isinstance(node, (ast.Subscript, ast.Attribute)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


MUTATORS = {"update", "setdefault", "pop", "popitem", "clear", "__setitem__", "__delitem__"}


def changes_check_values_later(src):
    r"""Whether a check cell changes ``check_values`` after the top-level statement that assigns
    it (``check_values["x"] = ...``, ``check_values.update(...)``, ``del check_values["x"]``):
    the grader reads ``check_values`` right after that statement, before the assertions run
    (:func:`coursework.runner.split_check`), so such a change would not reach it.

    >>> changes_check_values_later('check_values = {"a": 1}\nassert check_values["a"] == 1')
    False
    >>> changes_check_values_later('check_values = {"a": 1}\ncheck_values["b"] = 2')
    True
    """
    try:
        tree = ast.parse(src)
    except SyntaxError:
        return False
    assigned = False
    for node in tree.body:
        if is_check_values_assignment(node):
            assigned = True
            continue
        if not assigned:
            continue
        for sub in ast.walk(node):
            if isinstance(sub, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
                targets = sub.targets if isinstance(sub, (ast.Assign, ast.Delete)) else [sub.target]
                if any(not isinstance(t, ast.Name) and _base_name(t) == "check_values" for t in targets):
                    return True
            if (
                isinstance(sub, ast.Call)
                and isinstance(sub.func, ast.Attribute)
                and sub.func.attr in MUTATORS
                and _base_name(sub.func.value) == "check_values"
            ):
                return True
    return False


def _tolerance_problem(cell):
    meta = cell.get("metadata", {}).get("coursework")
    if meta is None:
        return None
    if not isinstance(meta, dict) or set(meta) - {"rtol", "atol"}:
        return f"metadata 'coursework' must be a dict with keys rtol and/or atol, got {meta!r}"
    for key, value in meta.items():
        if (
            not isinstance(value, (int, float))
            or isinstance(value, bool)
            or not math.isfinite(value)
            or value < 0
        ):
            return f"metadata coursework.{key} must be a finite number >= 0, got {value!r}"
    return None


def structure_problems(nb, name="notebook"):
    """Everything that breaks the coursework conventions (DESIGN.md "Book conventions",
    CONVENTIONS section 4), as readable strings."""
    problems = []
    exs = exercises(nb)
    labels = [e.label for e in exs]
    for e in exs:
        where = f"{name}: exercise {e.label or e.title!r}"
        if not e.label:
            problems.append(f"{where} (cell {e.cell}) has no :label:")
            continue
        if labels.count(e.label) > 1:
            problems.append(f"{where}: label used more than once")
        if not e.has_solution:
            problems.append(f"{where}: no {{solution}} directive for it")
        if e.coding and e.manual:
            problems.append(
                f"{where}: has a markdown answer cell before its code answer/check cells (a "
                "coding exercise's written part comes right after its check cell)"
            )
            continue
        if e.coding:
            problems += _coding_problems(nb, e, where)
            if e.written:
                problems += _written_problems(nb, e, where)
        elif e.manual:
            problems += _manual_problems(nb, e, where)
        else:
            problems.append(
                f"{where}: no answer cell (a coding exercise needs an answer and a check "
                "cell, a pen-and-paper exercise a markdown answer cell right after it)"
            )
    # grade cells that belong to no exercise, or sit after the wrong one
    owned = {i for e in exs for i in e.answers + e.checks + e.manual + e.written}
    for i, cell in enumerate(nb.cells):
        text = source(cell)
        if (
            nbgrader_meta(cell)
            and i not in owned
            and (nbgrader_meta(cell).get("solution") or nbgrader_meta(cell).get("grade"))
        ):
            problems.append(f"{name}: cell {i} has nbgrader metadata but follows no {{exercise}}")
        if cell.cell_type == "code" and (BEGIN in text) and not is_answer(cell):
            problems.append(f"{name}: cell {i} holds '{BEGIN}' but is not an nbgrader solution cell")
        if "HIDDEN TESTS" in text and cell.cell_type == "code" and not is_check(cell):
            problems.append(f"{name}: cell {i} holds hidden tests but is not a check cell")
        if cell.cell_type == "markdown" and GATED_RE.search(text):
            problems.append(
                f"{name}: cell {i} uses gated exercise/solution directives, which the student "
                "edition does not support"
            )
        if cell.cell_type == "markdown" and nbgrader_meta(cell) and not is_manual_answer(cell):
            problems.append(
                f"{name}: markdown cell {i} has nbgrader metadata but is not a "
                "pen-and-paper answer cell (solution and grade both true)"
            )
    return problems


def _coding_problems(nb, e, where):
    problems = []
    if len(e.answers) != 1 or len(e.checks) != 1:
        return [
            f"{where}: {len(e.answers)} answer cells and {len(e.checks)} check cells (need exactly 1 and 1)"
        ]
    a, c = e.answers[0], e.checks[0]
    am, cm = nbgrader_meta(nb.cells[a]), nbgrader_meta(nb.cells[c])
    if c != a + 1:
        problems.append(
            f"{where}: the check cell (cell {c}) does not immediately follow the answer cell (cell {a})"
        )
    problems += _metadata_problems(
        f"{where}: answer cell {a}", am, solution=True, grade=False, grade_id=e.answer_id, locked=False
    )
    problems += _metadata_problems(
        f"{where}: check cell {c}", cm, solution=False, grade=True, grade_id=e.check_id, locked=True, points=True
    )
    src = source(nb.cells[a])
    if src.count(BEGIN) != 1 or src.count(END) != 1 or src.index(BEGIN) > src.index(END):
        problems.append(f"{where}: answer cell {a} needs one '{BEGIN}' ... '{END}' region")
    else:
        stub = stub_statement_problem(src)
        if stub:
            problems.append(f"{where}: answer cell {a} {stub}")
    if "hide-input" not in nb.cells[a].metadata.get("tags", []):
        problems.append(f"{where}: answer cell {a} is not tagged hide-input")
    label = re.search(CODE_LABEL_PATTERN, source(nb.cells[c]))
    if label:
        problems.append(
            f"{where}: check cell {c} names the label {label.group(0)}; say it in words (the "
            "student edition numbers labels in code, but shows check cells as they are graded)"
        )
    visible = without_hidden_tests(source(nb.cells[c]))
    if visible is None:
        problems.append(
            f"{where}: check cell {c} needs each '{HIDDEN_BEGIN}' closed by '{HIDDEN_END}', "
            "one region at a time"
        )
    elif not assigns_check_values(visible):
        problems.append(
            f"{where}: check cell {c} assigns check_values only inside its hidden tests; the "
            "student's copy must assign it too"
        )
    if not assigns_check_values(source(nb.cells[c])):
        problems.append(
            f"{where}: check cell {c} does not assign check_values (a dict of the numbers "
            "the grader compares with the instructor's, CONVENTIONS section 4)"
        )
    if changes_check_values_later(source(nb.cells[c])):
        problems.append(
            f"{where}: check cell {c} changes check_values after assigning it; the grader reads "
            "it right after the assignment (before the assertions), so build it in that one statement"
        )
    tol = _tolerance_problem(nb.cells[c])
    if tol:
        problems.append(f"{where}: check cell {c} {tol}")
    return problems


def _metadata_problems(what, meta, points=False, **want):
    """How the nbgrader metadata ``meta`` of the cell ``what`` differs from ``want`` (schema 3),
    and, with ``points``, whether it lacks a positive number of points."""
    problems = [
        f"{what} has nbgrader {k}={meta.get(k)!r}, expected {v!r}"
        for k, v in {**want, "schema_version": 3}.items()
        if meta.get(k) != v
    ]
    pts = meta.get("points")
    if points and (not isinstance(pts, (int, float)) or isinstance(pts, bool) or not pts > 0):
        problems.append(f"{what} has points={pts!r}, expected a number > 0")
    return problems


def _manual_problems(nb, e, where):
    """The answer cell of a pen-and-paper exercise: one markdown cell right after the exercise
    cell, graded by hand (grade id ``<label>-answer``), holding the marking guide."""
    if len(e.manual) != 1:
        return [f"{where}: {len(e.manual)} markdown answer cells (need exactly 1)"]
    return _hand_cell_problems(nb, e.manual[0], e.cell, "exercise", e.answer_id, f"{where}: answer")


def _written_problems(nb, e, where):
    """The written part of a coding exercise: one markdown answer cell right after the check
    cell, graded by hand (grade id ``<label>-written``), holding the marking guide."""
    if len(e.written) != 1:
        return [f"{where}: {len(e.written)} markdown answer cells after its code (need at most 1)"]
    return _hand_cell_problems(
        nb, e.written[0], e.checks[-1], "check", e.written_id, f"{where}: written answer"
    )


def _hand_cell_problems(nb, i, after, after_what, gid, where):
    """What is wrong with the markdown cell ``i`` graded by hand: not right after cell ``after``
    (the ``after_what`` cell), metadata other than nbgrader's for it, no remove-cell tag, empty."""
    problems = []
    if i != after + 1:
        problems.append(
            f"{where} cell (cell {i}) does not immediately follow the {after_what} cell (cell {after})"
        )
    problems += _metadata_problems(
        f"{where} cell {i}",
        nbgrader_meta(nb.cells[i]),
        solution=True,
        grade=True,
        grade_id=gid,
        locked=False,
        points=True,
    )
    if "remove-cell" not in nb.cells[i].metadata.get("tags", []):
        problems.append(
            f"{where} cell {i} is not tagged remove-cell (its marking guide must not show on the website)"
        )
    if not source(nb.cells[i]).strip():
        problems.append(f"{where} cell {i} is empty (write the marking guide in it)")
    return problems


def grade_ids(nb):
    return [nbgrader_meta(c)["grade_id"] for c in nb.cells if nbgrader_meta(c).get("grade_id")]


# --------------------------------------------------------------------------- chapter summary

GOALS_HEAD_RE = re.compile(r"^(#+\s*|\*\*)?learning goals\b", re.I | re.M)
TIME_RE = re.compile(
    r"estimated (?:study |reading )?time\W+(?:about |approximately |~)?(\d+(?:\.\d+)?)\s*(min|minutes|h|hours)\b",
    re.I,
)
ITEM_RE = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(.*)$")


def chapter_summary(nb):
    """Title, learning goals, exercises and estimated study time of a chapter notebook."""
    first = next((source(c) for c in nb.cells if c.cell_type == "markdown"), "")
    title = next((l[2:].strip() for l in first.splitlines() if l.startswith("# ")), "")
    goals, in_goals = [], False
    for cell in nb.cells[:3]:
        if cell.cell_type != "markdown":
            continue
        for line in source(cell).splitlines():
            if GOALS_HEAD_RE.search(line):
                in_goals = True
                continue
            if in_goals:
                m = ITEM_RE.match(line)
                if m:
                    goals.append(m.group(1).strip())
                elif line.startswith(("  ", "\t")) and goals:
                    goals[-1] += " " + line.strip()
                elif line.strip() and goals:
                    in_goals = False
        if goals:
            break
    exs = exercises(nb)
    text = "\n".join(source(c) for c in nb.cells)
    m = TIME_RE.search(text)
    if m:
        minutes = float(m.group(1)) * (60 if m.group(2).lower().startswith("h") else 1)
        stated = True
    else:
        minutes, stated = estimate_minutes(nb, exs), False
    return {"title": title, "goals": goals, "exercises": exs, "minutes": int(minutes), "stated": stated}


def estimate_minutes(nb, exs=None):
    """Estimated study time when a chapter states none: 100 words of prose a minute, one minute
    per code cell, 15 minutes per coding exercise (5 more with a written part) and 10 per
    pen-and-paper exercise, rounded up to 5."""
    exs = exercises(nb) if exs is None else exs
    words = sum(
        len(source(c).split()) for c in nb.cells if c.cell_type == "markdown" and not is_manual_answer(c)
    )  # not the marking guides
    code = sum(1 for c in nb.cells if c.cell_type == "code")
    minutes = words / 100 + code + sum((15 if e.coding else 10) + 5 * bool(e.written) for e in exs)
    return 5 * math.ceil(minutes / 5)


def main(argv=None):
    """``python -m coursework.book``: print the notebooks listed in _toc.yml, one path per line."""
    import sys

    root = pathlib.Path(argv[0] if argv else ROOT)
    sys.stdout.write("".join(f"{p.relative_to(root)}\n" for p in toc_notebooks(root)))
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main(sys.argv[1:]))
