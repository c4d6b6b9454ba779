"""Autograde submissions (``make grade SUBMISSIONS=<folder>``, ``python -m coursework.grade <folder>``).

Layout of the submissions folder: one sub-folder per student, holding that student's copies of
the student edition, named like the chapters::

    <folder>/<student>/<chapter>.ipynb        e.g. submissions/ada/05_laplace.ipynb

A grading run, in order:

1. **Intake.**  The instructor's chapters (the toc of ``--root``) are read once and hashed;
   their exercises, check cells and tolerances come from these in-memory copies.  Every entry of
   the submissions folder is looked at without following symbolic links: a symbolic link, a hard
   link, a special file, or a name with characters that are not printable (a newline, an escape
   sequence, bytes that are not UTF-8) is rejected with a row that says so, every other file
   that is not a chapter notebook (``notes.txt``, ``05_laplace.ipynb.txt``,
   ``05_laplace.IPYNB``, a folder) gets a row ``ignored: ...`` (the first 100 of a folder, then
   one row counting the rest); each notebook is read once (at most ``--max-notebook-mb``; UTF-8,
   or UTF-16/32 with a byte-order mark), hashed, and parsed, and only its cells' types, sources
   and grade ids are kept (in a private spool folder, UTF-8, at most about the file's size).
2. **Sandbox check** (:mod:`coursework.sandbox`): grading stops with a clear error if the
   sandbox cannot be set up, unless ``--unsafe-no-sandbox`` is given.
3. **Expected values.**  The instructor's notebook of every chapter that has submissions runs in
   the sandbox, before any student code; each check cell's ``check_values`` (see
   :mod:`coursework.values`) is kept in this process as the expected values.  Which chapters
   run is up to the class (any student may hand in any chapter, ``--chapters`` restricts it),
   so a chapter whose notebook does not follow the conventions or gives no usable values is not
   graded (its rows say why, the summary warns, the exit status is 1) while the others are;
   only when no chapter can be graded does grading stop.
4. **Each submission** is merged as nbgrader's ``autograde`` does: check cells come from the
   instructor's notebook whatever the submission holds in their place, a deleted answer cell is
   replaced by the empty stub, a deleted check cell is put back after its answer (all reported);
   of the submission only cell types and sources are kept (no outputs, no metadata).  The merged
   notebook runs in its own sandbox.  An exercise earns its points when its check cell ran
   without error **and** the ``check_values`` it produced match the instructor's within the check
   cell's tolerances, compared here, outside the sandbox.  Anything in doubt (values missing or
   malformed, the runner killed, the results stream cut or tampered with) scores 0 with a note.
   Pen-and-paper exercises get a row "graded by hand" and their answers go to ``by_hand.md``.
5. **Output.**  The submissions and the instructor's sources are hashed again (a change is
   reported; a submission's size is checked before it is read, and no more than its size at
   intake is read); student folder names are written in NFKC and flagged when they could be
   mistaken for another (:func:`name_flags`); ``grades.csv``, ``summary.txt``, ``hashes.csv`` and ``by_hand.md`` are written to a
   fresh directory, which then atomically takes the place of ``--out`` (an earlier ``--out`` is
   renamed to ``<out>.previous-<time>``); no symbolic link is followed.  Every text in them is
   printable (other characters are written as escapes such as ``\\x1b``), a CSV field that
   would start like a spreadsheet formula (``=``, ``+``, ``-``, ``@``) gets a leading ``'``, a
   field longer than ``FIELD_CHARS`` is cut with a marker (the whole text goes to
   ``notes-full.txt``), and the pen-and-paper answers in ``by_hand.md`` load nothing when viewed
   (:func:`neutralised`).

A notebook that trips the grader itself (a bug) scores 0 with a row saying so; it never stops
the grading of the others.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import copy
import csv
import dataclasses
import hashlib
import io
import json
import os
import pathlib
import queue
import re
import stat
import sys
import tempfile
import time
import typing
import unicodedata

import nbformat
from nbgrader.preprocessors import ClearSolutions

from . import book, sandbox, values

FIELDS = ["student", "chapter", "exercise", "points", "max_points", "error", "notes"]
MAX_CELLS = 5000
MAX_CELL_CHARS = 1_000_000
BY_HAND_CHARS = 20_000  # of a pen-and-paper answer, kept for by_hand.md


class Result(typing.NamedTuple):
    """What :func:`grade_folder` returns."""

    rows: list
    text: str  # the summary
    tampered: list  # trusted sources that changed on disk during grading
    timing: dict  # seconds: "setup" (intake, sandbox check, instructor runs),
    # "students" (all submissions), "notebooks" (their count)
    isolation: dict  # "uids": the host uids the notebooks ran as (when root), "cgroups":
    # the control groups (directories) they ran in
    not_graded: dict  # chapter -> why its instructor notebook could not grade it


UNSAFE_WARNING = (
    "graded WITHOUT the sandbox (--unsafe-no-sandbox): every notebook ran with the grader's "
    "own permissions and could read the solutions, change the book, the other submissions "
    "and these grades, reach the network and leave processes running; trust these grades "
    "only if you trust every submission"
)


class GradingError(RuntimeError):
    """Grading cannot start (broken instructor notebook, no sandbox, bad folder)."""


@dataclasses.dataclass
class Row:
    student: str
    chapter: str
    exercise: str
    points: float | None  # None: graded by hand
    max_points: float
    error: str = ""
    notes: str = ""


def _gid(cell):
    gid = book.nbgrader_meta(cell).get("grade_id")
    return gid if isinstance(gid, str) else None


def _sha(data):
    return hashlib.sha256(data).hexdigest()


# ----------------------------------------------------------------------------- instructor sources


@dataclasses.dataclass
class Chapter:
    """One instructor chapter, read and hashed once."""

    name: str
    path: pathlib.Path
    data: bytes
    nb: nbformat.NotebookNode
    expected: dict = dataclasses.field(default_factory=dict)  # label -> values.loads result

    @property
    def sha256(self):
        return _sha(self.data)

    @property
    def coding(self):
        return [e for e in book.exercises(self.nb) if e.coding]

    @property
    def by_hand(self):
        return [e for e in book.exercises(self.nb) if e.by_hand]

    def tolerances(self, e):
        return book.tolerances(self.nb.cells[e.checks[0]])


def load_chapters(root, toc):
    chapters = {}
    for path in book.toc_notebooks(root, toc):
        data = path.read_bytes()
        chapters[path.stem] = Chapter(
            path.stem, path, data, nbformat.reads(data.decode("utf-8"), as_version=4)
        )
    return chapters


def tree_hash(path):
    """sha256 over the relative names and contents of every file under ``path`` (no caches)."""
    h = hashlib.sha256()
    path = pathlib.Path(path)
    for f in sorted(p for p in path.rglob("*") if "__pycache__" not in p.parts):
        if f.is_file() and not f.is_symlink():
            h.update(str(f.relative_to(path)).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def source_hashes(chapters, reread=False):
    """Hashes of everything the grading trusts: the chapters (as read at the start, or as they
    are on disk now), blrlib and coursework."""
    out = {}
    for c in chapters.values():
        if not reread:
            out[f"chapter {c.name}"] = c.sha256
        else:
            out[f"chapter {c.name}"] = _sha(c.path.read_bytes()) if c.path.is_file() else "missing"
    for name in ("blrlib", "coursework"):
        out[f"package {name}"] = tree_hash(sandbox._package_dir(name))
    return out


# ----------------------------------------------------------------------------- intake


@dataclasses.dataclass
class Submission:
    """A notebook as read at intake: the hash of the file handed in, and what grading needs of
    it, the type, source and grade id of each cell (or why it cannot be read), waiting in the
    grader's private spool folder.  Not the file itself, not in memory: a class may hand in
    gigabytes of outputs and metadata, which grading never looks at."""

    student: str
    name: str  # file name, <chapter>.ipynb
    spooled: pathlib.Path
    sha256: str  # of the file as handed in
    spool_sha256: str  # of the spooled cells
    size: int = 0  # bytes of the file as handed in

    @property
    def chapter(self):
        return self.name[: -len(".ipynb")]

    def cells(self):
        """The list of :func:`parse_submission`; raises ValueError with the reason the notebook
        cannot be read."""
        data = self.spooled.read_bytes()
        if _sha(data) != self.spool_sha256:
            raise RuntimeError(f"the grader's copy of {self.student}/{self.name} changed")
        obj = json.loads(data)
        if "unreadable" in obj:
            raise ValueError(obj["unreadable"])
        return [tuple(c) for c in obj["cells"]]


NOTEBOOK_RE = re.compile(r"(?P<stem>[^/]+)\.ipynb")  # used with fullmatch: no newline after it
MAX_LISTED = 100  # entries that are not graded, listed one by one per folder; then counted


def shown(text, keep=""):
    """``text`` with every character that is not printable written as an escape (``\\n``,
    ``\\x1b``, ``\\u202e``; a byte that is not UTF-8, which Python reads as a lone surrogate,
    as ``\\xff``), except the characters in ``keep``.  Whatever a student names a file or
    prints, it then cannot break a line of the summary, move the terminal's cursor, or make
    ``grades.csv`` unwritable.

    >>> print(shown("ada\\nbob \\x1b[2J \\udcff \\u202eabc \\ud800"))
    ada\\nbob \\x1b[2J \\xff \\u202eabc \\ud800
    """
    out = []
    for c in str(text):
        if c.isprintable() or c in keep:
            out.append(c)
        elif "\udc80" <= c <= "\udcff":
            out.append(f"\\x{ord(c) - 0xDC00:02x}")
        else:
            out.append(c.encode("unicode_escape").decode("ascii"))
    return "".join(out)


def _bad_name(name):
    """Why the name of a file or folder is not accepted, or ``None``."""
    if not name.isprintable():
        return (
            "has characters that are not printable in its name (control or format characters, "
            "or bytes that are not UTF-8); rename it"
        )
    return None


class _Unlisted:
    """Rows of one folder for entries that are not graded: the first ``MAX_LISTED`` by name are
    kept, the rest only counted (a folder of a million files gives 101 rows, not a million)."""

    def __init__(self):
        self.rows, self.more = [], 0

    def add(self, key, row):
        self.rows.append((key, row))
        if len(self.rows) > 2 * MAX_LISTED:
            self.rows.sort(key=lambda kr: kr[0])
            self.more += len(self.rows) - MAX_LISTED
            del self.rows[MAX_LISTED:]

    def done(self, make_row):
        self.rows.sort(key=lambda kr: kr[0])
        more = self.more + max(0, len(self.rows) - MAX_LISTED)
        out = [r for _, r in self.rows[:MAX_LISTED]]
        if more:
            out.append(make_row(f"ignored: {more} more entries that are not chapter notebooks (not listed one by one)"))
        return out


def _kind(mode):
    for test, what in (
        (stat.S_ISFIFO, "a named pipe (FIFO)"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    ):
        if test(mode):
            return what
    return "not a regular file"


def _open_dir(name, dir_fd=None):
    return os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)


def _read_file(name, dir_fd, max_bytes):
    """``(data, None)`` or ``(None, why rejected)``; never follows a link, never blocks on a FIFO."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError as exc:
        return None, f"cannot be opened ({exc.strerror})"
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None, f"is {_kind(st.st_mode)}"
        if st.st_nlink > 1:
            return None, (f"is a hard link ({st.st_nlink} names for one file); hand in a copy")
        if st.st_size > max_bytes:
            return None, f"is larger than {max_bytes / 1e6:g} MB ({st.st_size / 1e6:.1f} MB)"
        chunks, total = [], 0
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
            total += len(chunk)
            if total > max_bytes:
                return None, f"is larger than {max_bytes / 1e6:g} MB"
        return b"".join(chunks), None
    finally:
        os.close(fd)


def intake(folder, chapters, max_bytes, spool=None):
    """``(submissions, rows)``: every gradable notebook, read once, parsed and hashed (its cells
    go to the private folder ``spool``, by default a new temporary one), and a row for every
    entry of the folder that is not one (ignored or rejected; beyond ``MAX_LISTED`` per folder
    such entries are counted in one row)."""
    if spool is None:
        spool = tempfile.mkdtemp(prefix="cw-spool-")  # mode 0700, the grader's own
    subs, rows, counter = [], [], iter(range(1 << 62))
    expected = ", ".join(f"{c}.ipynb" for c in chapters)
    top = _open_dir(str(folder))
    loose = _Unlisted()
    try:
        for entry in os.scandir(top):
            name = entry.name
            label = shown(name)
            bad = _bad_name(name)
            if bad:
                loose.add(name, Row(label, "", "", 0.0, 0.0, f"rejected: the student folder {bad}"))
                continue
            if entry.is_symlink():
                rows.append(Row(name, "", "", 0.0, 0.0, "rejected: the student folder is a symbolic link"))
                continue
            if not entry.is_dir(follow_symlinks=False):
                loose.add(
                    name,
                    Row(
                        "",
                        name,
                        "",
                        0.0,
                        0.0,
                        f"ignored: '{name}' is not a student folder "
                        "(submissions are <folder>/<student>/<chapter>.ipynb)",
                    ),
                )
                continue
            if name.startswith("."):
                rows.append(Row(name, "", "", 0.0, 0.0, "ignored: hidden folder"))
                continue
            try:
                sfd = _open_dir(name, top)
            except OSError as exc:
                rows.append(
                    Row(name, "", "", 0.0, 0.0, f"rejected: the folder cannot be opened ({exc.strerror})")
                )
                continue
            try:
                subs_s, rows_s = _intake_student(name, sfd, chapters, expected, max_bytes, spool, counter)
            finally:
                os.close(sfd)
            subs += subs_s
            rows += rows_s
    finally:
        os.close(top)
    rows += loose.done(lambda error: Row("", "", "", 0.0, 0.0, error))
    subs.sort(key=lambda s: (s.student, s.name))
    return subs, rows


def _intake_student(student, sfd, chapters, expected, max_bytes, spool, counter):
    subs, rows, others = [], [], _Unlisted()
    for entry in os.scandir(sfd):
        name = entry.name
        m = NOTEBOOK_RE.fullmatch(name)
        chapter = m.group("stem") if m else name
        is_chapter = bool(m) and chapter in chapters

        def row(error, name=name, chapter=chapter, is_chapter=is_chapter):
            r = Row(student, shown(chapter), "", 0.0, 0.0, error)
            if is_chapter:
                rows.append(r)  # why a chapter was not graded is always listed
            else:
                others.add(name, r)

        bad = _bad_name(name)
        if bad:
            row(f"rejected: '{shown(name)}' {bad}")
            continue
        if entry.is_symlink():
            try:
                target = shown(os.readlink(name, dir_fd=sfd))
            except OSError:
                target = "?"
            row(f"rejected: '{name}' is a symbolic link (to {target}), not a file")
            continue
        if entry.is_dir(follow_symlinks=False):
            row(
                f"ignored: '{name}' is a folder (only <chapter>.ipynb files directly in the "
                "student's folder are graded)"
            )
            continue
        try:
            mode = entry.stat(follow_symlinks=False).st_mode
        except OSError:
            mode = 0
        if not stat.S_ISREG(mode):
            row(f"rejected: '{name}' is {_kind(mode)}")
            continue
        if not is_chapter:
            lower = name.lower()
            if m:
                why = f"not a chapter of the book (expected one of: {expected})"
            elif lower.endswith(".ipynb") and lower[:-6] in chapters:
                why = f"named with '{name[-6:]}': the extension must be '.ipynb' in lower case"
            elif ".ipynb" in lower:
                stem = name[: lower.index(".ipynb")]
                why = f"not named like a notebook (renamed?); a chapter notebook is {stem}.ipynb"
            else:
                why = f"not a chapter notebook (expected one of: {expected})"
            row(f"ignored: '{name}' is {why}")
            continue
        data, bad = _read_file(name, sfd, max_bytes)
        if bad:
            row(f"rejected: '{name}' {bad}")
            continue
        subs.append(_spool(student, name, data, spool, next(counter)))
    return subs, rows + others.done(lambda error: Row(student, "", "", 0.0, 0.0, error))


def _spool(student, name, data, spool, number):
    """Parse the submission ``data`` and write what grading needs of it to the spool."""
    try:
        kept = {"cells": [list(c) for c in parse_submission(data)]}
    except ValueError as exc:
        kept = {"unreadable": str(exc)}
    # UTF-8, not ASCII escapes: "\u00e9" is 6 bytes for a character of 2, which made the spool 3x
    # the notebook; so the spool is at most about the size of the file handed in (lone
    # surrogates were refused by parse_submission; an error message's are escaped)
    text = json.dumps(kept, ensure_ascii=False).encode("utf-8", "backslashreplace")
    path = pathlib.Path(spool, f"{number:06d}.json")
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(text)
    except OSError as exc:
        raise GradingError(
            f"cannot write the grader's spool folder {spool} ({exc.strerror}); free some space "
            "or set TMPDIR to a larger folder"
        ) from None
    return Submission(student, name, path, _sha(data), _sha(text), len(data))


def rehash(folder, sub):
    """The sha256 of a submission's file now (``None`` when it cannot be read as a plain file or
    no longer has the size it had at intake).  Bounded before it reads: the size is checked
    first, and at most that many bytes (within the intake limit) are read, 1 MiB at a time, so
    a file grown meanwhile (into a 40 GB sparse file, say) costs nothing."""
    try:
        top = _open_dir(str(folder))
        try:
            sfd = _open_dir(sub.student, top)
        finally:
            os.close(top)
        try:
            fd = os.open(sub.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=sfd)
        finally:
            os.close(sfd)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_nlink > 1 or st.st_size != sub.size:
            return None
        h, left = hashlib.sha256(), sub.size + 1
        while left > 0 and (chunk := os.read(fd, min(left, 1 << 20))):
            h.update(chunk)
            left -= len(chunk)
        return None if left <= 0 else h.hexdigest()
    except OSError:
        return None
    finally:
        os.close(fd)


# ----------------------------------------------------------------------------- the merged notebook


def parse_submission(data):
    """The submission's cells as ``(cell_type, source, grade_id)`` triples, read defensively (any
    JSON, any size within the intake limit); raises ValueError for anything that is not a
    notebook."""
    try:
        obj = json.loads(_decode(data))
    except RecursionError:
        raise ValueError("nested too deeply to be a notebook") from None
    except UnicodeDecodeError:
        raise ValueError("not UTF-8 text (nor UTF-16 or UTF-32 with a byte-order mark)") from None
    except ValueError as exc:
        raise ValueError(f"not valid JSON ({exc})") from None
    if not isinstance(obj, dict) or not isinstance(obj.get("cells"), list):
        raise ValueError("no list of cells")
    if len(obj["cells"]) > MAX_CELLS:
        raise ValueError(f"more than {MAX_CELLS} cells")
    cells = []
    for cell in obj["cells"]:
        if not isinstance(cell, dict) or cell.get("cell_type") not in ("code", "markdown", "raw"):
            raise ValueError("a cell that is not a code, markdown or raw cell")
        src = cell.get("source", "")
        if isinstance(src, list) and all(isinstance(s, str) for s in src):
            src = "".join(src)
        if not isinstance(src, str):
            raise ValueError("a cell whose source is not text")
        if len(src) > MAX_CELL_CHARS:
            raise ValueError(f"a cell longer than {MAX_CELL_CHARS} characters")
        meta = cell.get("metadata")
        nbg = meta.get("nbgrader") if isinstance(meta, dict) else None
        gid = nbg.get("grade_id") if isinstance(nbg, dict) else None
        gid = gid if isinstance(gid, str) else None
        for text in (src, gid or ""):
            try:
                text.encode("utf-8")
            except UnicodeEncodeError:  # JSON allows "\\ud800"; no editor writes it
                raise ValueError("a cell holds text that is not valid Unicode (a lone surrogate)") from None
        cells.append((cell["cell_type"], src, gid))
    return cells


_BOMS = (  # UTF-32 first: its little-endian mark starts with UTF-16's
    (b"\xff\xfe\x00\x00", "utf-32"),
    (b"\x00\x00\xfe\xff", "utf-32"),
    (b"\xef\xbb\xbf", "utf-8-sig"),
    (b"\xff\xfe", "utf-16"),
    (b"\xfe\xff", "utf-16"),
)


def _decode(data):
    """The text of a notebook file: UTF-8, or what a byte-order mark says (an editor on
    Windows saves UTF-8 with one, or UTF-16); line ends are JSON whitespace anyway.

    >>> _decode(b"\\xef\\xbb\\xbf{}"), _decode("{}".encode("utf-16")), _decode(b"{}")
    ('{}', '{}', '{}')
    """
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            return data.decode(encoding)
    return data.decode("utf-8")


def _new_cell(cell_type, src):
    make = {
        "code": nbformat.v4.new_code_cell,
        "markdown": nbformat.v4.new_markdown_cell,
        "raw": nbformat.v4.new_raw_cell,
    }[cell_type]
    return make(src)


def merge(source_nb, submitted):
    """The notebook to run: the submission with its protected cells restored from the source.

    ``submitted`` is a notebook (NotebookNode) or the list of :func:`parse_submission`.  Returns
    ``(nb, notes)`` where ``notes`` maps an exercise label to sentences about cells that were
    deleted, modified or duplicated in the submission.
    """
    if not isinstance(submitted, list):
        submitted = [(c.cell_type, book.source(c), _gid(c)) for c in submitted.cells]
    exs = book.exercises(source_nb)
    label_of = {}
    for e in exs:
        label_of[e.answer_id] = label_of[e.check_id] = e.label
    src_by_id = {_gid(c): c for c in source_nb.cells if _gid(c)}
    stub_nb, _ = ClearSolutions(enforce_metadata=False).preprocess(copy.deepcopy(source_nb), {})
    stubs = {_gid(c): c for c in stub_nb.cells if _gid(c)}
    counts = {}  # label -> {sentence: times}: 4,000 duplicate cells give one sentence

    def note(gid, text):
        said = counts.setdefault(label_of.get(gid, gid), {})
        said[text] = said.get(text, 0) + 1

    def restored(cell):
        cell = copy.deepcopy(cell)
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
        return cell

    cells, seen = [], set()
    for cell_type, src_text, gid in submitted:
        if gid and gid in seen:
            note(gid, f"a second cell with grade id {gid} was ignored")
            cells.append(_new_cell(cell_type, src_text))
        elif gid and gid in src_by_id:
            seen.add(gid)
            src = src_by_id[gid]
            if cell_type != src.cell_type:
                note(gid, f"cell {gid} changed type; restored from the source")
                cells.append(
                    restored(stubs[gid] if book.is_answer(src) or book.is_manual_answer(src) else src)
                )
            elif book.is_answer(src) or book.is_manual_answer(src):
                cell = restored(src)
                cell.source = src_text  # the student's answer, in the source's cell
                cells.append(cell)
            else:
                if src_text.strip() != book.source(src).strip():
                    note(gid, f"check cell {gid} was modified; graded with the original")
                cells.append(restored(src))
        else:
            cells.append(_new_cell(cell_type, src_text))  # unknown grade id: an ordinary cell
    # put back what was deleted, right after the cell that precedes it in the source
    for gid in [_gid(c) for c in source_nb.cells if _gid(c)]:
        if gid in seen:
            continue
        if book.is_answer(src_by_id[gid]) or book.is_manual_answer(src_by_id[gid]):
            cell = restored(stubs[gid])
            note(gid, f"answer cell {gid} was deleted; the empty stub was graded")
        else:
            cell = restored(src_by_id[gid])
            note(gid, f"check cell {gid} was deleted; restored from the source")
        cells.insert(_position(source_nb, cells, gid), cell)
        seen.add(gid)
    nb = nbformat.v4.new_notebook(cells=cells, metadata=copy.deepcopy(source_nb.metadata))
    notes = {
        label: [text if n == 1 else f"{text} ({n} times)" for text, n in said.items()]
        for label, said in counts.items()
    }
    return nb, notes


def _position(source_nb, cells, gid):
    """Where to put back the deleted cell ``gid``: after the nearest cell that precedes it in the
    source and is still in ``cells`` (matched by grade id); else at the end."""
    by_gid = {_gid(c): i for i, c in enumerate(cells) if _gid(c)}
    before = []
    for c in source_nb.cells:
        if _gid(c) == gid:
            break
        before.append(c)
    for c in reversed(before):
        if _gid(c) in by_gid:
            return by_gid[_gid(c)] + 1
    return len(cells)


def _check_indices(nb):
    return {_gid(c): i for i, c in enumerate(nb.cells) if _gid(c)}


def runner_args(limits, nb):
    checks = [i for i, c in enumerate(nb.cells) if book.is_check(c)]
    return [
        "--check-cells",
        ",".join(map(str, checks)),
        "--cell-timeout",
        str(limits.cell_timeout),
        "--notebook-timeout",
        str(limits.notebook_timeout),
        "--max-output-bytes",
        str(limits.max_output_bytes),
    ]


# ----------------------------------------------------------------------------- scoring


def _answer_error(err):
    return "unanswered (NotImplementedError)" if err.startswith("NotImplementedError") else f"answer: {err}"


def score(chapter, nb, run, student, notes=None):
    """One :class:`Row` per coding exercise of ``chapter`` from the sandbox ``run`` of ``nb``."""
    notes = notes or {}
    index = _check_indices(nb)
    cells = {r.get("index"): r for r in run.records if r.get("kind") == "cell"}
    rows = []
    for e in chapter.coding:
        r = Row(student, chapter.name, e.label, 0.0, e.points, notes="; ".join(notes.get(e.label, [])))
        rows.append(r)
        chk, ans = cells.get(index.get(e.check_id)), cells.get(index.get(e.answer_id))
        if run.problem:
            r.error = f"not graded, the whole notebook scores 0: {run.problem}"
            continue
        elif chk is None:
            r.error = "the check cell did not run"
        elif chk.get("status") == "ok":
            r.error = _compare(chapter, e, chk)
            if not r.error:
                r.points = e.points
        elif ans is not None and ans.get("status") != "ok":
            r.error = _answer_error(str(ans.get("error", "")))
        elif str(chk.get("error", "")).startswith("NotImplementedError"):
            r.error = "unanswered (NotImplementedError)"
        else:
            r.error = f"check: {chk.get('error', '')}"
        if run.memory and r.error:
            r.error += f" ({run.memory})"
    return rows


def _compare(chapter, e, chk):
    """``""`` when the check's values match the instructor's, else why not."""
    if "values" not in chk:
        return f"check: {chk.get('values_error') or 'no check_values came out of the kernel'}"
    expected = chapter.expected[e.label]
    if len(chk["values"]) > values.text_bound(expected):
        return (
            f"check: check_values is far larger than the values it should hold "
            f"({len(chk['values'])} characters of JSON)"
        )
    try:
        got = values.loads(chk["values"])
    except values.MalformedValues as exc:
        return f"check: check_values could not be read ({exc})"
    rtol, atol = chapter.tolerances(e)
    diff = values.compare(expected, got, rtol, atol)
    return f"check: the check cell ran, but {diff}" if diff else ""


def expected_values(chapter, run):
    """Fill ``chapter.expected`` from the instructor's run; return the problems (strings)."""
    if run.problem:
        return [f"{chapter.name}: the instructor's notebook could not be run: {run.problem}"]
    index = _check_indices(chapter.nb)
    cells = {r.get("index"): r for r in run.records if r.get("kind") == "cell"}
    problems = []
    for e in chapter.coding:
        chk = cells.get(index[e.check_id]) or {}
        where = f"{chapter.name}: {e.check_id}"
        if chk.get("status") != "ok":
            problems.append(f"{where} fails with the instructor's answer: {chk.get('error', 'did not run')}")
        elif "values" not in chk:
            problems.append(f"{where}: {chk.get('values_error', 'no check_values')}")
        else:
            try:
                chapter.expected[e.label] = values.loads(chk["values"])
            except values.MalformedValues as exc:
                problems.append(f"{where}: its check_values cannot be encoded ({exc})")
                continue
            if any(x != x for _, data in chapter.expected[e.label].values() for x in data):
                problems.append(f"{where}: its check_values contain NaN, which never matches")
    return problems


# ----------------------------------------------------------------------------- a grading run


def grade_folder(
    folder,
    out_dir,
    root=book.ROOT,
    toc="_toc.yml",
    limits=sandbox.Limits(),
    jobs=None,
    unsafe=False,
    uid_base=sandbox.DEFAULT_UID_BASE,
    max_notebook_bytes=20_000_000,
    log=None,
    chapters_to_grade=None,
):
    """Grade every submission in ``folder`` against the chapters of ``root``/``toc``; write the
    results to a fresh ``out_dir``; return a :class:`Result`.  ``chapters_to_grade`` (names)
    restricts grading to those chapters.  Raises :class:`GradingError` when grading cannot
    start (no sandbox, no folder, an unknown chapter name, no instructor notebook that can
    grade); an instructor notebook that cannot grade stops only its own chapter."""
    t0 = time.monotonic()
    log = log or (lambda text: None)
    folder, out_dir = pathlib.Path(folder), pathlib.Path(out_dir)
    if folder.is_symlink() or not folder.is_dir():
        raise GradingError(f"not a folder: {folder}")
    chapters = load_chapters(root, toc)
    if not chapters:
        raise GradingError(f"no chapter notebooks in {pathlib.Path(root) / toc}")
    only = None
    if chapters_to_grade is not None:
        only = set(chapters_to_grade)
        unknown = sorted(only - set(chapters))
        if unknown:
            raise GradingError(f"not chapters of the book: {', '.join(unknown)} (chapters: {', '.join(chapters)})")
    trusted_before = source_hashes(chapters)
    # the grader is the OOM killer's last choice (its notebooks are the first): a class that
    # fills the machine's memory loses its notebooks, never everyone's grades
    old_adj = sandbox.protect_from_oom()
    if old_adj is None and os.geteuid() == 0:
        log(
            "note: the grader could not lower its oom_score_adj (no CAP_SYS_RESOURCE): it is not "
            "protected from the OOM killer, and a notebook can undo its own oom_score_adj of 1000"
        )
    try:
        with tempfile.TemporaryDirectory(prefix="cw-spool-") as spool:
            return _grade(folder, out_dir, root, chapters, trusted_before, spool, limits, jobs, unsafe,
                          uid_base, max_notebook_bytes, log, t0, only)
    finally:
        sandbox.restore_oom(old_adj)


GRADER_RESERVE = 1 << 30  # memory the grader keeps for itself and the system


def available_memory():
    """Bytes of memory the machine can still give (MemAvailable), or ``None``."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def jobs_that_fit(jobs, notebook_bytes, log=print, available=None):
    """``jobs``, lowered so that that many notebooks at their memory limit fit in the memory the
    machine has free (less ``GRADER_RESERVE``), with a message; raises :class:`GradingError`
    when not even one fits.  Only as root: only then is a notebook's memory its control
    group's limit (otherwise it is bounded per process and the summary says so)."""
    if os.geteuid() != 0:
        return jobs
    available = available_memory() if available is None else available
    if available is None:
        return jobs
    fit = (available - GRADER_RESERVE) // notebook_bytes
    if fit < 1:
        raise GradingError(
            f"not even one notebook fits in memory: {available >> 20} MiB are available, a "
            f"notebook may use {notebook_bytes >> 20} MiB (--notebook-memory-mb) and the grader "
            f"keeps {GRADER_RESERVE >> 20} MiB; lower --notebook-memory-mb or free memory"
        )
    if fit < jobs:
        log(
            f"note: grading {fit} notebooks at a time, not {jobs}: {jobs} x "
            f"{notebook_bytes >> 20} MiB (--notebook-memory-mb) do not fit in the "
            f"{available >> 20} MiB available (the grader keeps {GRADER_RESERVE >> 20} MiB)"
        )
        return int(fit)
    return jobs


def _grade(folder, out_dir, root, chapters, trusted_before, spool, limits, jobs, unsafe, uid_base,
           max_notebook_bytes, log, t0, only):
    subs, rows = intake(folder, chapters, max_notebook_bytes, spool)
    if only is not None:  # the chapters the instructor grades this time; the rest get a row
        skipped = [s for s in subs if s.chapter not in only]
        subs = [s for s in subs if s.chapter in only]
        rows += [
            Row(s.student, s.chapter, "", 0.0, 0.0, "ignored: not among the chapters graded this time (--chapters)")
            for s in skipped
        ]
    used = {s.chapter: chapters[s.chapter] for s in subs}
    # A chapter the instructor's notebook cannot grade stops only that chapter: which chapters
    # run is up to the class (a student may hand in any chapter of the book).
    broken = {}
    for c in used.values():
        problems = book.structure_problems(c.nb, c.path.name)
        if problems:
            broken[c.name] = "it does not follow the coursework conventions: " + "; ".join(problems)
    jobs = max(1, jobs or min(8, os.cpu_count() or 1))
    jobs = jobs_that_fit(jobs, limits.notebook_memory_bytes, log)
    if unsafe:
        log(f"WARNING: {UNSAFE_WARNING}")
    with sandbox.Sandbox(unsafe=unsafe, slots=jobs, uid_base=uid_base, limits=limits) as box:
        try:
            box.check(hidden=[root, folder, out_dir, spool])
        except sandbox.SandboxUnavailable as exc:
            raise GradingError(str(exc)) from None
        if not box.groups:
            log(f"note: memory {box.memory_text()}")
        return _run_all(
            box, folder, out_dir, chapters, used, broken, subs, rows, trusted_before, limits, jobs, log, t0
        )


def _run_all(box, folder, out_dir, chapters, used, broken, subs, rows, trusted_before, limits, jobs, log, t0):
    slots = queue.Queue()
    for k in range(jobs):
        slots.put(k)

    def in_slot(fn, *args):
        k = slots.get()
        try:
            return fn(k, *args)
        finally:
            slots.put(k)

    def run_instructor(k, chapter):
        log(f"instructor {chapter.name} ...")
        run = box.execute(chapter.data, f"{chapter.name}.ipynb", runner_args(limits, chapter.nb), slot=k)
        return expected_values(chapter, run)

    def run_student(k, sub):
        chapter = chapters[sub.chapter]
        if chapter.name in broken:
            why = f"not graded: the instructor's notebook of this chapter cannot grade ({broken[chapter.name]})"
            return [Row(sub.student, chapter.name, e.label, 0.0, e.points, why) for e in chapter.coding], None, {}
        try:
            cells = sub.cells()
        except ValueError as exc:
            return (
                [
                    Row(sub.student, chapter.name, e.label, 0.0, e.points, f"unreadable notebook: {exc}")
                    for e in chapter.coding
                ],
                None,
                {},
            )
        nb, notes = merge(chapter.nb, cells)
        answers = by_hand_answers(chapter, cells)
        del cells
        data = nbformat.writes(nb).encode()
        for attempt in (1, 2):  # once more when the machine's OOM killer hit it, not its limit
            run = box.execute(data, sub.name, runner_args(limits, nb), slot=k)
            said = run.problem or run.memory
            log(shown(f"{sub.student}/{sub.name}: {run.seconds:.1f} s" + (f" ({said})" if said else "")))
            if not run.machine_oom:
                break
        if run.machine_oom:
            run.problem = f"not graded: {run.machine_oom}; grade it again when the machine has memory free"
        # only the rows are kept, and the pen-and-paper answers (of this chapter's exercises,
        # at most BY_HAND_CHARS each) wait in the spool: a class's results streams and answers
        # would not fit in memory
        return score(chapter, nb, run, sub.student, notes), None, _spool_answers(sub, answers)

    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        runnable = [c for c in used.values() if c.name not in broken]
        for c, problems in zip(runnable, pool.map(lambda c: in_slot(run_instructor, c), runnable)):
            if problems:
                broken[c.name] = "its check_values are not usable: " + "; ".join(problems)
        if used and len(broken) == len(used):
            raise GradingError(
                "the instructor's notebooks give no usable check_values, so nothing was graded:\n  "
                + "\n  ".join(f"{name}: {why}" for name, why in broken.items())
            )
        for name, why in broken.items():
            log(f"WARNING: chapter {name} is not graded: {why}")
        t_students = time.monotonic()

        def guarded(k, sub):
            """A notebook that trips the grader itself costs its student the points, never the
            class its grading run."""
            try:
                return run_student(k, sub)
            except Exception as exc:  # noqa: BLE001 - reported in the rows and the log
                why = f"not graded: the grader failed on this notebook ({type(exc).__name__}: {exc})"
                log(shown(f"{sub.student}/{sub.name}: {why}"))
                return [Row(sub.student, sub.chapter, e.label, 0.0, e.points, why) for e in chapters[sub.chapter].coding], None, {}

        graded = list(pool.map(lambda s: in_slot(guarded, s), subs))
    timing = {
        "setup": t_students - t0,
        "students": time.monotonic() - t_students,
        "notebooks": len(subs),
        "jobs": jobs,
    }
    by_hand = []
    for sub, (srows, _run, answers) in zip(subs, graded):
        answers = answers or {}
        rows += srows
        for e in chapters[sub.chapter].by_hand:
            rows.append(
                Row(
                    sub.student,
                    sub.chapter,
                    e.label,
                    None,
                    e.points,
                    "",
                    "graded by hand: the answer is in by_hand.md",
                )
            )
            by_hand.append((sub.student, sub.chapter, e, answers))
    # what changed while grading
    changed = []
    for sub in subs:
        now = rehash(folder, sub)
        if now != sub.sha256:
            changed.append(sub)
            for r in rows:
                if (r.student, r.chapter) == (sub.student, sub.chapter):
                    r.notes = "; ".join(
                        filter(
                            None,
                            [
                                r.notes,
                                "the file changed while it was being "
                                "graded; graded as it was read at the start",
                            ],
                        )
                    )
    trusted_after = source_hashes(chapters, reread=True)
    tampered = [k for k in trusted_before if trusted_before[k] != trusted_after.get(k)]
    flags = name_flags({r.student for r in rows if r.student})
    names = display_names({r.student for r in rows if r.student})
    for r in rows:
        if r.student in flags:
            r.notes = "; ".join(filter(None, [r.notes, flags[r.student]]))
        r.student = names.get(r.student, r.student)
    rows.sort(key=lambda r: (r.student, r.chapter, r.exercise))
    text = summary(rows, len(subs), box.describe(), tampered, changed, timing, broken, flags)
    full = []
    files = {
        "grades.csv": _csv(rows, full),
        "summary.txt": text,
        "hashes.csv": _hashes(trusted_before, subs),
        "by_hand.md": _by_hand_chunks([(names.get(st, st), *rest) for st, *rest in by_hand]),
    }
    files["exercises.csv"] = _exercises_csv(exercise_stats(rows))
    for (student, chapter), page in feedback_pages(rows, by_hand, names):
        files[f"feedback/{student}/{chapter}.html"] = page
    if full:
        files[FULL_TEXT_FILE] = "".join(full)
    write_fresh(out_dir, files)
    isolation = {"uids": list(box.uids or []), "cgroups": [d for g in box.groups or () for d in g.dirs]}
    return Result(rows, text, tampered, timing, isolation, broken)


FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_text(text):
    """A text field of a CSV file: :func:`shown`, and a leading ``'`` when it would start with
    a character that makes a spreadsheet read it as a formula (a student folder named
    ``=HYPERLINK(...)`` or ``-2+3``); the OWASP advice for CSV injection.

    >>> print(csv_text('=HYPERLINK("http://x", "marks")'), csv_text("ada"), csv_text("-rf"))
    '=HYPERLINK("http://x", "marks") ada '-rf
    """
    text = shown(text)
    return "'" + text if text.startswith(FORMULA_START) else text


FIELD_CHARS = 4000  # of a CSV field; Python's csv module reads at most 131,072 by default
FULL_TEXT_FILE = "notes-full.txt"  # the full text of the fields that were cut


def cut_field(text, where, full):
    """``text`` (already :func:`csv_text`) cut to ``FIELD_CHARS`` with a marker saying where its
    full text is; the full text is appended to the list ``full`` (for ``FULL_TEXT_FILE``).

    >>> full = []
    >>> len(cut_field("x" * 9000, "row 1 notes", full)) <= FIELD_CHARS, len(full[0]) > 9000
    (True, True)
    """
    if len(text) <= FIELD_CHARS:
        return text
    full.append(f"== {where} ({len(text)} characters)\n{text}\n\n")
    marker = f" [... cut at {FIELD_CHARS} characters; the full text is in {FULL_TEXT_FILE}: {where}]"
    return text[: FIELD_CHARS - len(marker)] + marker


def _csv(rows, full=None):
    full = [] if full is None else full
    buf = io.StringIO()
    w = csv.DictWriter(buf, FIELDS, lineterminator="\n")
    w.writeheader()
    for n, r in enumerate(rows, start=2):
        d = {k: cut_field(csv_text(v), f"grades.csv line {n}, {k}", full) for k, v in dataclasses.asdict(r).items()}
        d["points"] = "" if r.points is None else f"{r.points:g}"
        d["max_points"] = f"{r.max_points:g}"
        w.writerow(d)
    return buf.getvalue()


def _hashes(trusted, subs):
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["what", "sha256"])
    for k, v in trusted.items():
        w.writerow([csv_text(k)[:FIELD_CHARS], v])
    for s in subs:  # names are at most 255 bytes, 1,020 characters escaped
        w.writerow([csv_text(f"submission {s.student}/{s.name}")[:FIELD_CHARS], s.sha256])
    return buf.getvalue()


