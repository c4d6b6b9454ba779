"""The notebook that runs: a submission merged with the instructor's chapter as nbgrader's
``autograde`` does (protected cells restored, deleted cells put back), the runner's arguments,
and the pen-and-paper answers a submission holds."""

from __future__ import annotations

import copy

import nbformat

from . import book
from .common import BY_HAND_CHARS, grade_id


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
        submitted = [(c.cell_type, book.source(c), grade_id(c)) for c in submitted.cells]
    exs = book.exercises(source_nb)
    label_of = {}
    for e in exs:
        label_of[e.answer_id] = label_of[e.check_id] = label_of[e.written_id] = e.label
    src_by_id = {grade_id(c): c for c in source_nb.cells if grade_id(c)}
    # what the student edition holds: answers as stubs, check cells without their hidden tests
    # (nbgrader imported here: it takes seconds, and the grader's command line must be able to
    # refuse to start, without bubblewrap, before any such work)
    from nbgrader.preprocessors import ClearHiddenTests, ClearSolutions

    stub_nb, _ = ClearSolutions(enforce_metadata=False).preprocess(copy.deepcopy(source_nb), {})
    stub_nb, _ = ClearHiddenTests(enforce_metadata=False).preprocess(stub_nb, {})
    stubs = {grade_id(c): c for c in stub_nb.cells if grade_id(c)}
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
                if src_text.strip() not in (book.source(src).strip(), book.source(stubs[gid]).strip()):
                    note(gid, f"check cell {gid} was modified; graded with the original")
                cells.append(restored(src))  # with its hidden tests
        else:
            cells.append(_new_cell(cell_type, src_text))  # unknown grade id: an ordinary cell
    # put back what was deleted, right after the cell that precedes it in the source
    for gid in [grade_id(c) for c in source_nb.cells if grade_id(c)]:
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
    by_gid = {grade_id(c): i for i, c in enumerate(cells) if grade_id(c)}
    before = []
    for c in source_nb.cells:
        if grade_id(c) == gid:
            break
        before.append(c)
    for c in reversed(before):
        if grade_id(c) in by_gid:
            return by_gid[grade_id(c)] + 1
    return len(cells)


def check_indices(nb):
    return {grade_id(c): i for i, c in enumerate(nb.cells) if grade_id(c)}


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


def by_hand_answers(chapter, cells):
    """``{grade id: text}`` of the answers graded by hand of ``chapter`` (pen-and-paper
    exercises and written parts) among a submission's ``cells`` (the first cell of each grade
    id, as :func:`merge` takes it; at most ``BY_HAND_CHARS`` + 1 characters): only the chapter's
    own answer cells, however many markdown cells with grade ids a student adds."""
    wanted = {p.answer_id for p in chapter.hand_parts}
    answers = {}
    for ct, src, gid in cells:
        if ct == "markdown" and gid in wanted and gid not in answers:
            answers[gid] = src[: BY_HAND_CHARS + 1]
    return answers
