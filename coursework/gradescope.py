"""The grader as a Gradescope autograder (``make gradescope``, ``python -m coursework.gradescope``).

``build`` writes the autograder bundle, a zip file to upload as the assignment's autograder
(Gradescope: "Configure Autograder", base image Ubuntu 24.04, whose Python is recent enough
for the pinned packages).  At its top level, as Gradescope's autograder specification asks:

- ``setup.sh``: run once when Gradescope builds the image; installs bubblewrap and python3
  with apt-get, then runs ``install.sh``: a virtual environment in ``/autograder/venv`` with
  the packages installed from the bundle's ``wheels/`` only (``pip install --no-index``);
- ``run_autograder``: run for every submission; grades ``/autograder/submission`` and writes
  ``/autograder/results/results.json``;
- ``wheels/``: the versions ``requirements.txt`` pins of ``BUNDLE_REQUIREMENTS`` (what the
  grader and the notebooks' kernel need), their dependencies at the versions of the
  environment that builds the bundle, for CPython 3.12 on Linux x86-64 (``--python``), and
  blrlib's own wheel (blrlib and coursework) built from the repository; the downloaded
  wheels are kept in ``.cache/gradescope-wheels/``, so a second build needs no network;
  ``requirements-gradescope.txt`` names what ``install.sh`` installs;
- the instructor's notebooks of the chapters of the assignment with their answers
  (``book/``, ``_toc.yml``) and ``gradescope.json`` (the chapters graded, the sandbox policy,
  the wheels' Python).

The bundle holds the answers: Gradescope keeps it in ``/autograder/source``, which the
student's code can read unless it runs in the sandbox.

``run`` (what ``run_autograder`` starts) lays the submission out as a class of one student,
grades it with :func:`coursework.grade.grade_folder` exactly as ``make grade`` does, and writes
``results.json`` in Gradescope's documented schema: one test per exercise of the assignment's
chapters, each with ``name``, ``score``, ``max_score``, ``output`` (for a miss the reason a
student may read, :func:`coursework.feedback.feedback_reason`, never a reference value),
``status`` and ``visibility``; an exercise of a chapter that was not handed in scores 0 with
a test saying so; a pen-and-paper exercise, and the written part of a coding exercise, is a
test of ``max_score`` 0 that says it is graded by hand (grade it on Gradescope); files that were not graded, and how the notebook was
isolated, go to the top-level ``output``.  ``results.json`` is written whatever happens: if
grading itself fails, every exercise scores 0 and the output says why.

Sandbox: every notebook runs in the bubblewrap sandbox when the container allows it (user
namespaces; Gradescope's containers may not).  Where it does not, ``"sandbox": "auto"`` (the
default) grades without it, in Gradescope's container of that one submission, and says so in
the output (the student's code could then read the bundle, answers included, though not
another student's work); ``"sandbox": "require"`` (``make gradescope SANDBOX=require``) scores
0 and says the sandbox is missing instead.

The paths are Gradescope's; ``AUTOGRADER_ROOT`` (default ``/autograder``) and
``AUTOGRADER_PYTHON`` (default ``$AUTOGRADER_ROOT/venv/bin/python``) move them, so that the
tests run ``run_autograder`` under a temporary folder without root.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import pathlib
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import traceback
import zipfile

from . import book, grade, sandbox
from .feedback import feedback_reason

CONFIG = "gradescope.json"
SUBMISSION_FOLDER = "submission"  # the one student's folder in the class graded
MAX_ENTRIES = 10_000  # entries of the submission looked at, at most
SETTINGS = ("cell_timeout", "notebook_timeout", "max_output_bytes", "memory_bytes", "disk_bytes",
            "file_bytes", "processes", "notebook_memory_bytes")

# The Python of Gradescope's base image Ubuntu 24.04 (its python3); the wheels are for it
DEFAULT_PYTHON = "3.12"
# the newest glibc whose manylinux wheels are taken: Ubuntu 22.04's (24.04 has 2.39, this
# book's Debian 12 machines 2.36), so the wheels install on all of them
GLIBC_MINOR = 35
# the packages of requirements.txt the grader needs (nbgrader, whose dependencies bring
# nbclient, nbconvert and jupyter_client; pyyaml) and the notebooks' kernel (ipykernel and what
# the chapters import); the rest of requirements.txt builds and tests the book
BUNDLE_REQUIREMENTS = ("numpy", "scipy", "matplotlib", "pandas", "scikit-learn", "statsmodels",
                       "threadpoolctl", "ipykernel", "pyyaml", "nbgrader")
WHEEL_CACHE = book.ROOT / ".cache" / "gradescope-wheels"  # .cache/ is ignored by git
WHEELS = "wheels"  # the bundle's folder of wheels
REQUIREMENTS = "requirements-gradescope.txt"  # what install.sh installs from them

SETUP_SH = """#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder's image (base image:
# Ubuntu 24.04).  The bundle is in /autograder/source.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y --no-install-recommends bubblewrap python3 python3-venv
# the Python packages: from the bundle's wheels only, no package index
bash /autograder/source/install.sh
"""

INSTALL_SH = """#!/usr/bin/env bash
# The Python part of setup.sh: a virtual environment in $root/venv with the grader, installed
# from the bundle's wheels only (--no-index: no network needed).  AUTOGRADER_ROOT (default
# /autograder) and AUTOGRADER_SYSTEM_PYTHON (default python3) move it, for the tests, which
# also set AUTOGRADER_NO_COMPILE=1 (no byte-compiling: a third of the time of the install).
set -euo pipefail
root="${AUTOGRADER_ROOT:-/autograder}"
python="${AUTOGRADER_SYSTEM_PYTHON:-python3}"
want=@PYTHON@
got=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
if [ "$got" != "$want" ]; then
    echo "install.sh: the bundle's wheels are for Python $want, but $python is Python $got;" \\
         "choose the base image Ubuntu 24.04 or rebuild with make gradescope GRADESCOPE_PYTHON=$got" >&2
    exit 1