_IMAGE = re.compile(r"!\[")


def neutralised(text):
    r"""Markdown that loads nothing when viewed: every ``<`` is written as ``&lt;`` (no HTML:
    no ``<img>``, ``<iframe>``, ``<link>``, ``<style>``, ``srcset`` or ``url(...)``), and every
    image ``![alt](url)`` / ``![alt][ref]`` as the literal text ``!\[alt](url)``.  A remote image
    in a pen-and-paper answer would otherwise tell its student when, and from where, the
    instructor read it.

    >>> print(neutralised('![x](http://e.example/t.png) <img src="http://e.example/p">'))
    !\[x](http://e.example/t.png) &lt;img src="http://e.example/p">
    """
    return _IMAGE.sub(r"!\\[", text.replace("<", "&lt;"))


def by_hand_answers(chapter, cells):
    """``{grade id: text}`` of the pen-and-paper answers of ``chapter`` among a submission's
    ``cells`` (the first cell of each grade id, as :func:`merge` takes it; at most
    ``BY_HAND_CHARS`` + 1 characters): only the chapter's own answer cells, however many
    markdown cells with grade ids a student adds."""
    wanted = {e.answer_id for e in chapter.by_hand}
    answers = {}
    for ct, src, gid in cells:
        if ct == "markdown" and gid in wanted and gid not in answers:
            answers[gid] = src[: BY_HAND_CHARS + 1]
    return answers


