"""Book hygiene: notebooks are committed without outputs, and the toc and the files agree."""

import json
import pathlib

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