fi
# no pip configuration of the image may add an index or another folder of wheels
for v in $(compgen -e); do case "$v" in PIP_*) unset "$v" ;; esac; done
export PIP_CONFIG_FILE=/dev/null PIP_DISABLE_PIP_VERSION_CHECK=1
"$python" -m venv "$root/venv"
"$root/venv/bin/python" -m pip install --no-index --find-links "$root/source/@WHEELS@" \\
    --only-binary=:all: --no-cache-dir ${AUTOGRADER_NO_COMPILE:+--no-compile} \\
    -r "$root/source/@REQUIREMENTS@"
"""

RUN_AUTOGRADER = """#!/usr/bin/env bash
# Gradescope runs this for every submission: grades /autograder/submission and writes
# /autograder/results/results.json.  AUTOGRADER_ROOT and AUTOGRADER_PYTHON move the paths.
set -u
root="${AUTOGRADER_ROOT:-/autograder}"
python="${AUTOGRADER_PYTHON:-$root/venv/bin/python}"
cd "$root/source" || exit 1
# -I: the installed coursework (setup.sh installed the bundle's), not a file of the folder
exec "$python" -I -m coursework.gradescope run --autograder-root "$root"
"""


# ----------------------------------------------------------------------------- the bundle


def _add_tree(zf, folder, arcname):
    for path in sorted(pathlib.Path(folder).rglob("*")):
        if "__pycache__" in path.parts or path.is_symlink() or not path.is_file():
            continue
        zf.write(path, f"{arcname}/{path.relative_to(folder).as_posix()}")


def _add_text(zf, name, text, executable=False):
    info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
    info.external_attr = ((0o755 if executable else 0o644) | stat.S_IFREG) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    zf.writestr(info, text)


class WheelsUnavailable(RuntimeError):
    """The wheels of the bundle could not be found in the cache nor downloaded."""


def pinned(requirements, names=BUNDLE_REQUIREMENTS):
    r"""The lines ``name==version`` of the text ``requirements`` for ``names``, in their order.

    >>> pinned("numpy==2.4.6\n# x\nscipy==1.17.1\nruff==0.17.5\n", ("scipy", "numpy"))
    ['scipy==1.17.1', 'numpy==2.4.6']
    >>> pinned("numpy>=2\n", ("numpy",))
    Traceback (most recent call last):
    ...
    ValueError: requirements.txt pins no version (name==version) of: numpy
    """
    found = {}
    for line in requirements.splitlines():
        m = re.fullmatch(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*==\s*([^\s;#]+)\s*(#.*)?", line)
        if m:
            found[re.sub(r"[-_.]+", "-", m[1]).lower()] = f"{m[1]}=={m[2]}"
    missing = [n for n in names if re.sub(r"[-_.]+", "-", n).lower() not in found]
    if missing:
        raise ValueError(f"requirements.txt pins no version (name==version) of: {', '.join(missing)}")
    return [found[re.sub(r"[-_.]+", "-", n).lower()] for n in names]


def _constraints():
    """``name==version`` of every distribution of this environment (the one the tests ran
    in): the dependencies of the pinned packages get the versions tested here."""
    from importlib import metadata

    out = set()
    for d in metadata.distributions():
        name = d.metadata["Name"]
        if name and name.lower() != "blrlib":
            out.add(f"{name}=={d.version}")
    return sorted(out)


def _pip(args, offline):
    """Run pip of this Python; ``offline``: without any pip configuration (no index, no
    other folder of wheels than those named).  Returns (ok, the end of pip's output)."""
    env = dict(os.environ)
    if offline:
        env = {k: v for k, v in env.items() if not k.startswith("PIP_")}
        env["PIP_CONFIG_FILE"] = os.devnull
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    proc = subprocess.run([sys.executable, "-m", "pip", *args], env=env, capture_output=True, text=True,
                          check=False)
    return proc.returncode == 0, (proc.stdout + proc.stderr).strip()[-2000:]


def _minor(python):
    """``3.12`` of the target Python ``python`` (``3.12`` or ``3.12.3``: pip checks what a
    package requires against the version as given, 3.12 meaning 3.12.0)."""
    if not re.fullmatch(r"3\.\d+(\.\d+)?", python):
        raise ValueError(f"the target Python must be a version like 3.12 or 3.12.3, not {python!r}")
    return ".".join(python.split(".")[:2])


def _target(python):
    _minor(python)
    platforms = [f"manylinux_2_{g}_x86_64" for g in range(GLIBC_MINOR, 16, -1)]
    platforms += ["manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64"]
    return ["--only-binary=:all:", "--implementation", "cp", "--python-version", python,
            *(a for p in platforms for a in ("--platform", p))]


def wheels(dest, python=DEFAULT_PYTHON, root=book.ROOT, cache=WHEEL_CACHE, log=print):
    """Put into the folder ``dest`` the wheels the grader needs on Gradescope's Linux x86-64
    with CPython ``python``: the versions ``root``/requirements.txt pins of
    ``BUNDLE_REQUIREMENTS``, their dependencies (at the versions of this environment where
    it has them) and blrlib's own wheel, built from ``root``.  The downloaded wheels are kept
    in ``cache``/cp<version>: a second build needs no network.  Returns the lines of
    ``requirements-gradescope.txt``; raises :class:`WheelsUnavailable` saying what is needed."""
    dest, cache = pathlib.Path(dest), pathlib.Path(cache) / f"cp{_minor(python).replace('.', '')}"
    dest.mkdir(parents=True, exist_ok=True)
    target = _target(python)
    lines = pinned((pathlib.Path(root) / "requirements.txt").read_text())
    with tempfile.TemporaryDirectory(prefix="cw-wheels-") as tmp:
        tmp = pathlib.Path(tmp)
        (tmp / "requirements.txt").write_text("\n".join(lines) + "\n")
        (tmp / "constraints.txt").write_text("\n".join(_constraints()) + "\n")
        files = ["-r", str(tmp / "requirements.txt"), "-c", str(tmp / "constraints.txt")]
        # from the cache alone first: a second build is offline
        ok, out = _pip(["download", "-q", "--no-index", "--find-links", str(cache), "-d", str(dest),
                        *target, *files], offline=True)
        if not ok:
            log(f"gradescope: downloading the wheels for Python {python} into {cache} ...")
            cache.mkdir(parents=True, exist_ok=True)
            got, out = _pip(["download", "-q", "-d", str(cache), *target, *files], offline=False)
            if got:
                ok, out = _pip(["download", "-q", "--no-index", "--find-links", str(cache), "-d",
                                str(dest), *target, *files], offline=True)
            if not ok:
                raise WheelsUnavailable(
                    f"the wheels of {', '.join(lines)} (and their dependencies) for CPython "
                    f"{python} on Linux x86-64 are neither all in {cache} nor could pip download "
                    "them: the bundle needs network access to the package index (PyPI, "
                    "https://pypi.org, or the index of your pip configuration) once, after which "
                    f"they are kept in {cache} and the build is offline. pip said:\n{out}"
                )
        # blrlib (with coursework) from the repository's sources, copied: no build/ in root
        src = tmp / "src"
        src.mkdir()
        for name in ("pyproject.toml", "README.md", "LICENSE"):
            if (pathlib.Path(root) / name).is_file():
                shutil.copy2(pathlib.Path(root) / name, src / name)
        for package in ("blrlib", "coursework"):
            shutil.copytree(pathlib.Path(root) / package, src / package,
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        ok, out = _pip(["wheel", "-q", "--no-deps", "--no-build-isolation", "--no-index", "-w",
                        str(dest), str(src)], offline=True)
        if not ok:
            raise WheelsUnavailable(f"could not build blrlib's wheel from {root}: {out}")
    version = next(dest.glob("blrlib-*.whl")).name.split("-")[1]
    return lines + [f"blrlib=={version}"]


def build(out, root=book.ROOT, toc="_toc.yml", chapters=None, sandbox_policy="auto", limits=None,
          python=DEFAULT_PYTHON, wheel_cache=WHEEL_CACHE, log=print):
    """Write the autograder zip to ``out`` for ``chapters`` (names; default every chapter of
    ``root``/``toc``); return the chapter names.  The wheels (:func:`wheels`) are for CPython
    ``python``; the requirements and blrlib's wheel come from the book's root."""
    root = pathlib.Path(root)
    found = {p.stem: p for p in book.toc_notebooks(root, toc)}
    chapters = list(chapters or found)
    unknown = [c for c in chapters if c not in found]
    if unknown:
        raise ValueError(f"not chapters of the book: {', '.join(unknown)} (chapters: {', '.join(found)})")
    if sandbox_policy not in ("auto", "require"):
        raise ValueError(f"sandbox policy must be 'auto' or 'require', not {sandbox_policy!r}")
    _target(python)
    limits = limits or sandbox.Limits()
    config = {
        "chapters": chapters,
        "sandbox": sandbox_policy,
        "python": python,
        "limits": {k: getattr(limits, k) for k in SETTINGS},
    }
    toc_text = "format: jb-book\nroot: book/intro\nchapters:\n" + "".join(
        f"  - file: {found[c].relative_to(root).with_suffix('').as_posix()}\n" for c in chapters
    )
    out = pathlib.Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".part")
    with tempfile.TemporaryDirectory(prefix="cw-bundle-") as folder:
        wheel_dir = pathlib.Path(folder)
        requirements = wheels(wheel_dir, python, book.ROOT, wheel_cache, log)
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zf:
            _add_text(zf, "setup.sh", SETUP_SH, executable=True)
            install = INSTALL_SH.replace("@PYTHON@", _minor(python)).replace("@WHEELS@", WHEELS)
            _add_text(zf, "install.sh", install.replace("@REQUIREMENTS@", REQUIREMENTS), executable=True)
            _add_text(zf, "run_autograder", RUN_AUTOGRADER, executable=True)
            _add_text(zf, CONFIG, json.dumps(config, indent=1) + "\n")
            _add_text(zf, "_toc.yml", toc_text)
            _add_text(zf, REQUIREMENTS, "\n".join(requirements) + "\n")
            for c in chapters:
                zf.write(found[c], found[c].relative_to(root).as_posix())
            for name in ("README.md", "LICENSE"):
                if (book.ROOT / name).is_file():
                    zf.write(book.ROOT / name, name)
            for whl in sorted(wheel_dir.glob("*.whl")):  # compressed already: stored as they are
                zf.write(whl, f"{WHEELS}/{whl.name}", compress_type=zipfile.ZIP_STORED)
    os.replace(tmp, out)
    return chapters


# ----------------------------------------------------------------------------- one submission


def _copy_bounded(src_fd, name, dst, max_bytes):
    """Copy the regular file ``name`` (not followed if a link) to ``dst``, at most
    ``max_bytes`` + 1 bytes: a larger file stays larger than the limit and intake rejects it."""
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=src_fd)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        left = max_bytes + 1
        with open(dst, "xb") as fh:
            while left > 0 and (chunk := os.read(fd, min(left, 1 << 20))):
                fh.write(chunk)
                left -= len(chunk)
        return True
    finally:
        os.close(fd)