def _spool_answers(sub, answers):
    """Write a submission's pen-and-paper answers next to its spooled cells; returns the path
    (``None`` when there are none)."""
    if not answers:
        return None
    path = sub.spooled.with_suffix(".hand.json")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(json.dumps(answers, ensure_ascii=False).encode("utf-8", "backslashreplace"))
    return path


def _answer(where, gid):
    if where is None:
        return None
    if isinstance(where, dict):
        return where.get(gid)
    return json.loads(pathlib.Path(where).read_bytes()).get(gid)


def _by_hand_section(student, chapter, e, text):
    lines = [f"## {shown(student)}, {chapter}, {e.label} ({e.points:g} points)", ""]
    if text is None or not text.strip() or text.strip() == "YOUR ANSWER HERE":
        lines += ["(no answer)", ""]
    else:
        text = shown(neutralised(text[:BY_HAND_CHARS]), keep="\n\t")
        lines += ["> " + line for line in text.split("\n")] + [""]
    return "\n".join(lines) + "\n"


def _by_hand_chunks(items):
    """by_hand.md, one section at a time (``items``: ``(student, chapter, exercise, answers)``,
    the answers a dict or the path of :func:`_spool_answers`), so the whole class's answers are
    never in memory at once."""
    yield "# Answers to grade by hand\n\n"
    if not items:
        yield "(none)\n"
    for student, chapter, e, where in items:
        yield _by_hand_section(student, chapter, e, _answer(where, e.answer_id))


