"""The system tools some checks need (not Python packages), and the one summary of what was skipped.

`make test` needs only Python 3.11 and make.  A few checks need programs that pip cannot
install: bubblewrap for the grading sandbox (tests/test_grading.py, tests/test_coursework.py),
Chromium for the browser tests of the site (tests/site), TeX Live and poppler-utils for the PDF
(`make pdf-test`).  Where one is missing, the checks that need it are skipped with a reason
that carries the tag ``[missing system tool: NAME]``.  A pytest run prints at its end which
checks it skipped so and the one ``apt-get install`` line that enables them, and appends them
to ``SKIPS_FILE``; under `make test` (``BOOK_SYSTEM_SUMMARY=make``) the runs print nothing, and
the last step of `make test` (``python tests/_system.py``) prints the summary once for all.

Under CI (``.ci/run`` exports ``BOOK_SYSTEM_REQUIRED=1``) every such check is required: a
missing tool fails the check instead of skipping it.
"""

from __future__ import annotations

import collections
import functools
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
REQUIRED = os.environ.get("BOOK_SYSTEM_REQUIRED") == "1"
SKIPS_FILE = pathlib.Path(os.environ.get("BOOK_SKIPS_FILE", ROOT / "_build" / ".system-skips.jsonl"))
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
# the Debian packages of .ci/run, by tool
TEX_PACKAGES = (
    "texlive-xetex texlive-latex-extra texlive-latex-recommended texlive-fonts-recommended "
    "texlive-plain-generic latexmk fonts-freefont-otf fonts-dejavu-core fonts-texgyre fonts-texgyre-math poppler-utils"
)
TOOLS = {
    # name: (what it is for, Debian packages)
    "bwrap": ("the grading sandbox (bubblewrap)", "bubblewrap util-linux"),
    "chromium": ("the browser tests of the site (headless Chromium)", "chromium"),
    "tex": ("the PDF of the book, make pdf / make pdf-test (XeLaTeX, latexmk, poppler-utils)", TEX_PACKAGES),
    "netns": (
        (
            "a network namespace without network (unshare -rn or bwrap --unshare-net), in which "
            "the test installs the Gradescope bundle offline"
        ),
        "bubblewrap util-linux",
    ),
}
APT_LINE = "apt-get install -y " + " ".join(dict.fromkeys(" ".join(TOOLS[t][1] for t in TOOLS).split()))
TAG = "[missing system tool: {}]"
TAG_RE = re.compile(r"\[missing system tool: (\w+)\]")


@functools.cache
def offline_prefix():
    """The command prefix that runs a command without network (a network namespace of its
    own, no root needed), or None when neither ``unshare -rn`` nor bubblewrap can make one."""
    for prefix in (["unshare", "-rn"], ["bwrap", "--unshare-net", "--dev-bind", "/", "/"]):
        if not shutil.which(prefix[0]):
            continue
        try:
            if subprocess.run(prefix + ["true"], capture_output=True, timeout=30, check=False).returncode == 0:
                return prefix
        except (OSError, subprocess.SubprocessError):
            continue
    return None


def available(tool):
    """Whether ``tool`` (a key of ``TOOLS``) is installed here."""
    if tool == "bwrap":
        return all(shutil.which(t) for t in ("bwrap", "prlimit") + (("setpriv",) if os.geteuid() == 0 else ()))
    if tool == "chromium":
        return bool(shutil.which(CHROMIUM)) or os.path.exists(CHROMIUM)
    if tool == "tex":
        return all(shutil.which(t) for t in ("xelatex", "latexmk", "pdfinfo"))
    if tool == "netns":
        return offline_prefix() is not None
    raise KeyError(tool)


def reason(tool, detail=""):
    """The skip reason of a check that needs ``tool``: what is missing, how to install it."""
    what, packages = TOOLS[tool]
    return (
        f"{TAG.format(tool)} {detail or what + ' is not installed'}; "
        f"install it with `apt-get install -y {packages}` (as .ci/run does)"
    )


def require(tool, detail=""):
    """Skip the calling test (or fixture) when ``tool`` is missing; under CI
    (``BOOK_SYSTEM_REQUIRED=1``) fail it instead."""
    import pytest

    if available(tool):
        return
    if REQUIRED:
        pytest.fail(f"BOOK_SYSTEM_REQUIRED=1 and {reason(tool, detail)}", pytrace=False)
    pytest.skip(reason(tool, detail))


def records(reports):
    """The skips of missing system tools among pytest's ``reports``, as records."""
    out = []
    for rep in reports:
        longrepr = getattr(rep, "longrepr", None)
        text = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr or "")
        m = TAG_RE.search(text)
        if m:
            out.append({"tool": m.group(1), "test": rep.nodeid})
    return out


def record(found, path=SKIPS_FILE):
    """Append the records ``found`` to ``path``, for the summary at the end of `make test`."""
    if found:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8") as fh:
            fh.write("".join(json.dumps(r) + "\n" for r in found))


def read(path=SKIPS_FILE):
    """The records of ``path`` (``{"tool", "test"}``), those of every pytest run of `make test`."""
    try:
        text = pathlib.Path(path).read_text(encoding="utf-8")
    except OSError:
        return []
    out = []
    for line in text.splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def summary(records):
    """The loud text about ``records`` and the tools missing here (empty when nothing was
    skipped and every tool is installed)."""
    skipped = collections.defaultdict(list)
    for rec in records:
        if isinstance(rec, dict) and rec.get("tool") in TOOLS:
            skipped[rec["tool"]].append(str(rec.get("test", "?")))
    missing = [t for t in TOOLS if not available(t)]
    if not skipped and not missing:
        return ""
    bar = "!" * 78
    lines = [bar, "!!! CHECKS SKIPPED: system tools are missing on this machine"]
    for tool in TOOLS:
        if tool not in skipped and tool not in missing:
            continue
        tests = skipped.get(tool, [])
        files = sorted({t.split("::")[0] for t in tests})
        what = TOOLS[tool][0]
        if tests:
            lines.append(f"!!!   {tool}: {len(tests)} checks skipped ({what}): {', '.join(files)}")
        else:
            lines.append(f"!!!   {tool}: not installed ({what}); no check run here needed it")
    lines += ["!!! Install them all with:", f"!!!   {APT_LINE}", bar]
    return "\n".join(lines) + "\n"


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv == ["--clear"]:
        SKIPS_FILE.unlink(missing_ok=True)
        return 0
    text = summary(read())
    sys.stdout.write(text)
    return 1 if REQUIRED and text else 0


if __name__ == "__main__":
    sys.exit(main())