def lay_out(submission, folder, chapters, max_bytes):
    """Copy the notebooks of ``submission`` (Gradescope's folder of one student's files) to
    ``folder/submission/``: the files at its top level, and a chapter notebook found in a
    sub-folder (an uploaded zip's folder) when the top level has none of that name.  No link
    is followed, at most ``MAX_ENTRIES`` entries are looked at; returns the notes."""
    dest = pathlib.Path(folder) / SUBMISSION_FOLDER
    dest.mkdir(parents=True)
    notes, seen, taken = [], 0, set()
    wanted = {f"{c}.ipynb" for c in chapters}
    for dirpath, dirnames, filenames, dfd in os.fwalk(submission, follow_symlinks=False):
        dirnames.sort()
        top = os.path.samefile(dirpath, submission)
        for name in sorted(filenames):
            seen += 1
            if seen > MAX_ENTRIES:
                notes.append(f"only the first {MAX_ENTRIES} files of the submission were looked at")
                return notes
            if name in taken or not (top or name in wanted):
                continue
            try:
                if _copy_bounded(dfd, name, dest / name, max_bytes):
                    taken.add(name)
                    if not top:
                        notes.append(f"graded {grade.shown(os.path.relpath(os.path.join(dirpath, name), submission))}")
            except OSError:
                pass  # a link, a special file or an unreadable file: not a notebook handed in
    return notes