def _by_hand(items):
    return "".join(_by_hand_chunks(items))


# ----------------------------------------------------------------------------- student names

# letters of other scripts drawn like Latin ones (Unicode's confusables, the common part)
_CONFUSABLE = str.maketrans(
    "аеорсуххіјѕԁԛԝһӏкмнвтАВЕКМНОРСТХУІЈЅ"
    "αοςνρτυικχεΑΒΕΖΗΙΚΜΝΟΡΤΥΧ01|ɡ",
    "aeorcyxxijsdqwhlkmhbtABEKMHOPCTXYIJS"
    "aocvptuikxeABEZHIKMNOPTYXolIg",
)


def skeleton(name):
    """What a name looks like: NFKC, look-alike letters of other scripts replaced by the Latin
    ones, case folded, ``l``/``I``/``1`` made one.

    >>> skeleton("Ada") == skeleton("\u0430da") == skeleton("\uff21da"), skeleton("Bob")
    (True, 'bob')
    """
    text = unicodedata.normalize("NFKC", name).translate(_CONFUSABLE).casefold()
    return text.replace("1", "l").replace("i", "l").replace("|", "l")


def _codepoints(name):
    return "".join(c if c.isascii() else f"<U+{ord(c):04X} {unicodedata.name(c, '?')}>" for c in name)


