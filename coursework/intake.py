"""Intake: every entry of the submissions folder looked at without following a link, each
chapter notebook read once within a size bound, parsed defensively (UTF-8, or UTF-16/32 with a
byte-order mark) and spooled as its cells' types, sources and grade ids; a row for everything
that is not graded; :func:`rehash`, the bounded re-read at the end."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import pathlib
import re
import stat
import tempfile

from .common import GradingError, Row, open_dir, shown
from .hashing import sha256


MAX_CELLS = 5000
MAX_CELL_CHARS = 1_000_000


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
        if sha256(data) != self.spool_sha256:
            raise RuntimeError(f"the grader's copy of {self.student}/{self.name} changed")
        obj = json.loads(data)
        if "unreadable" in obj:
            raise ValueError(obj["unreadable"])
        return [tuple(c) for c in obj["cells"]]


NOTEBOOK_RE = re.compile(r"(?P<stem>[^/]+)\.ipynb")  # used with fullmatch: no newline after it
MAX_LISTED = 100  # entries that are not graded, listed one by one per folder; then counted


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
    top = open_dir(str(folder))
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
                sfd = open_dir(name, top)
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
    return Submission(student, name, path, sha256(data), sha256(text), len(data))


def rehash(folder, sub):
    """The sha256 of a submission's file now (``None`` when it cannot be read as a plain file or
    no longer has the size it had at intake).  Bounded before it reads: the size is checked
    first, and at most that many bytes (within the intake limit) are read, 1 MiB at a time, so
    a file grown meanwhile (into a 40 GB sparse file, say) costs nothing."""
    try:
        top = open_dir(str(folder))
        try:
            sfd = open_dir(sub.student, top)
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
