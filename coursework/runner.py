"""Execute one notebook cell by cell in a fresh kernel and report each code cell as a JSON line.

``python -m coursework.runner NOTEBOOK --results-fd N [--check-cells 4,8] ...`` is what runs
inside the sandbox (:mod:`coursework.sandbox`), next to the kernel it starts.  It writes one
JSON object per line to the file descriptor ``N`` (a pipe that the grader reads with limits):

- ``{"kind": "start"}``;
- per code cell ``{"kind": "cell", "index", "status", "error"}`` with status ``ok``, ``error``,
  ``timeout``, ``skipped`` or ``dead``; for the cells listed in ``--check-cells`` that ran
  without error also ``"values"``: the JSON text of :func:`coursework.values.dumps` applied to
  ``check_values`` in the kernel, or ``"values_error"`` saying why there is none;
- ``{"kind": "end", "cells": <number of code cells>}`` when every cell has been reported, or
  ``{"kind": "fatal", "error": ...}`` when the runner itself failed.

The kernel cannot write to that pipe: the descriptor is not inherited by the kernel, and the
runner makes itself non-dumpable, so the kernel (same uid, no capabilities) can neither open
``/proc/<runner>/fd/N`` nor ptrace the runner.  It can kill the runner; the grader then sees a
stream without its ``end`` record and scores the notebook 0 (fail closed).  Before each check
cell the runner deletes ``check_values`` in the kernel, so a check cell that is skipped or
blanked cannot reuse an earlier exercise's values.
"""

from __future__ import annotations

import argparse
import ast
import copy
import json
import os
import subprocess
import sys
import time
from queue import Empty

import nbformat
from jupyter_core.utils import ensure_async, run_sync
from nbclient import NotebookClient
from nbclient.exceptions import CellTimeoutError, DeadKernelError

from . import book
from . import values as cw_values
from .signing import sign

TRUNCATED = "\n[output truncated by the grader]\n"
SILENT_TIMEOUT = 10.0  # seconds for the runner's own short requests to the kernel
INTERRUPT_GRACE = 15.0  # seconds a kernel has to answer again after a time-out's interrupt
VALUES_EXPR = "__import__('coursework.values', fromlist=['dumps']).dumps(check_values)"


def _one_line(text, limit=300):
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


class LimitedClient(NotebookClient):
    """A NotebookClient that keeps at most ``max_output_bytes`` of output per cell, records every
    execute_reply, and can send the runner's own silent requests to the kernel."""

    max_output_bytes = 200_000

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.replies, self._out_bytes, self._truncated = {}, {}, set()

    def output(self, outs, msg, display_id, cell_index):
        if msg["msg_type"] != "error":
            used = self._out_bytes.get(cell_index, 0) + len(json.dumps(msg.get("content", {})))
            self._out_bytes[cell_index] = used
            if used > self.max_output_bytes:
                if cell_index not in self._truncated:
                    self._truncated.add(cell_index)
                    outs.append(nbformat.v4.new_output("stream", name="stderr", text=TRUNCATED))
                return None
        return super().output(outs, msg, display_id, cell_index)

    async def _check_raise_for_error(self, cell, cell_index, exec_reply):
        self.replies[cell_index] = exec_reply
        return await super()._check_raise_for_error(cell, cell_index, exec_reply)

    async def async_silent(self, code, user_expressions=None, timeout=SILENT_TIMEOUT):
        """Run ``code`` silently (no history, no outputs kept); return the reply's content, or
        ``None`` when no reply came within ``timeout`` seconds.  Raises DeadKernelError."""
        msg_id = await ensure_async(
            self.kc.execute(
                code,
                silent=True,
                store_history=False,
                user_expressions=user_expressions or {},
                allow_stdin=False,
                stop_on_error=False,
            )
        )
        deadline = time.monotonic() + timeout
        while (remaining := deadline - time.monotonic()) > 0:
            try:
                msg = await ensure_async(self.kc.shell_channel.get_msg(timeout=min(remaining, 1.0)))
            except Empty:
                if not await ensure_async(self.kc.is_alive()):
                    raise DeadKernelError("Kernel died") from None
                continue
            if (msg.get("parent_header") or {}).get("msg_id") == msg_id:
                content = msg.get("content")
                return content if isinstance(content, dict) else {}
        return None

    silent = run_sync(async_silent)

    async def async_interrupt(self):
        await ensure_async(self.km.interrupt_kernel())

    interrupt = run_sync(async_interrupt)

    async def async_stop_kernel(self):
        await ensure_async(self.km.shutdown_kernel(now=True))

    stop_kernel = run_sync(async_stop_kernel)


STUCK = ("dead", "not run: the kernel ignored an interrupt and was stopped")