def name_flags(names):
    """``{name: sentence}`` for the student folder names an instructor must look at: leading or
    trailing spaces, letters of several scripts, or a name another folder's looks like (the
    same skeleton); each sentence spells the name's characters that are not ASCII."""
    out, by_skeleton = {}, {}
    for name in names:
        by_skeleton.setdefault(skeleton(name.strip()), []).append(name)
    for name in names:
        why = []
        if name != name.strip():
            why.append("has leading or trailing spaces")
        scripts = {unicodedata.name(c, "?").split()[0] for c in name if c.isalpha()}
        if len(scripts) > 1:
            why.append(f"mixes letters of {', '.join(sorted(scripts))}")
        alike = sorted(n for n in by_skeleton[skeleton(name.strip())] if n != name)
        if alike:
            why.append("looks like " + ", ".join(repr(_codepoints(n)) for n in alike))
        if why:
            out[name] = f"student folder {_codepoints(name)!r} " + "; ".join(why)
    return out


def display_names(names):
    """``{folder name: name in the output}``: NFKC (fullwidth letters, composed accents), unless
    two folders would then read the same; those keep their own spelling."""
    nfkc = {n: unicodedata.normalize("NFKC", n) for n in names}
    taken = {}
    for n, v in nfkc.items():
        taken.setdefault(v, []).append(n)
    return {n: (v if len(taken[v]) == 1 else n) for n, v in nfkc.items()}


