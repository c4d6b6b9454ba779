"""Autograde submissions (``make grade SUBMISSIONS=<folder>``, ``python -m coursework.grade <folder>``).

Layout of the submissions folder: one sub-folder per student, holding that student's copies of
the student edition, named like the chapters::

    <folder>/<student>/<chapter>.ipynb        e.g. submissions/ada/05_laplace.ipynb

Each notebook is graded like nbgrader's ``autograde``: the check cells (and every other cell
with an nbgrader grade id that is not an answer) are taken from the instructor's source
notebook, whatever the submission holds in their place; a deleted answer cell is replaced by the
empty stub, a deleted check cell is put back after its answer; all of this is reported.  The
notebook then runs in a fresh kernel in its own process with a per-cell and a per-notebook time
limit and a cap on output; a check cell that runs without error earns its points.

Writes ``grades.csv`` (student, chapter, exercise, points, max_points, error, notes) and
``summary.txt`` to the output folder, and prints the summary.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import copy
import csv
import dataclasses
import os
import pathlib
import sys
import tempfile

import nbformat
from nbgrader.preprocessors import ClearSolutions

from . import book, runner

FIELDS = ["student", "chapter", "exercise", "points", "max_points", "error", "notes"]


@dataclasses.dataclass
class Row:
    student: str
    chapter: str
    exercise: str
    points: float
    max_points: float
    error: str = ""
    notes: str = ""


def _gid(cell):
    return book.nbgrader_meta(cell).get("grade_id")


def merge(source_nb, submitted_nb):
    """The notebook to run: the submission with its protected cells restored from the source.

    Returns ``(nb, notes)`` where ``notes`` maps an exercise label to a list of sentences about
    cells that were deleted, modified or duplicated in the submission.
    """
    exs = [e for e in book.exercises(source_nb) if e.coding]
    label_of = {}
    for e in exs:
        label_of[e.answer_id] = label_of[e.check_id] = e.label
    src_by_id = {_gid(c): c for c in source_nb.cells if _gid(c)}
    stub_nb, _ = ClearSolutions(enforce_metadata=False).preprocess(copy.deepcopy(source_nb), {})
    stubs = {_gid(c): c for c in stub_nb.cells if _gid(c)}
    notes = {}

    def note(gid, text):
        notes.setdefault(label_of.get(gid, gid), []).append(text)

    cells, seen = [], set()
    for cell in submitted_nb.cells:
        gid = _gid(cell)
        cell = copy.deepcopy(cell)
        if gid and gid in seen:
            cell.metadata.pop("nbgrader", None)
            note(gid, f"a second cell with grade id {gid} was ignored")
        elif gid and gid in src_by_id:
            seen.add(gid)
            src = src_by_id[gid]
            if cell.cell_type != src.cell_type:
                note(gid, f"cell {gid} changed type; restored from the source")
                cell = copy.deepcopy(src)
            elif not book.is_answer(src):
                if book.source(cell).strip() != book.source(src).strip():
                    note(gid, f"check cell {gid} was modified; graded with the original")
                cell = copy.deepcopy(src)
                cell.outputs = []
                cell.execution_count = None
        elif gid:
            cell.metadata.pop("nbgrader", None)   # unknown grade id: ordinary cell
        cells.append(cell)
    # put back what was deleted, right after the cell that precedes it in the source
    order = [_gid(c) for c in source_nb.cells if _gid(c)]
    for gid in order:
        if gid in seen:
            continue
        if book.is_answer(src_by_id[gid]):
            restored = copy.deepcopy(stubs[gid])
            note(gid, f"answer cell {gid} was deleted; the empty stub was graded")
        else:
            restored = copy.deepcopy(src_by_id[gid])
            note(gid, f"check cell {gid} was deleted; restored from the source")
        restored.outputs = []
        restored.execution_count = None
        pos = _position(source_nb, cells, gid)
        cells.insert(pos, restored)
        seen.add(gid)
    nb = nbformat.v4.new_notebook(cells=cells, metadata=copy.deepcopy(source_nb.metadata))
    return nb, notes


def _position(source_nb, cells, gid):
    """Where to put back the deleted cell ``gid``: after the nearest cell that precedes it in the
    source and is still in ``cells`` (matched by grade id, else by cell id); else at the end."""
    by_gid = {_gid(c): i for i, c in enumerate(cells) if _gid(c)}
    by_id = {c.get("id"): i for i, c in enumerate(cells) if c.get("id")}
    before = []
    for c in source_nb.cells:
        if _gid(c) == gid:
            break
        before.append(c)
    for c in reversed(before):
        if _gid(c) in by_gid:
            return by_gid[_gid(c)] + 1
        if c.get("id") in by_id:
            return by_id[c.get("id")] + 1
    return len(cells)


def grade_notebook(student_name, path, source_path, cell_timeout=60.0, notebook_timeout=600.0,
                   max_output_bytes=200_000, grace=60.0):
    """Grade one submitted notebook; return one :class:`Row` per coding exercise of the chapter."""
    chapter = pathlib.Path(path).stem
    source_nb = book.read(source_path)
    exs = [e for e in book.exercises(source_nb) if e.coding]
    rows = [Row(student_name, chapter, e.label, 0.0, e.points) for e in exs]
    try:
        submitted = nbformat.read(str(path), as_version=4)
        if not isinstance(submitted.get("cells"), list):
            raise ValueError("no cells")
    except Exception as exc:  # unreadable file: every exercise scores 0
        for r in rows:
            r.error = f"unreadable notebook: {runner._one_line(exc, 150)}"
        return rows
    nb, notes = merge(source_nb, submitted)
    with tempfile.TemporaryDirectory(prefix="cw-grade-") as tmp:
        merged = os.path.join(tmp, "submission.ipynb")
        nbformat.write(nb, merged)
        work = os.path.join(tmp, "work")
        os.mkdir(work)
        cells, problem = runner.run_isolated(merged, cell_timeout, notebook_timeout, max_output_bytes,
                                             workdir=work, grace=grace)
    index = {_gid(c): i for i, c in enumerate(nb.cells) if _gid(c)}
    for e, r in zip(exs, rows):
        r.notes = "; ".join(notes.get(e.label, []))
        chk = cells.get(index.get(e.check_id))
        ans = cells.get(index.get(e.answer_id))
        if chk is None:
            r.error = problem or "the check cell did not run"
            continue
        if chk["status"] == "ok":
            r.points = e.points
            continue
        if ans is not None and ans["status"] != "ok":
            err = ans["error"]
            r.error = ("unanswered (NotImplementedError)" if err.startswith("NotImplementedError")
                       else f"answer: {err}")
        elif chk["error"].startswith("NotImplementedError"):
            r.error = "unanswered (NotImplementedError)"
        else:
            r.error = f"check: {chk['error']}"
    return rows


def find_submissions(folder):
    """``(student, path)`` for every ``<folder>/<student>/<chapter>.ipynb``, sorted."""
    folder = pathlib.Path(folder)
    found = []
    for sdir in sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")):
        for nb in sorted(sdir.glob("*.ipynb")):
            found.append((sdir.name, nb))
    return found


def grade_folder(folder, out_dir, root=book.ROOT, toc="_toc.yml", cell_timeout=60.0,
                 notebook_timeout=600.0, max_output_bytes=200_000, jobs=None, grace=60.0):
    """Grade every submission in ``folder``; write grades.csv and summary.txt; return the rows."""
    chapters = {p.stem: p for p in book.toc_notebooks(root, toc)}
    subs = find_submissions(folder)
    rows = []
    jobs = jobs or max(1, min(4, os.cpu_count() or 1))
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        futures = []
        for name, path in subs:
            if path.stem not in chapters:
                rows.append(Row(name, path.stem, "", 0.0, 0.0,
                                f"not a chapter of the book (expected one of: {', '.join(chapters)})"))
                continue
            futures.append(pool.submit(grade_notebook, name, path, chapters[path.stem],
                                       cell_timeout, notebook_timeout, max_output_bytes, grace))
        for fut in futures:
            rows.extend(fut.result())
    rows.sort(key=lambda r: (r.student, r.chapter))
    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    with open(out_dir / "grades.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, FIELDS)
        w.writeheader()
        for r in rows:
            d = dataclasses.asdict(r)
            d["points"], d["max_points"] = f"{r.points:g}", f"{r.max_points:g}"
            w.writerow(d)
    text = summary(rows, len(subs))
    (out_dir / "summary.txt").write_text(text)
    return rows, text


def summary(rows, n_notebooks):
    students = sorted({r.student for r in rows})
    lines = [f"graded {n_notebooks} notebooks of {len(students)} students"]
    for s in students:
        mine = [r for r in rows if r.student == s]
        pts, mx = sum(r.points for r in mine), sum(r.max_points for r in mine)
        errs = sum(1 for r in mine if r.error)
        lines.append(f"  {s:<20} {pts:g} / {mx:g} points, {errs} exercise(s) with errors")
    ex = sorted({(r.chapter, r.exercise) for r in rows if r.exercise})
    if ex:
        lines.append("per exercise (mean points / max):")
        for ch, label in ex:
            mine = [r for r in rows if (r.chapter, r.exercise) == (ch, label)]
            mean = sum(r.points for r in mine) / len(mine)
            lines.append(f"  {ch + ' ' + label:<52} {mean:.2f} / {mine[0].max_points:g}")
    flagged = [r for r in rows if r.notes]
    if flagged:
        lines.append("cells deleted or modified by students:")
        for r in flagged:
            lines.append(f"  {r.student} {r.chapter} {r.exercise}: {r.notes}")
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("submissions")
    ap.add_argument("--out", default=str(book.ROOT / "_build" / "grades"))
    ap.add_argument("--root", default=str(book.ROOT), help="book root holding the toc and the instructor notebooks")
    ap.add_argument("--toc", default="_toc.yml")
    ap.add_argument("--cell-timeout", type=float, default=120.0, help="seconds per cell (default 120)")
    ap.add_argument("--notebook-timeout", type=float, default=600.0, help="seconds per notebook (default 600)")
    ap.add_argument("--max-output-bytes", type=int, default=200_000, help="output kept per cell")
    ap.add_argument("--jobs", type=int, default=None, help="notebooks graded at once")
    args = ap.parse_args(argv)
    if not pathlib.Path(args.submissions).is_dir():
        ap.error(f"not a folder: {args.submissions}")
    rows, text = grade_folder(args.submissions, args.out, args.root, args.toc, args.cell_timeout,
                              args.notebook_timeout, args.max_output_bytes, args.jobs)
    sys.stdout.write(text)
    print(f"wrote {pathlib.Path(args.out) / 'grades.csv'} ({len(rows)} rows)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