def recover(client, deadline, interrupt=True):
    """After a time-out: interrupt the kernel (unless nbclient just did) and wait until it answers
    again; a kernel that does not is stopped (``False``) rather than left to the hard limit."""
    if interrupt:
        client.interrupt()
    grace = max(1.0, min(INTERRUPT_GRACE, deadline - time.monotonic()))
    if client.silent("", timeout=grace) is not None:
        return True
    client.stop_kernel()
    return False


def cell_status(client, cell, index):
    reply = client.replies.get(index)
    content = (reply or {}).get("content", {})
    if reply is None:
        return "timeout", "no reply from the kernel"
    if content.get("status") == "ok":
        return "ok", ""
    ename, evalue = content.get("ename", "Error"), content.get("evalue", "")
    if ename != "CellTimeoutError":  # the timeout's interrupt also prints a KeyboardInterrupt
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                ename, evalue = out.get("ename", ename), out.get("evalue", evalue)
    status = "timeout" if ename == "CellTimeoutError" else "error"
    return status, _one_line(f"{ename}: {evalue}" if evalue else ename)


TOO_SLOW = "the kernel did not hand over check_values in time"


def fetch_values(client, timeout):
    """``(text, None)`` with the JSON text of ``check_values`` in the kernel, or ``(None, why)``."""
    content = client.silent("", {"v": VALUES_EXPR}, timeout=timeout)
    if content is None:
        return None, TOO_SLOW
    expr = (content.get("user_expressions") or {}) if isinstance(content, dict) else {}
    v = expr.get("v") if isinstance(expr, dict) else None
    if not isinstance(v, dict):
        return None, "the kernel returned no check_values"
    if v.get("status") != "ok":
        ename, evalue = v.get("ename", "Error"), v.get("evalue", "")
        if ename == "NameError":
            return None, "the check cell did not assign check_values"
        return None, _one_line(f"check_values could not be read: {ename}: {evalue}", 200)
    text = (v.get("data") or {}).get("text/plain") if isinstance(v.get("data"), dict) else None
    if not isinstance(text, str):
        return None, "the kernel returned no text for check_values"
    if len(text) > cw_values.MAX_TEXT:
        return None, f"check_values is too large (more than {cw_values.MAX_TEXT} characters of JSON)"
    return text, None


