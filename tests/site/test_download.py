"""A reader downloads a chapter from the website and runs it (issue 16): the built site served
over HTTP from localhost; the chapter's notebook, the blrlib wheel and the requirements file
downloaded from it into an empty folder; a fresh virtual environment (no system site packages)
with Jupyter's kernel machinery only.  Run there, the chapter first stops in its first code cell
with one line that gives the install command; after that command (pip install -r
requirements.txt, from the package registry or pip's cache) it runs from top to bottom.

Slow (a minute or two: the environment is new), so it runs one fast chapter.  Needs only the
built site and the package registry (or pip's cache).
"""

import json
import os
import pathlib
import re
import subprocess
import sys
import urllib.request

import pytest

from _site import NOTEBOOK_PAGES, PAGES

CHAPTER = "book/01_log_odds"      # a fast chapter; any chapter of the toc does
KERNEL_PACKAGES = ["ipykernel", "nbclient", "nbformat"]

RUN = r"""
import json, sys
import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError
nb = nbformat.read(sys.argv[1], as_version=4)
client = NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": sys.argv[2]}})
try:
    client.execute()
    print(json.dumps({"ok": True}))
except CellExecutionError:
    for i, cell in enumerate(nb.cells):
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                print(json.dumps({"ok": False, "cell": i, "ename": out["ename"], "traceback": out["traceback"],
                                  "first_code_cell": i == next(j for j, c in enumerate(nb.cells) if c.cell_type == "code")}))
                sys.exit(0)
    raise
"""


def _pinned(names):
    """The versions of the test's own environment (so pip finds them in its cache)."""
    import importlib.metadata

    return [f"{n}=={importlib.metadata.version(n)}" for n in names]


def _get(url, dest):
    with urllib.request.urlopen(url, timeout=60) as r:
        assert r.status == 200, f"{url}: HTTP {r.status}"
        dest.write_bytes(r.read())
    return dest


@pytest.mark.skipif(CHAPTER not in PAGES, reason=f"{CHAPTER} is not in the toc")
def test_a_downloaded_chapter_runs_in_a_fresh_environment(server, html_dir, tmp_path):
    folder = tmp_path / "reader"
    folder.mkdir()
    name = CHAPTER.split("/")[-1] + ".ipynb"
    # what the reader clicks: the page's download button and the intro's links
    page = urllib.request.urlopen(f"{server}/{CHAPTER}.html", timeout=60).read().decode()
    href = re.search(r'href="([^"]*_sources/[^"]*\.ipynb)"', page).group(1)
    _get(urllib.parse.urljoin(f"{server}/{CHAPTER}.html", href), folder / name)
    intro = urllib.request.urlopen(f"{server}/{PAGES[0]}.html", timeout=60).read().decode()
    links = {pathlib.PurePosixPath(h).name: urllib.parse.urljoin(f"{server}/{PAGES[0]}.html", h)
             for h in re.findall(r'href="([^"]+\.(?:whl|txt))"', intro)}
    assert "requirements.txt" in links, f"the intro page links no requirements.txt: {sorted(links)}"
    wheels = [n for n in links if n.startswith("blrlib-") and n.endswith(".whl")]
    assert len(wheels) == 1, f"the intro page should link one blrlib wheel: {sorted(links)}"
    _get(links["requirements.txt"], folder / "requirements.txt")
    _get(links[wheels[0]], folder / wheels[0])
    assert f"./{wheels[0]}" in (folder / "requirements.txt").read_text().split()

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = str(venv / "bin" / "python")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "JUPYTER", "IPYTHON"))}
    env.update(PIP_DISABLE_PIP_VERSION_CHECK="1", OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MPLBACKEND="Agg")
    pip = [py, "-m", "pip", "install", "--quiet", "--only-binary=:all:"]
    subprocess.run(pip + _pinned(KERNEL_PACKAGES), check=True, env=env, cwd=folder)
    (tmp_path / "run.py").write_text(RUN)

    def run():
        done = subprocess.run([py, str(tmp_path / "run.py"), str(folder / name), str(folder)],
                              env=env, cwd=folder, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        return json.loads(done.stdout.strip().splitlines()[-1])

    # without blrlib: the first code cell stops with one line, the install command
    first = run()
    assert not first["ok"] and first["first_code_cell"], first
    assert len(first["traceback"]) == 1, f"more than one line: {first['traceback']}"
    line = first["traceback"][0]
    assert "pip install -r requirements.txt" in line and wheels[0] in line, line

    # the reader runs that command in the folder, then the chapter
    subprocess.run([py, "-m", "pip", "install", "--quiet", "-r", "requirements.txt"], check=True, env=env, cwd=folder)
    second = run()
    assert second["ok"], f"{name} failed in the fresh environment: {second}"


def test_every_downloadable_chapter_starts_with_the_install_check(html_dir):
    """The check is added at build time (book/_ext/coursework_book.py) to every chapter, so new
    chapters get it too; the rest of the first cell is the chapter's own."""
    for doc in NOTEBOOK_PAGES:
        nb = json.loads((html_dir / "_sources" / f"{doc}.ipynb").read_text())
        first = next(c for c in nb["cells"] if c["cell_type"] == "code")
        source = "".join(first["source"])
        assert 'find_spec("blrlib") is None' in source and "pip install -r requirements.txt" in source, doc