def _sandbox_works(limits, hidden):
    try:
        with sandbox.Sandbox(slots=1, limits=limits) as box:
            box.check(hidden=hidden)
        return None
    except sandbox.SandboxUnavailable as exc:
        return str(exc)


def _hand_kind(exercise):
    return "written answer" if exercise.endswith(book.WRITTEN_SUFFIX) else "pen-and-paper exercise"


def results(rows, chapters, config_chapters, notes):
    """Gradescope's results dictionary from the rows of :func:`coursework.grade.grade_folder`
    (``chapters``: name -> :class:`coursework.sources.Chapter`)."""
    tests, handed_in = [], set()
    for r in rows:
        if not r.exercise:
            continue
        handed_in.add(r.chapter)
        name = f"{r.chapter} {r.exercise}"
        if r.points is None:
            tests.append(
                {
                    "name": name,
                    "score": 0.0,
                    "max_score": 0.0,
                    "output": f"{_hand_kind(r.exercise)} ({r.max_points:g} points): graded by hand",
                    "visibility": "visible",
                }
            )
            continue
        full = r.points == r.max_points
        output = "passed" if full else feedback_reason(r.error or "no points")
        if r.notes:
            output += f"\nnotes: {r.notes}"
        tests.append(
            {
                "name": name,
                "score": r.points,
                "max_score": r.max_points,
                "output": grade.shown(output, keep="\n"),
                "status": "passed" if full else "failed",
                "visibility": "visible",
            }
        )
    for c in config_chapters:
        if c in handed_in:
            continue
        for e in chapters[c].coding:
            tests.append(
                {
                    "name": f"{c} {e.label}",
                    "score": 0.0,
                    "max_score": e.points,
                    "output": f"not handed in: no notebook {c}.ipynb in the submission",
                    "status": "failed",
                    "visibility": "visible",
                }
            )
    lines = list(notes)
    lines += [grade.shown(f"{r.chapter or '.'}: {r.error}") for r in rows if not r.exercise and r.error]
    return {
        "output": "\n".join(lines),
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": tests,
    }


