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

The code, module by module: :mod:`coursework.intake` (step 1 and the bounded re-hash of step
5), :mod:`coursework.sources` and :mod:`coursework.hashing` (the instructor's chapters and the
hashes of everything trusted), :mod:`coursework.merging` (step 4's merged notebook),
:mod:`coursework.scoring` (steps 3 and 4's comparisons), :mod:`coursework.signing` (the
runner's signed results stream), :mod:`coursework.names`, :mod:`coursework.reports` and
:mod:`coursework.feedback` (step 5); this module holds a grading run's options
(:class:`Options`) and state (:class:`GradingRun`) and the command line.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import os
import pathlib
import queue
import sys
import tempfile
import time
import typing

import nbformat

from . import book, sandbox

# the names below were all defined in this module before it was split; they stay importable
# from here (the tests, the bench and instructors' scripts use them)
from .common import BY_HAND_CHARS, FIELDS, UNSAFE_WARNING, GradingError, Row, grade_id, shown
from .common import open_dir as _open_dir
from .feedback import FEEDBACK_STYLE, feedback_pages, feedback_reason
from .hashing import sha256 as _sha
from .hashing import source_hashes, tree_hash
from .intake import (
    MAX_CELL_CHARS,
    MAX_CELLS,
    MAX_LISTED,
    NOTEBOOK_RE,
    Submission,
    intake,
    parse_submission,
    rehash,
)
from .intake import _decode  # noqa: F401 - its doctest's old home
from .merging import by_hand_answers, check_indices, merge, runner_args
from .names import display_names, name_flags, skeleton
from .reports import (
    EXERCISE_FIELDS,
    FIELD_CHARS,
    FORMULA_START,
    FULL_TEXT_FILE,
    by_hand_chunks,
    csv_text,
    cut_field,
    exercise_stats,
    exercises_csv,
    grades_csv,
    hashes_csv,
    miss_reason,
    neutralised,
    spool_answers,
    summary,
    write_fresh,
)
from .scoring import expected_values, score
from .scoring import _compare  # noqa: F401 - used by the tests
from .sources import Chapter, load_chapters

_gid, _check_indices, _csv, _hashes = grade_id, check_indices, grades_csv, hashes_csv
_by_hand_chunks, _exercises_csv, _spool_answers = by_hand_chunks, exercises_csv, spool_answers

__all__ = [
    "BY_HAND_CHARS", "EXERCISE_FIELDS", "FEEDBACK_STYLE", "FIELDS", "FIELD_CHARS", "FORMULA_START",
    "FULL_TEXT_FILE", "MAX_CELLS", "MAX_CELL_CHARS", "MAX_LISTED", "NOTEBOOK_RE", "UNSAFE_WARNING",
    "Chapter", "GradingError", "GradingRun", "Options", "Result", "Row", "Submission",
    "available_memory", "by_hand_answers", "csv_text", "cut_field", "display_names",
    "exercise_stats", "expected_values", "feedback_pages", "feedback_reason", "grade_folder",
    "intake", "jobs_that_fit", "load_chapters", "main", "merge", "miss_reason", "name_flags",
    "neutralised", "parse_submission", "rehash", "runner_args", "score", "shown", "skeleton",
    "source_hashes", "summary", "tree_hash", "write_fresh", "_sha", "_open_dir",
]


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


@dataclasses.dataclass(frozen=True)
class Options:
    """How to grade: the settings of :func:`grade_folder` and of the command line."""

    root: str | pathlib.Path = book.ROOT  # book root holding the toc and the instructor notebooks
    toc: str = "_toc.yml"
    limits: sandbox.Limits = sandbox.Limits()
    jobs: int | None = None  # notebooks graded at once (None: the cores, at most 8)
    unsafe: bool = False  # run WITHOUT the sandbox
    uid_base: int = sandbox.DEFAULT_UID_BASE  # as root, the host uids BASE, BASE+1, ...
    max_notebook_bytes: int = 20_000_000  # larger submissions are rejected
    chapters_to_grade: typing.Collection[str] | None = None  # names; None: every chapter


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


def grade_folder(folder, out_dir, options=None, *, log=None, **settings):
    """Grade every submission in ``folder`` against the chapters of ``root``/``toc``; write the
    results to a fresh ``out_dir``; return a :class:`Result`.  The settings are an
    :class:`Options` or its fields as keywords (``root=``, ``limits=``, ``jobs=``, ...);
    ``chapters_to_grade`` (names) restricts grading to those chapters.  Raises
    :class:`GradingError` when grading cannot start (no sandbox, no folder, an unknown chapter
    name, no instructor notebook that can grade); an instructor notebook that cannot grade
    stops only its own chapter."""
    options = dataclasses.replace(options or Options(), **settings)
    t0 = time.monotonic()
    log = log or (lambda text: None)
    folder, out_dir = pathlib.Path(folder), pathlib.Path(out_dir)
    if folder.is_symlink() or not folder.is_dir():
        raise GradingError(f"not a folder: {folder}")
    missing = None if options.unsafe else sandbox.missing_tool()
    if missing:
        raise GradingError(missing)
    chapters = load_chapters(options.root, options.toc)
    if not chapters:
        raise GradingError(f"no chapter notebooks in {pathlib.Path(options.root) / options.toc}")
    only = None
    if options.chapters_to_grade is not None:
        only = set(options.chapters_to_grade)
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
            run = GradingRun(folder, out_dir, options, chapters, trusted_before, pathlib.Path(spool), log, t0, only)
            return run.grade()
    finally:
        sandbox.restore_oom(old_adj)


@dataclasses.dataclass
class GradingRun:
    """The state of one grading run, from intake to the files written."""

    folder: pathlib.Path
    out_dir: pathlib.Path
    options: Options
    chapters: dict  # name -> Chapter: every chapter of the book
    trusted_before: dict  # source_hashes at the start
    spool: pathlib.Path  # the grader's private folder for the submissions' cells
    log: typing.Callable[[str], None]
    t0: float  # when grading started (time.monotonic)
    only: set | None = None  # the chapters graded this time (None: all)
    subs: list = dataclasses.field(default_factory=list)  # Submission, in order
    rows: list = dataclasses.field(default_factory=list)  # Row
    used: dict = dataclasses.field(default_factory=dict)  # name -> Chapter with submissions
    broken: dict = dataclasses.field(default_factory=dict)  # name -> why it cannot grade
    jobs: int = 1
    box: sandbox.Sandbox | None = None
    t_students: float = 0.0

    @property
    def limits(self):
        return self.options.limits

    def grade(self):
        """Intake, the sandbox, the instructor's and the students' runs, the output files."""
        opts = self.options
        self.subs, self.rows = intake(self.folder, self.chapters, opts.max_notebook_bytes, self.spool)
        if self.only is not None:  # the chapters the instructor grades this time; the rest get a row
            skipped = [s for s in self.subs if s.chapter not in self.only]
            self.subs = [s for s in self.subs if s.chapter in self.only]
            self.rows += [
                Row(s.student, s.chapter, "", 0.0, 0.0, "ignored: not among the chapters graded this time (--chapters)")
                for s in skipped
            ]
        self.used = {s.chapter: self.chapters[s.chapter] for s in self.subs}
        # A chapter the instructor's notebook cannot grade stops only that chapter: which chapters
        # run is up to the class (a student may hand in any chapter of the book).
        for c in self.used.values():
            problems = book.structure_problems(c.nb, c.path.name)
            if problems:
                self.broken[c.name] = "it does not follow the coursework conventions: " + "; ".join(problems)
        jobs = max(1, opts.jobs or min(8, os.cpu_count() or 1))
        self.jobs = jobs_that_fit(jobs, self.limits.notebook_memory_bytes, self.log)
        if opts.unsafe:
            self.log(f"WARNING: {UNSAFE_WARNING}")
        with sandbox.Sandbox(
            unsafe=opts.unsafe, slots=self.jobs, uid_base=opts.uid_base, limits=self.limits
        ) as box:
            self.box = box
            try:
                box.check(hidden=[opts.root, self.folder, self.out_dir, self.spool])
            except sandbox.SandboxUnavailable as exc:
                raise GradingError(str(exc)) from None
            if not box.groups:
                self.log(f"note: memory {box.memory_text()}")
            graded = self.run_all()
            return self.report(graded)

    # ------------------------------------------------------------------------- running

    def run_instructor(self, k, chapter):
        """Run the instructor's notebook of ``chapter`` in slot ``k``; keep its expected values;
        return the problems."""
        self.log(f"instructor {chapter.name} ...")
        run = self.box.execute(chapter.data, f"{chapter.name}.ipynb", runner_args(self.limits, chapter.nb), slot=k)
        return expected_values(chapter, run)

    def run_student(self, k, sub):
        """``(rows, None, answers)`` of the submission ``sub`` run in slot ``k``."""
        chapter = self.chapters[sub.chapter]
        if chapter.name in self.broken:
            why = f"not graded: the instructor's notebook of this chapter cannot grade ({self.broken[chapter.name]})"
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
            run = self.box.execute(data, sub.name, runner_args(self.limits, nb), slot=k)
            said = run.problem or run.memory
            self.log(shown(f"{sub.student}/{sub.name}: {run.seconds:.1f} s" + (f" ({said})" if said else "")))
            if not run.machine_oom:
                break
        if run.machine_oom:
            run.problem = f"not graded: {run.machine_oom}; grade it again when the machine has memory free"
        # only the rows are kept, and the pen-and-paper answers (of this chapter's exercises,
        # at most BY_HAND_CHARS each) wait in the spool: a class's results streams and answers
        # would not fit in memory
        return score(chapter, nb, run, sub.student, notes), None, spool_answers(sub, answers)

    def guarded(self, k, sub):
        """A notebook that trips the grader itself costs its student the points, never the
        class its grading run."""
        try:
            return self.run_student(k, sub)
        except Exception as exc:  # noqa: BLE001 - reported in the rows and the log
            why = f"not graded: the grader failed on this notebook ({type(exc).__name__}: {exc})"
            self.log(shown(f"{sub.student}/{sub.name}: {why}"))
            coding = self.chapters[sub.chapter].coding
            return [Row(sub.student, sub.chapter, e.label, 0.0, e.points, why) for e in coding], None, {}

    def run_all(self):
        """The instructor's notebooks, then every submission, ``jobs`` at a time (one sandbox
        slot each); returns what :meth:`run_student` returned per submission, in order."""
        slots = queue.Queue()
        for k in range(self.jobs):
            slots.put(k)

        def in_slot(fn, *args):
            k = slots.get()
            try:
                return fn(k, *args)
            finally:
                slots.put(k)

        with concurrent.futures.ThreadPoolExecutor(self.jobs) as pool:
            runnable = [c for c in self.used.values() if c.name not in self.broken]
            for c, problems in zip(runnable, pool.map(lambda c: in_slot(self.run_instructor, c), runnable)):
                if problems:
                    self.broken[c.name] = "its check_values are not usable: " + "; ".join(problems)
            if self.used and len(self.broken) == len(self.used):
                raise GradingError(
                    "the instructor's notebooks give no usable check_values, so nothing was graded:\n  "
                    + "\n  ".join(f"{name}: {why}" for name, why in self.broken.items())
                )
            for name, why in self.broken.items():
                self.log(f"WARNING: chapter {name} is not graded: {why}")
            self.t_students = time.monotonic()
            return list(pool.map(lambda s: in_slot(self.guarded, s), self.subs))

    # ------------------------------------------------------------------------- output

    def report(self, graded):
        """Collect the rows, re-hash what was trusted, write the output files."""
        rows, subs, chapters = self.rows, self.subs, self.chapters
        timing = {
            "setup": self.t_students - self.t0,
            "students": time.monotonic() - self.t_students,
            "notebooks": len(subs),
            "jobs": self.jobs,
        }
        by_hand = []
        for sub, (srows, _run, answers) in zip(subs, graded):
            answers = answers or {}
            rows += srows
            for part in chapters[sub.chapter].hand_parts:
                rows.append(
                    Row(sub.student, sub.chapter, part.label, None, part.points, "", "graded by hand: the answer is in by_hand.md")
                )
                by_hand.append((sub.student, sub.chapter, part, answers))
        # what changed while grading
        changed = []
        for sub in subs:
            now = rehash(self.folder, sub)
            if now != sub.sha256:
                changed.append(sub)
                for r in rows:
                    if (r.student, r.chapter) == (sub.student, sub.chapter):
                        r.notes = "; ".join(
                            filter(
                                None,
                                [r.notes, "the file changed while it was being graded; graded as it was read at the start"],
                            )
                        )
        trusted_after = source_hashes(chapters, reread=True)
        tampered = [k for k in self.trusted_before if self.trusted_before[k] != trusted_after.get(k)]
        flags = name_flags({r.student for r in rows if r.student})
        names = display_names({r.student for r in rows if r.student})
        for r in rows:
            if r.student in flags:
                r.notes = "; ".join(filter(None, [r.notes, flags[r.student]]))
            r.student = names.get(r.student, r.student)
        rows.sort(key=lambda r: (r.student, r.chapter, r.exercise))
        box = self.box
        text = summary(rows, len(subs), box.describe(), tampered, changed, timing, self.broken, flags)
        full = []
        files = {
            "grades.csv": grades_csv(rows, full),
            "summary.txt": text,
            "hashes.csv": hashes_csv(self.trusted_before, subs),
            "by_hand.md": by_hand_chunks([(names.get(st, st), *rest) for st, *rest in by_hand]),
        }
        files["exercises.csv"] = exercises_csv(exercise_stats(rows))
        for (student, chapter), page in feedback_pages(rows, by_hand, names):
            files[f"feedback/{student}/{chapter}.html"] = page
        if full:
            files[FULL_TEXT_FILE] = "".join(full)
        write_fresh(self.out_dir, files)
        isolation = {"uids": list(box.uids or []), "cgroups": [d for g in box.groups or () for d in g.dirs]}
        return Result(rows, text, tampered, timing, isolation, self.broken)


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
            Options(
                root=args.root,
                toc=args.toc,
                limits=limits,
                jobs=args.jobs,
                unsafe=args.unsafe_no_sandbox,
                uid_base=args.sandbox_uid_base,
                max_notebook_bytes=int(args.max_notebook_mb * 1e6),
                chapters_to_grade=[c for c in args.chapters.split(",") if c] if args.chapters else None,
            ),
            log=lambda line: print(line, file=sys.stderr, flush=True),
        )
    except GradingError as exc:
        print(f"grading stopped: {exc}", file=sys.stderr)
        return 2
    sys.stdout.write(result.text)
    print(f"wrote {pathlib.Path(args.out) / 'grades.csv'} ({len(result.rows)} rows)")
    return 1 if result.tampered or result.not_graded else 0


if __name__ == "__main__":
    sys.exit(main())