def summary(rows, n_notebooks, sandbox_text, tampered=(), changed=(), timing=None, broken=None, flags=None):
    auto = [r for r in rows if r.points is not None]
    students = sorted({r.student for r in rows if r.student})
    lines = [f"graded {n_notebooks} notebooks of {len(students)} students"]
    if sandbox_text.startswith("NO SANDBOX"):
        lines.append(f"WARNING: {UNSAFE_WARNING}")
    lines.append(f"isolation: {sandbox_text}")
    if timing and timing["notebooks"]:
        lines.append(
            f"time: {timing['setup']:.0f} s to set up (sandbox check, instructor notebooks), "
            f"{timing['students']:.0f} s for the submissions, {timing['jobs']} at a time: "
            f"{timing['students'] / timing['notebooks']:.1f} s per notebook"
        )
    for t in tampered:
        lines.append(f"WARNING: {t} changed during grading; re-grade from a clean copy")
    for name, why in (broken or {}).items():
        lines.append(f"WARNING: chapter {name} was not graded, its notebook cannot grade: {why[:2000]}")
    if flags:
        lines.append("WARNING: student folder names to check (they may be mistaken for another):")
        lines += [f"  {why}" for _, why in sorted(flags.items())]
    for s in students:
        mine = [r for r in auto if r.student == s]
        pts, mx = sum(r.points for r in mine), sum(r.max_points for r in mine)
        errs = sum(1 for r in mine if r.error)
        hand = sum(r.max_points for r in rows if r.student == s and r.points is None)
        extra = f", {hand:g} more to grade by hand" if hand else ""
        label = s if s == s.strip() else repr(s)  # a trailing space made two lines look alike
        lines.append(f"  {label:<20} {pts:g} / {mx:g} points{extra}, {errs} row(s) with errors")
    stats = exercise_stats(rows)
    if stats:
        lines.append("per exercise (mean points / max, full marks; the most common reasons for a miss):")
        for st in stats:
            lines.append(
                f"  {st['chapter'] + ' ' + st['exercise']:<52} {st['mean_points']:.2f} / "
                f"{st['max_points']:g}, {st['full_marks']} of {st['notebooks']} ({st['pass_rate']:.0%})"
            )
            lines += [f"      {n} x {why}" for why, n in st["misses"]]
    flagged = [r for r in rows if r.notes and r.points is not None]
    if flagged:
        lines.append("cells deleted or modified by students, and other notes:")
        for r in flagged:
            lines.append(f"  {r.student} {r.chapter} {r.exercise}: {r.notes}")
    skipped = [r for r in rows if not r.exercise and r.error]
    if skipped:
        lines.append("files not graded:")
        for r in skipped:
            lines.append(f"  {r.student or '.'}/{r.chapter}: {r.error}")
    if changed:
        lines.append(
            "submissions that changed while they were graded: "
            + ", ".join(f"{s.student}/{s.name}" for s in changed)
        )
    return "\n".join(shown(line) for line in lines) + "\n"


