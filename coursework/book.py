"""Read the table of contents, the chapters and their exercises."""

from __future__ import annotations

import dataclasses
import math
import pathlib
import re

import nbformat
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[1]  # coursework/book.py

EXERCISE_RE = re.compile(r"^(?P<fence>`{3,}|:{3,})\{exercise\}[ \t]*(?P<title>.*)$", re.M)
LABEL_RE = re.compile(r"^:label:[ \t]*(?P<label>\S+)[ \t]*$", re.M)
SOLUTION_RE = re.compile(r"^(?P<fence>`{3,}|:{3,})\{solution\}[ \t]*(?P<target>\S*)", re.M)
GATED_RE = re.compile(r"\{(exercise|solution)-(start|end)\}")
BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"


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
    return cell.get("metadata", {}).get("nbgrader", {}) or {}


def is_answer(cell):
    m = nbgrader_meta(cell)
    return cell.get("cell_type") == "code" and bool(m.get("solution"))


def is_check(cell):
    m = nbgrader_meta(cell)
    return cell.get("cell_type") == "code" and bool(m.get("grade")) and not m.get("solution")


def source(cell):
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


@dataclasses.dataclass
class Exercise:
    """One ``{exercise}`` of a chapter and, for a coding exercise, its answer and check cells."""

    label: str
    title: str
    cell: int                      # index of the markdown cell holding the directive
    answers: list = dataclasses.field(default_factory=list)   # indices of answer cells
    checks: list = dataclasses.field(default_factory=list)    # indices of check cells
    points: float = 0.0
    has_solution: bool = False

    @property
    def coding(self):
        return bool(self.answers or self.checks)

    @property
    def answer_id(self):
        return f"{self.label}-answer"

    @property
    def check_id(self):
        return f"{self.label}-check"


def read(path):
    return nbformat.read(str(path), as_version=4)


def exercises(nb):
    """The exercises of a notebook, in order, with the answer/check cells that follow each."""
    found, current = [], None
    for i, cell in enumerate(nb.cells):
        text = source(cell)
        if cell.cell_type == "markdown":
            for m in EXERCISE_RE.finditer(text):
                lab = LABEL_RE.search(text, m.end())
                current = Exercise(label=lab.group("label") if lab else "", title=m.group("title").strip(), cell=i)
                found.append(current)
            for m in SOLUTION_RE.finditer(text):
                for ex in found:
                    if ex.label and ex.label == m.group("target"):
                        ex.has_solution = True
        elif current is not None and is_answer(cell):
            current.answers.append(i)
        elif current is not None and is_check(cell):
            current.checks.append(i)
            current.points += float(nbgrader_meta(cell).get("points") or 0)
    return found


def structure_problems(nb, name="notebook"):
    """Everything that breaks the coursework conventions of DESIGN.md, as readable strings."""
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
        if not e.coding:
            continue
        if len(e.answers) != 1 or len(e.checks) != 1:
            problems.append(f"{where}: {len(e.answers)} answer cells and {len(e.checks)} check cells (need exactly 1 and 1)")
            continue
        a, c = e.answers[0], e.checks[0]
        am, cm = nbgrader_meta(nb.cells[a]), nbgrader_meta(nb.cells[c])
        if c != a + 1:
            problems.append(f"{where}: the check cell (cell {c}) does not immediately follow the answer cell (cell {a})")
        want_a = {"solution": True, "grade": False, "grade_id": e.answer_id, "locked": False, "schema_version": 3}
        for k, v in want_a.items():
            if am.get(k) != v:
                problems.append(f"{where}: answer cell {a} has nbgrader {k}={am.get(k)!r}, expected {v!r}")
        want_c = {"solution": False, "grade": True, "grade_id": e.check_id, "locked": True, "schema_version": 3}
        for k, v in want_c.items():
            if cm.get(k) != v:
                problems.append(f"{where}: check cell {c} has nbgrader {k}={cm.get(k)!r}, expected {v!r}")
        pts = cm.get("points")
        if not isinstance(pts, (int, float)) or isinstance(pts, bool) or not pts > 0:
            problems.append(f"{where}: check cell {c} has points={pts!r}, expected a number > 0")
        src = source(nb.cells[a])
        if src.count(BEGIN) != 1 or src.count(END) != 1 or src.index(BEGIN) > src.index(END):
            problems.append(f"{where}: answer cell {a} needs one '{BEGIN}' ... '{END}' region")
        if "hide-input" not in nb.cells[a].metadata.get("tags", []):
            problems.append(f"{where}: answer cell {a} is not tagged hide-input")
    # grade cells that belong to no exercise, or sit after the wrong one
    owned = {i for e in exs for i in e.answers + e.checks}
    for i, cell in enumerate(nb.cells):
        text = source(cell)
        if (is_answer(cell) or is_check(cell)) and i not in owned:
            problems.append(f"{name}: cell {i} has nbgrader metadata but follows no {{exercise}}")
        if cell.cell_type == "code" and (BEGIN in text) and not is_answer(cell):
            problems.append(f"{name}: cell {i} holds '{BEGIN}' but is not an nbgrader solution cell")
        if cell.cell_type == "markdown" and GATED_RE.search(text):
            problems.append(f"{name}: cell {i} uses gated exercise/solution directives, which the student edition does not support")
        if nbgrader_meta(cell) and cell.cell_type == "markdown":
            problems.append(f"{name}: markdown cell {i} has nbgrader metadata (only code cells are graded)")
    return problems


def grade_ids(nb):
    return [nbgrader_meta(c)["grade_id"] for c in nb.cells if nbgrader_meta(c).get("grade_id")]


# --------------------------------------------------------------------------- chapter summary

GOALS_HEAD_RE = re.compile(r"^(#+\s*|\*\*)?learning goals\b", re.I | re.M)
TIME_RE = re.compile(r"estimated (?:study |reading )?time\W+(?:about |approximately |~)?(\d+(?:\.\d+)?)\s*(min|minutes|h|hours)\b", re.I)
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
    per code cell, 15 minutes per coding and 10 per pen-and-paper exercise, rounded up to 5."""
    exs = exercises(nb) if exs is None else exs
    words = sum(len(source(c).split()) for c in nb.cells if c.cell_type == "markdown")
    code = sum(1 for c in nb.cells if c.cell_type == "code")
    minutes = words / 100 + code + sum(15 if e.coding else 10 for e in exs)
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
