"""Book hygiene: notebooks are committed without outputs, the toc and the files agree, the chapter
sources follow the page conventions of issue 12 (code formatted to 88 characters, answer and check
cells folded and labelled, figure fonts of at least 12 pt), and the README and licence hold."""

import json
import pathlib
import re

import pytest
import yaml

from coursework.book import toc_files, toc_notebooks

ROOT = pathlib.Path(__file__).resolve().parents[1]

NOTEBOOKS = sorted((ROOT / "book").glob("*.ipynb"))


def test_every_toc_entry_exists():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    missing = [f for f in toc_files(toc) if not any((ROOT / f"{f}{ext}").exists() for ext in (".md", ".ipynb"))]
    assert not missing, f"_toc.yml lists files that do not exist: {missing}"


def test_every_notebook_is_in_the_toc():
    listed = set(toc_notebooks())
    assert set(NOTEBOOKS) <= listed, f"notebooks missing from _toc.yml: {sorted(set(NOTEBOOKS) - listed)}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_has_no_stored_outputs(path):
    nb = json.loads(path.read_text())
    dirty = [i for i, c in enumerate(nb["cells"]) if c["cell_type"] == "code"
             and (c.get("outputs") or c.get("execution_count") is not None)]
    assert not dirty, f"{path.name}: cells {dirty} have stored outputs; clear them before committing"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_chapter_imports_blrlib_and_uses_python3_kernel(path):
    nb = json.loads(path.read_text())
    code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    assert "blrlib" in code, f"{path.name} never imports blrlib"
    assert nb["metadata"]["kernelspec"]["name"] == "python3"


# ------------------------------------------------------------------ page conventions (issue 12)
# What a chapter's source must hold so that its page reads well; tests/site checks the pages.

import importlib.util
import subprocess
import sys

_spec = importlib.util.spec_from_file_location("_cells", ROOT / "tests" / "site" / "_cells.py")
_cells = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_cells)

TOC_NOTEBOOKS = toc_notebooks(ROOT)
MAX_LINE = 88
RUFF = pathlib.Path(sys.executable).with_name("ruff")


def _code_cells(path):
    nb = json.loads(path.read_text())
    return nb["cells"]