def run(autograder_root="/autograder", log=None):
    """Grade ``<autograder_root>/submission`` with the bundle in ``<autograder_root>/source``;
    write ``<autograder_root>/results/results.json``; return the results dictionary."""
    t0 = time.monotonic()
    log = log or (lambda text: print(text, file=sys.stderr, flush=True))
    ag = pathlib.Path(autograder_root)
    source = ag / "source"
    out = ag / "results" / "results.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    config, chapters = {"chapters": []}, {}
    try:
        config = json.loads((source / CONFIG).read_text())
        chapters = grade.load_chapters(source, "_toc.yml")
        limits = sandbox.Limits(**config.get("limits", {}))
        options = grade.Options(root=source, toc="_toc.yml", limits=limits,
                                chapters_to_grade=config["chapters"])
        with tempfile.TemporaryDirectory(prefix="cw-gradescope-") as tmp:
            tmp = pathlib.Path(tmp)
            notes = lay_out(ag / "submission", tmp / "class", config["chapters"], options.max_notebook_bytes)
            why = _sandbox_works(limits, [source, ag / "submission", tmp])
            if why and config.get("sandbox") == "require":
                raise grade.GradingError(f"{why} (this autograder requires the sandbox)")
            if why:
                notes.append(
                    "isolation: graded WITHOUT the sandbox (this container does not allow it), "
                    "in this submission's own container"
                )
                options = dataclasses.replace(options, unsafe=True)
            result = grade.grade_folder(tmp / "class", tmp / "grades", options, log=log)
            if not why:
                notes.append("isolation: every notebook ran in the grader's sandbox")
        data = results(result.rows, chapters, config["chapters"], notes)
    except Exception as exc:  # noqa: BLE001 - the student and the instructor read it in results.json
        log(traceback.format_exc())
        why = str(exc) if isinstance(exc, grade.GradingError) else f"{type(exc).__name__}: {exc}"
        data = results([], chapters, [c for c in config.get("chapters", []) if c in chapters], [])
        for t in data["tests"]:
            t["output"] = "not graded: the autograder failed; tell your instructor"
        data["output"] = grade.shown(f"the autograder failed: {why}", keep="\n")
    data["execution_time"] = round(time.monotonic() - t0, 1)
    tmp = out.with_name(out.name + ".part")
    tmp.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, out)
    return data


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="write the autograder zip")
    b.add_argument("--out", default=str(book.ROOT / "_build" / "gradescope" / "autograder.zip"))
    b.add_argument("--root", default=str(book.ROOT))
    b.add_argument("--toc", default="_toc.yml")
    b.add_argument("--chapters", default="", help="comma-separated chapter names (default: all)")
    b.add_argument("--sandbox", choices=("auto", "require"), default="auto",
                   help="without the sandbox: grade anyway and say so (auto), or score 0 (require)")
    b.add_argument("--python", default=DEFAULT_PYTHON,
                   help=f"the Python of the wheels, that of the image's python3 (default {DEFAULT_PYTHON}, Ubuntu 24.04's)")
    r = sub.add_parser("run", help="grade the submission (what run_autograder does)")
    r.add_argument("--autograder-root", default=os.environ.get("AUTOGRADER_ROOT", "/autograder"))
    args = ap.parse_args(argv)
    if args.command == "build":
        try:
            chapters = build(args.out, args.root, args.toc, [c for c in args.chapters.split(",") if c],
                             args.sandbox, python=args.python)
        except (ValueError, WheelsUnavailable) as exc:
            print(f"gradescope: {exc}", file=sys.stderr)
            return 2
        size = os.path.getsize(args.out) / 1e6
        print(f"wrote {args.out} ({size:.0f} MB, wheels for Python {args.python}): the autograder of "
              f"{', '.join(chapters)}; upload it on Gradescope")
        return 0
    data = run(args.autograder_root)
    got = sum(t["score"] for t in data["tests"])
    print(f"{got:g} / {sum(t['max_score'] for t in data['tests']):g} points", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