# ----------------------------------------------------------------------------- student feedback

FEEDBACK_STYLE = (
    "body{font-family:sans-serif;max-width:50em;margin:2em auto;padding:0 1em;color:#111}"
    "table{border-collapse:collapse;width:100%}td,th{border:1px solid #999;padding:.3em;"
    "text-align:left;vertical-align:top}pre{white-space:pre-wrap;background:#f4f4f4;padding:.5em}"
)


def feedback_reason(error):
    """What a student is told about a miss: the reason, never a reference value.  An error of
    the student's own answer cell, the comparison of ``check_values`` (it names the key and
    how far, not the expected number) and the grader's own reasons are shown as they are; of
    an error raised by the check cell only its kind (an assertion's message may print the
    reference, as numpy's ``assert_allclose`` does).

    >>> feedback_reason("check: AssertionError: Not equal to tolerance ... DESIRED: 0.5")
    'check: the check failed (AssertionError)'
    >>> feedback_reason("answer: NameError: name 'x' is not defined")
    "answer: NameError: name 'x' is not defined"
    """
    if error.startswith("check: ") and not error.startswith(("check: the check cell ran, but", "check: check_values")):
        kind = error[len("check: ") :].split(":", 1)[0].strip()
        return f"check: the check failed ({kind})" if kind.isidentifier() else "check: the check failed"
    return error


def feedback_pages(rows, by_hand, names):
    """``[((student folder, chapter), html)]``: per student and chapter an offline page with no
    script (and a policy that loads nothing): each exercise, its points and, for a miss, the
    reason (:func:`feedback_reason`); the pen-and-paper answers as text."""
    import html

    folder_of = {v: k for k, v in names.items()}
    pages = {}
    for r in rows:
        if r.student and r.chapter and r.exercise:
            pages.setdefault((r.student, r.chapter), []).append(r)
    answers = {}
    for student, chapter, e, where in by_hand:
        answers.setdefault((student, chapter), []).append((e, where))
    out = []
    for (student, chapter), mine in sorted(pages.items()):
        esc = lambda t: html.escape(shown(t, keep="\n"))  # noqa: E731
        auto = [r for r in mine if r.points is not None]
        got, mx = sum(r.points for r in auto), sum(r.max_points for r in auto)
        body = [
            f"<h1>{esc(chapter)}: feedback for {esc(student)}</h1>",
            f"<p>{got:g} of {mx:g} points graded automatically"
            + (f"; {sum(r.max_points for r in mine if r.points is None):g} more to be graded by hand" if len(auto) < len(mine) else "")
            + ".</p>",
            "<table><tr><th>exercise</th><th>points</th><th>why points were missed</th></tr>",
        ]
        for r in mine:
            pts = "graded by hand" if r.points is None else f"{r.points:g} / {r.max_points:g}"
            why = "" if r.points is None or r.points == r.max_points else feedback_reason(r.error or "no points")
            body.append(f"<tr><td>{esc(r.exercise)}</td><td>{pts}</td><td>{esc(why)}</td></tr>")
        body.append("</table>")
        for e, where in answers.get((student, chapter), []):
            text = _answer(where, e.answer_id)
            text = "(no answer)" if not text or text.strip() == "YOUR ANSWER HERE" else text[:BY_HAND_CHARS]
            body += [f"<h2>{esc(e.label)}: your pen-and-paper answer, as text</h2>", f"<pre>{esc(text)}</pre>"]
        page = (
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"
            f"<title>{esc(chapter)}: feedback</title><style>{FEEDBACK_STYLE}</style></head><body>\n"
            + "\n".join(body)
            + "\n</body></html>\n"
        )
        out.append(((folder_of.get(student, student), chapter), page))
    return out


_NUMBER = re.compile(r"(?<![\w'])[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?")


def miss_reason(error):
    """A miss's reason with its numbers made ``#``, so that misses of one kind count together.

    >>> miss_reason("check: the check cell ran, but check_values['p0'] differs (relative difference 2.0e-01)")
    "check: the check cell ran, but check_values['p0'] differs (relative difference #)"
    """
    return _NUMBER.sub("#", error)[:200]


