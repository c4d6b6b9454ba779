"""What kind of cell a chapter cell is, from its source: an exercise's answer, a check that only
asserts, or ordinary code.  Shared by tests/test_book.py (the cell metadata the page conventions
ask for) and tests/site/test_html.py (what the built page shows of each cell).

The page conventions (CONVENTIONS.md section 3, issue 12):
- an answer cell of a coding exercise (nbgrader ``solution``) is tagged ``hide-input`` and
  ``remove-output`` and its toggle reads "Show the answer code";
- a cell that only checks (asserts, ``np.testing.assert_*`` calls, and assignments used by
  nothing after it), and every exercise check cell (nbgrader ``grade``), is tagged ``hide-input``
  and its toggle reads "Show the checks".
"""

from __future__ import annotations

import ast
import re

ANSWER_PROMPTS = {"code_prompt_show": "Show the answer code", "code_prompt_hide": "Hide the answer code"}
CHECK_PROMPTS = {"code_prompt_show": "Show the checks", "code_prompt_hide": "Hide the checks"}
ANSWER_TAGS = ("hide-input", "remove-output")
CHECK_TAGS = ("hide-input",)
BEGIN_SOLUTION = "### BEGIN SOLUTION"

_ASSERT_CALL = re.compile(r"(^|\.)assert\w*$")


def source(cell):
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def tags(cell):
    return list(cell.get("metadata", {}).get("tags", []) or [])


def nbgrader(cell):
    return cell.get("metadata", {}).get("nbgrader", {}) or {}


def is_answer(cell):
    return cell.get("cell_type") == "code" and bool(nbgrader(cell).get("solution"))


def is_grade_check(cell):
    m = nbgrader(cell)
    return cell.get("cell_type") == "code" and bool(m.get("grade")) and not m.get("solution")


def _parse(text):
    """The cell's AST, or None for IPython syntax (magics, shell escapes) or a syntax error."""
    if any(line.lstrip().startswith(("%", "!")) for line in text.splitlines()):
        return None
    try:
        return ast.parse(text)
    except SyntaxError:
        return None


def _call_name(node):
    f = node.func
    if isinstance(f, ast.Name):
        return f.id
    if isinstance(f, ast.Attribute):
        parts = []
        while isinstance(f, ast.Attribute):
            parts.append(f.attr)
            f = f.value
        if isinstance(f, ast.Name):
            parts.append(f.id)
        return ".".join(reversed(parts))
    return ""


def _stored(node):
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def _checks_only(stmts, assigned):
    """Number of assertions in ``stmts`` if they do nothing but check (else None); the names
    they assign are added to ``assigned``."""
    count = 0
    for s in stmts:
        if isinstance(s, ast.Assert):
            count += 1
        elif isinstance(s, ast.Expr) and isinstance(s.value, ast.Call) and _ASSERT_CALL.search(_call_name(s.value)):
            count += 1
        elif isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant):
            continue                                   # a bare string
        elif isinstance(s, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            assigned |= _stored(s)
        elif isinstance(s, (ast.Import, ast.ImportFrom)):
            assigned |= {(a.asname or a.name).split(".")[0] for a in s.names}
        elif isinstance(s, (ast.FunctionDef, ast.ClassDef)):
            assigned.add(s.name)
        elif isinstance(s, (ast.For, ast.While, ast.If, ast.With)):
            if isinstance(s, ast.For):
                assigned |= _stored(s.target)
            if isinstance(s, ast.With):
                for item in s.items:
                    if item.optional_vars is not None:
                        assigned |= _stored(item.optional_vars)
            inner = _checks_only(s.body, assigned)
            rest = _checks_only(getattr(s, "orelse", []), assigned)
            if inner is None or rest is None:
                return None
            count += inner + rest
        else:
            return None                                # output, a plot, a bare call: real work
    return count


def _reads_before_writing(tree, names):
    """Whether the cell reads one of ``names`` before assigning it itself (statement order)."""
    defined = set()
    for stmt in tree.body:
        loads = {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        if (loads - defined) & names:
            return True
        defined |= _stored(stmt)
        if isinstance(stmt, (ast.FunctionDef, ast.ClassDef)):
            defined.add(stmt.name)
    return False


def is_assert_only(cells, i):
    """Whether code cell ``cells[i]`` only checks: it asserts at least once, does nothing else
    that shows or changes what comes after (no output, no plot), and no later cell reads a name
    it assigns."""
    cell = cells[i]
    if cell.get("cell_type") != "code" or is_answer(cell):
        return False
    if is_grade_check(cell):
        return True
    tree = _parse(source(cell))
    if tree is None:
        return False
    assigned = set()
    n = _checks_only(tree.body, assigned)
    if not n:
        return False
    for later in cells[i + 1:]:
        if later.get("cell_type") != "code":
            continue
        t = _parse(source(later))
        if t is None:
            if any(re.search(rf"\b{re.escape(a)}\b", source(later)) for a in assigned):
                return False
            continue
        if _reads_before_writing(t, assigned):
            return False
    return True


def kind(cells, i):
    """``"answer"``, ``"check"`` or ``"code"`` for a code cell; None for other cells."""
    cell = cells[i]
    if cell.get("cell_type") != "code":
        return None
    if is_answer(cell):
        return "answer"
    if is_assert_only(cells, i):
        return "check"
    return "code"


def convention_problems(cells, i):
    """What the page conventions ask of code cell ``cells[i]`` that it does not have."""
    k, cell = kind(cells, i), cells[i]
    if k == "code":
        # any folded cell names what it holds ("Show the checks", ...), never MyST-NB's
        # default "Show code cell source" (the site test reads the same on the page)
        meta = cell.get("metadata", {}).get("mystnb", {}) or {}
        folded = [t for t in tags(cell) if t in ("hide-input", "hide-cell", "hide-output")]
        return [f"code cell {i}: tagged {folded[0]} without a mystnb code_prompt_show"] \
            if folded and not meta.get("code_prompt_show") else []
    if k not in ("answer", "check"):
        return []
    want_tags, want_prompts = (ANSWER_TAGS, ANSWER_PROMPTS) if k == "answer" else (CHECK_TAGS, CHECK_PROMPTS)
    problems = [f"{k} cell {i}: not tagged {t}" for t in want_tags if t not in tags(cell)]
    meta = cell.get("metadata", {}).get("mystnb", {}) or {}
    problems += [f"{k} cell {i}: mystnb {key} is {meta.get(key)!r}, expected {v!r}"
                 for key, v in want_prompts.items() if meta.get(key) != v]
    return problems