def split_check(source):
    r"""``(head, tail)`` of a check cell: its lines up to the end of the top-level statement that
    assigns ``check_values`` (the last one), and the lines after it (the assertions); ``None``
    when there is no such statement or the source is not plain Python.

    The runner reads ``check_values`` between the two.  A kernel that disables the assertions
    and, after the cell, swaps in the references they compared with (``expected`` in
    ``assert_allclose(check_values["g"], expected)``) would otherwise hand over the instructor's
    own values for any answer; read before the assertions run, there is nothing to swap in.

    >>> split_check('x = 1\ncheck_values = {\n    "t": f(x),\n}\nassert check_values["t"] > 0\n')
    ('x = 1\ncheck_values = {\n    "t": f(x),\n}\n', 'assert check_values["t"] > 0\n')
    >>> split_check("assert True") is None
    True
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    last = next((node for node in reversed(tree.body) if book.is_check_values_assignment(node)), None)
    if last is None:
        return None
    lines = source.splitlines(keepends=True)
    return "".join(lines[: last.end_lineno]), "".join(lines[last.end_lineno :])


def run_part(client, cell, index, source):
    """Execute ``source`` as (part of) the code cell ``cell``; return ``(status, error)``."""
    part = copy.deepcopy(cell)
    part.source, part.outputs = source, []
    client.execute_cell(part, index)
    cell.outputs = cell.outputs + list(part.outputs)
    client.nb.cells[index] = cell
    return cell_status(client, part, index)


def run(
    path,
    emit,
    cell_timeout=60.0,
    notebook_timeout=600.0,
    max_output_bytes=200_000,
    check_cells=(),
    executed=None,
    workdir=None,
    text=None,
):
    """Execute the notebook at ``path`` (or given as JSON ``text``, then ``path`` only names it)
    and call ``emit(record)`` for each record (see above)."""
    nb = nbformat.read(path, as_version=4) if text is None else nbformat.reads(text, as_version=4)
    workdir = workdir or os.path.dirname(os.path.abspath(path))
    deadline = time.monotonic() + notebook_timeout
    check_cells = set(check_cells)
    client = LimitedClient(
        nb,
        timeout=int(cell_timeout),
        allow_errors=True,
        interrupt_on_timeout=True,
        error_on_timeout={
            "ename": "CellTimeoutError",
            "evalue": f"the cell ran longer than {cell_timeout:g} s and was interrupted",
            "traceback": [],
        },
        kernel_name="python3",
        resources={"metadata": {"path": workdir}},
        record_timing=False,
        shutdown_kernel="immediate",
    )
    client.max_output_bytes = max_output_bytes
    n_code = sum(1 for c in nb.cells if c.cell_type == "code")
    # the kernel's own stdout/stderr go nowhere: it must not reach the runner's descriptors
    with client.setup_kernel(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL):
        emit({"kind": "start"})
        stop = None
        for index, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            base = {"kind": "cell", "index": index}
            remaining = deadline - time.monotonic()
            if stop is None and remaining <= 0:
                stop = ("skipped", f"not run: the notebook exceeded its time limit of {notebook_timeout:g} s")
            if stop is not None:
                emit({**base, "status": stop[0], "error": stop[1]})
                continue
            client.timeout = max(1, int(min(cell_timeout, remaining)))
            try:
                if index in check_cells:  # no check_values left over from an earlier cell
                    cleared = client.silent(
                        "check_values = None\ndel check_values", timeout=min(SILENT_TIMEOUT, remaining)
                    )
                    if cleared is None and not recover(client, deadline):
                        stop = STUCK
                        emit({**base, "status": stop[0], "error": stop[1]})
                        continue
                parts = split_check(book.source(cell)) if index in check_cells else None
                if parts is None:
                    parts = (book.source(cell), "")
                head, tail = parts
                cell.outputs = []
                status, error = run_part(client, cell, index, head)
                record = {**base, "status": status, "error": error}
                if index in check_cells and status == "ok":
                    # read right after the statement that assigns check_values, before the
                    # assertions that follow it compute their references in this kernel
                    text, why = fetch_values(
                        client, max(1.0, min(SILENT_TIMEOUT, deadline - time.monotonic()))
                    )
                    if why is None:
                        record["values"] = text
                    else:
                        record["values_error"] = why
                    if why == TOO_SLOW and not recover(client, deadline):
                        stop = STUCK
                    elif tail.strip():
                        client.timeout = max(1, int(min(cell_timeout, deadline - time.monotonic())))
                        status, error = run_part(client, cell, index, tail)
                        record.update(status=status, error=error)
                if status == "timeout" and not recover(client, deadline, interrupt=False):
                    stop = STUCK  # the kernel ignores interrupts: do not wait for the hard limit
            except DeadKernelError:
                record = {**base, "status": "dead", "error": "the kernel died (crashed or was killed)"}
                stop = ("dead", "not run: the kernel died in an earlier cell")
            except CellTimeoutError:
                record = {
                    **base,
                    "status": "timeout",
                    "error": f"the cell ran longer than {client.timeout} s",
                }
            emit(record)
        emit({"kind": "end", "cells": n_code})
    if executed:
        nbformat.write(nb, executed)


def read_key(fd):
    """The signing key: everything the grader wrote to the pipe ``fd`` (then closed)."""
    chunks = []
    while chunk := os.read(fd, 4096):
        chunks.append(chunk)
    os.close(fd)
    key = b"".join(chunks)
    if len(key) < 16:
        raise ValueError("no signing key on the key pipe")
    return key


def _write_all(fh, data):
    view = memoryview(data)
    while view:
        view = view[fh.write(view) :]


def _make_undumpable():
    """prctl(PR_SET_DUMPABLE, 0): processes of the same uid (the kernel) can no longer open this
    process's /proc files (its file descriptors among them) or ptrace it."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(4, 0, 0, 0, 0) != 0:  # PR_SET_DUMPABLE = 4
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE, 0) failed")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("notebook")
    ap.add_argument("--results-fd", type=int, required=True)
    ap.add_argument(
        "--notebook-fd",
        type=int,
        help="read the notebook from this descriptor: no file the kernel could read holds it",
    )
    ap.add_argument("--key-fd", type=int, required=True, help="pipe holding the key that signs the results")
    ap.add_argument("--check-cells", default="", help="comma-separated indices of the check cells")
    ap.add_argument("--cell-timeout", type=float, default=60.0)
    ap.add_argument("--notebook-timeout", type=float, default=600.0)
    ap.add_argument("--max-output-bytes", type=int, default=200_000)
    ap.add_argument("--executed", help="also write the executed notebook here (local runs only)")
    args = ap.parse_args(argv)
    _make_undumpable()  # before the key is read, before any kernel exists
    key = read_key(args.key_fd)
    notebook = None
    if args.notebook_fd is not None:
        with os.fdopen(args.notebook_fd, "rb") as fh:
            notebook = fh.read().decode("utf-8")
    os.set_inheritable(args.results_fd, False)
    out = os.fdopen(args.results_fd, "wb", buffering=0)
    seq = iter(range(1 << 62))

    def emit(record):
        text = json.dumps(record).encode()
        _write_all(out, sign(key, next(seq), text).encode() + b" " + text + b"\n")

    try:
        checks = [int(x) for x in args.check_cells.split(",") if x]
        run(
            args.notebook,
            emit,
            args.cell_timeout,
            args.notebook_timeout,
            args.max_output_bytes,
            checks,
            args.executed,
            text=notebook,
        )
    except Exception as exc:  # reported to the grader, never raised past it
        try:
            emit({"kind": "fatal", "error": _one_line(f"{type(exc).__name__}: {exc}")})
        except OSError:
            pass
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