def exercise_stats(rows, top=3):
    """Per auto-graded exercise: the notebooks graded, how many earned full marks (the pass
    rate), the mean points, and the ``top`` most common reasons for a miss with their counts."""
    by_ex = {}
    for r in rows:
        if r.points is not None and r.exercise:
            by_ex.setdefault((r.chapter, r.exercise), []).append(r)
    out = []
    for (chapter, label), mine in sorted(by_ex.items()):
        full = sum(1 for r in mine if r.points == r.max_points)
        reasons = {}
        for r in mine:
            if r.points != r.max_points:
                why = miss_reason(r.error or "no points")
                reasons[why] = reasons.get(why, 0) + 1
        out.append(
            {
                "chapter": chapter,
                "exercise": label,
                "max_points": mine[0].max_points,
                "notebooks": len(mine),
                "full_marks": full,
                "pass_rate": full / len(mine),
                "mean_points": sum(r.points for r in mine) / len(mine),
                "misses": sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))[:top],
            }
        )
    return out


EXERCISE_FIELDS = ["chapter", "exercise", "max_points", "notebooks", "full_marks", "pass_rate", "mean_points", "common_misses"]


def _exercises_csv(stats):
    """exercises.csv: the instructor's per-exercise pass rates (:func:`exercise_stats`)."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, EXERCISE_FIELDS, lineterminator="\n")
    w.writeheader()
    for st in stats:
        misses = "; ".join(f"{n} x {why}" for why, n in st["misses"])
        w.writerow(
            {
                "chapter": csv_text(st["chapter"]),
                "exercise": csv_text(st["exercise"]),
                "max_points": f"{st['max_points']:g}",
                "notebooks": st["notebooks"],
                "full_marks": st["full_marks"],
                "pass_rate": f"{st['pass_rate']:.3f}",
                "mean_points": f"{st['mean_points']:.3f}",
                "common_misses": csv_text(misses)[:FIELD_CHARS],
            }
        )
    return buf.getvalue()


def write_fresh(out_dir, files):
    """Write ``files`` ({name: text, or an iterable of texts}) into a new directory and move it
    to ``out_dir`` atomically.

    Nothing is written through a symbolic link: the files are created with O_EXCL | O_NOFOLLOW in
    a directory made here; an existing ``out_dir`` (a directory, a file or a link, which is not
    followed) is first renamed to ``<out_dir>.previous-<time>``.
    """
    out_dir = pathlib.Path(os.path.abspath(out_dir))
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    fresh = pathlib.Path(_mkdtemp(out_dir.parent, f".{out_dir.name}.new-{stamp}-"))
    dfd = _open_dir(str(fresh))
    made = {}
    try:
        for name, text in files.items():
            *folders, base = name.split("/")  # feedback/<student>/<chapter>.html
            parent = dfd
            for k in range(len(folders)):
                key = tuple(folders[: k + 1])
                if key not in made:
                    os.mkdir(folders[k], 0o755, dir_fd=parent)
                    made[key] = _open_dir(folders[k], parent)
                parent = made[key]
            fd = os.open(
                base, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=parent
            )
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
                for chunk in [text] if isinstance(text, str) else text:
                    fh.write(chunk)
                fh.flush()
                os.fsync(fh.fileno())
        os.fchmod(dfd, 0o755)
    finally:
        for fd in made.values():
            os.close(fd)
        os.close(dfd)
    if os.path.lexists(out_dir):
        previous = out_dir.with_name(f"{out_dir.name}.previous-{stamp}")
        n = 1
        while os.path.lexists(previous):
            previous = out_dir.with_name(f"{out_dir.name}.previous-{stamp}-{n}")
            n += 1
        os.rename(out_dir, previous)  # renames a link itself, never its target
    os.rename(fresh, out_dir)


def _mkdtemp(parent, prefix):
    return tempfile.mkdtemp(prefix=prefix, dir=parent)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    d = sandbox.Limits()
    ap.add_argument("submissions")
    ap.add_argument("--out", default=str(book.ROOT / "_build" / "grades"))
    ap.add_argument(
        "--root", default=str(book.ROOT), help="book root holding the toc and the instructor notebooks"
    )
    ap.add_argument("--toc", default="_toc.yml")
    ap.add_argument(
        "--cell-timeout", type=float, default=d.cell_timeout, help="seconds per cell (default %(default)g)"
    )
    ap.add_argument(
        "--notebook-timeout",
        type=float,
        default=d.notebook_timeout,
        help="seconds per notebook (default %(default)g)",
    )
    ap.add_argument("--max-output-bytes", type=int, default=d.max_output_bytes, help="output kept per cell")
    ap.add_argument(
        "--jobs",
        type=int,
        default=None,
        help="notebooks graded at once (default: the number of cores, at most 8)",
    )
    ap.add_argument(
        "--memory-mb",
        type=int,
        default=d.memory_bytes >> 20,
        help="address space per process (default %(default)s MiB)",
    )
    ap.add_argument(
        "--notebook-memory-mb",
        type=int,
        default=d.notebook_memory_bytes >> 20,
        help="memory of a whole notebook, all its processes, files in memory and kernel memory "
        "included (a control group; needs root; default %(default)s MiB)",
    )
    ap.add_argument(
        "--disk-mb",
        type=int,
        default=d.disk_bytes >> 20,
        help="size of the work folder and of /tmp (default %(default)s MiB each)",
    )
    ap.add_argument(
        "--file-mb",
        type=int,
        default=d.file_bytes >> 20,
        help="largest file a notebook may write (default %(default)s MiB)",
    )
    ap.add_argument(
        "--processes",
        type=int,
        default=d.processes,
        help="processes and threads per notebook (default %(default)s)",
    )
    ap.add_argument(
        "--max-notebook-mb",
        type=float,
        default=20.0,
        help="larger submissions are rejected (default %(default)g MB)",
    )
    ap.add_argument(
        "--sandbox-uid-base",
        type=int,
        default=sandbox.DEFAULT_UID_BASE,
        help="as root, notebooks run as host uids BASE, BASE+1, ... (one per job; default %(default)s)",
    )
    ap.add_argument(
        "--chapters",
        help="grade only these chapters (comma-separated names such as 05_laplace); notebooks "
        "of other chapters get a row 'ignored: ...'",
    )
    ap.add_argument(
        "--unsafe-no-sandbox",
        action="store_true",
        help="run the notebooks WITHOUT the sandbox, with your permissions: only for trusted notebooks",
    )
    args = ap.parse_args(argv)
    limits = sandbox.Limits(
        cell_timeout=args.cell_timeout,
        notebook_timeout=args.notebook_timeout,
        max_output_bytes=args.max_output_bytes,
        memory_bytes=args.memory_mb << 20,
        disk_bytes=args.disk_mb << 20,
        file_bytes=args.file_mb << 20,
        processes=args.processes,
        notebook_memory_bytes=args.notebook_memory_mb << 20,
    )
    try:
        result = grade_folder(
            args.submissions,
            args.out,
            args.root,
            args.toc,
            limits,
            args.jobs,
            args.unsafe_no_sandbox,
            args.sandbox_uid_base,
            int(args.max_notebook_mb * 1e6),
            log=lambda line: print(line, file=sys.stderr, flush=True),
            chapters_to_grade=[c for c in args.chapters.split(",") if c] if args.chapters else None,
        )
    except GradingError as exc:
        print(f"grading stopped: {exc}", file=sys.stderr)
        return 2
    sys.stdout.write(result.text)
    print(f"wrote {pathlib.Path(args.out) / 'grades.csv'} ({len(result.rows)} rows)")
    return 1 if result.tampered or result.not_graded else 0


if __name__ == "__main__":
    sys.exit(main())