@pytest.mark.parametrize("path", TOC_NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_code_is_ruff_formatted(path):
    """ruff (pinned in requirements.txt) formats every code cell to 88 characters a line:
    `ruff format --line-length 88 book/NN_x.ipynb` fixes what this finds."""
    assert RUFF.exists(), f"ruff is not installed beside {sys.executable} (requirements.txt pins it)"
    run = subprocess.run([str(RUFF), "format", "--check", "--diff", "--no-cache", "--line-length", str(MAX_LINE), str(path)],
                         capture_output=True, text=True, cwd=ROOT)
    assert run.returncode == 0, (f"{path.name} is not ruff-formatted; run `.venv/bin/ruff format --line-length 88 "
                                 f"{path.relative_to(ROOT)}`:\n{(run.stdout + run.stderr)[:3000]}")


@pytest.mark.parametrize("path", TOC_NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_code_lines_at_most_88_characters(path):
    """ruff does not split long strings or comments: those are shortened by hand."""
    long = [f"cell {i}: {len(line)} chars: {line[:60]}..."
            for i, c in enumerate(_code_cells(path)) if c["cell_type"] == "code"
            for line in _cells.source(c).splitlines() if len(line) > MAX_LINE]
    assert not long, f"{path.name}: {len(long)} code lines longer than {MAX_LINE} characters:\n" + "\n".join(long[:20])


@pytest.mark.parametrize("path", TOC_NOTEBOOKS, ids=lambda p: p.name)
def test_answer_and_check_cells_are_folded_and_labelled(path):
    """Answer cells: hide-input + remove-output, toggle "Show the answer code"; cells that only
    check (and exercise check cells): hide-input, toggle "Show the checks"."""
    cells = _code_cells(path)
    problems = [p for i in range(len(cells)) for p in _cells.convention_problems(cells, i)]
    assert not problems, f"{path.name}: {len(problems)} problems:\n" + "\n".join(problems[:30])


def test_assert_only_classification():
    """The classifier the two tests above and the site tests rely on."""
    def code(src, **meta):
        return {"cell_type": "code", "source": src, "metadata": meta}

    cells = [
        code("x = f(1)\nassert x > 0"),                        # 0: check (x not read later)
        code("np.testing.assert_allclose(a, b, rtol=1e-12)"),   # 1: check
        code("y = g(2)\nassert y > 0"),                        # 2: y is read by cell 5
        code("print(z)\nassert z"),                             # 3: output
        code("%timeit f(1)"),                                   # 4: magic
        code("plt.plot(y)"),                                    # 5: reads y
        code("for t in ts:\n    assert t >= 0"),                # 6: check
        code("check_values = {'v': 1}", nbgrader={"grade": True, "solution": False}),  # 7: grade cell
        code("### BEGIN SOLUTION\nv = 1\n### END SOLUTION", nbgrader={"solution": True}),  # 8: answer
        code("x = 3\nprint(x)"),                                # 9: x re-assigned before read
    ]
    kinds = [_cells.kind(cells, i) for i in range(len(cells))]
    assert kinds == ["check", "check", "code", "code", "code", "code", "check", "check", "answer", "code"]
    assert _cells.convention_problems(cells, 1) == [
        "check cell 1: not tagged hide-input",
        "check cell 1: mystnb code_prompt_show is None, expected 'Show the checks'",
        "check cell 1: mystnb code_prompt_hide is None, expected 'Hide the checks'"]
    good = code("assert True", tags=["hide-input"], mystnb=dict(_cells.CHECK_PROMPTS))
    assert _cells.convention_problems([good], 0) == []


def test_book_style_fonts_are_at_least_12_points():
    """Figures are shown at natural size at 1280 px, so 12 pt at dpi 100 is about 17 px:
    at least the 16 px body text."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.font_manager import FontProperties

    from blrlib.plotting import use_book_style

    with plt.rc_context():
        use_book_style()
        keys = ["font.size", "axes.labelsize", "axes.titlesize", "xtick.labelsize", "ytick.labelsize",
                "legend.fontsize", "legend.title_fontsize", "figure.titlesize", "figure.labelsize"]
        sizes = {}
        for k in keys:
            v = plt.rcParams[k]
            if v is None:                                   # legend.title_fontsize: as legend.fontsize
                v = plt.rcParams["legend.fontsize"]
            sizes[k] = FontProperties(size=v).get_size_in_points()
        assert plt.rcParams["figure.dpi"] == 100
    small = {k: v for k, v in sizes.items() if v < 12}
    assert not small, f"use_book_style() sets fonts below 12 pt: {small}"


# ------------------------------------------------------------------ what a newcomer reads


def test_readme_names_only_files_in_the_repository():
    text = (ROOT / "README.md").read_text()
    assert "design notes" not in text.lower(), "README points at design notes that are not in the repository"
    links = re.findall(r"\]\(([^)#\s]+)\)", text)
    local = [link for link in links if "://" not in link and not link.startswith("mailto:")]
    missing = [link for link in local if not (ROOT / link).exists()]
    assert not missing, f"README links to files that do not exist: {missing}"
    for needed in ("LICENSE", "_build/student", "3.11", ".venv"):
        assert needed in text, f"README does not mention {needed}"


def test_licence_is_stated():
    lic = (ROOT / "LICENSE").read_text()
    assert "CC BY 4.0" in lic and "MIT" in lic and "Permission is hereby granted" in lic
    for page in ("README.md", "book/intro.md"):
        text = (ROOT / page).read_text()
        assert "CC BY 4.0" in text and "MIT" in text, f"{page} does not state the licence"


#: the modules of the book's Sphinx extensions (book/_ext) whose docstrings hold examples
EXT_MODULES = ["coursework_book", "code_labels", "literal_blocks"]


@pytest.mark.parametrize("name", EXT_MODULES)
def test_sphinx_extension_doctests(name, monkeypatch):
    """The examples in book/_ext's docstrings (column_shares, set_literal_text, ...) hold:
    pytest's doctest run covers tests/ and blrlib/ only."""
    import doctest
    import importlib
    import sys

    monkeypatch.syspath_prepend(str(ROOT / "book" / "_ext"))
    module = importlib.import_module(name)
    try:
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    finally:
        sys.modules.pop(name, None)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples of book/_ext/{name}.py failed"
    if name != "code_labels":
        assert result.attempted > 0, f"book/_ext/{name}.py has no examples"
