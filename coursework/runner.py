"""Execute one notebook cell by cell in a fresh kernel and report each code cell's status.

Run as a separate process (``python -m coursework.runner NOTEBOOK RESULTS.jsonl ...``) so that
whatever the notebook does (loop, crash the kernel, print megabytes) the caller survives: the
caller applies a hard time limit to this process and reads the results written so far.  Each
line of RESULTS.jsonl is a JSON object: first ``{"kernel_pid": ...}``, then one
``{"index", "id", "grade_id", "status", "error"}`` per code cell (status ``ok``, ``error``,
``timeout``, ``skipped`` or ``dead``), flushed as soon as the cell has run.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import nbformat  # noqa: E402
from nbclient import NotebookClient  # noqa: E402
from nbclient.exceptions import CellTimeoutError, DeadKernelError  # noqa: E402

TRUNCATED = "\n[output truncated by the grader]\n"


def _one_line(text, limit=300):
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


class LimitedClient(NotebookClient):
    """A NotebookClient that keeps at most ``max_output_bytes`` of output per cell and records
    every execute_reply (so a timeout or an error is known even when no output says so)."""

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


def cell_status(client, cell, index):
    reply = client.replies.get(index)
    content = (reply or {}).get("content", {})
    if reply is None:
        return "timeout", "no reply from the kernel"
    if content.get("status") == "ok":
        return "ok", ""
    ename, evalue = content.get("ename", "Error"), content.get("evalue", "")
    if ename != "CellTimeoutError":   # the timeout's interrupt also prints a KeyboardInterrupt
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                ename, evalue = out.get("ename", ename), out.get("evalue", evalue)
    status = "timeout" if ename == "CellTimeoutError" else "error"
    return status, _one_line(f"{ename}: {evalue}" if evalue else ename)


def run(path, results, cell_timeout=60.0, notebook_timeout=600.0, max_output_bytes=200_000,
        workdir=None, executed=None):
    nb = nbformat.read(path, as_version=4)
    workdir = workdir or os.path.dirname(os.path.abspath(path))
    deadline = time.monotonic() + notebook_timeout
    client = LimitedClient(
        nb, timeout=int(cell_timeout), allow_errors=True, interrupt_on_timeout=True,
        error_on_timeout={"ename": "CellTimeoutError",
                          "evalue": f"the cell ran longer than {cell_timeout:g} s and was interrupted",
                          "traceback": []},
        kernel_name="python3", resources={"metadata": {"path": workdir}}, record_timing=False,
    )
    client.max_output_bytes = max_output_bytes
    with open(results, "a", buffering=1) as out:
        def emit(**rec):
            out.write(json.dumps(rec) + "\n")
            out.flush()

        with client.setup_kernel():
            kernel = getattr(client.km, "provisioner", None)
            pid = getattr(getattr(kernel, "process", None), "pid", None)
            emit(kernel_pid=pid)
            stop = None
            for index, cell in enumerate(nb.cells):
                if cell.cell_type != "code":
                    continue
                grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
                base = {"index": index, "id": cell.get("id"), "grade_id": grade_id}
                remaining = deadline - time.monotonic()
                if stop is None and remaining <= 0:
                    stop = ("skipped", f"not run: the notebook exceeded its time limit of {notebook_timeout:g} s")
                if stop is not None:
                    emit(**base, status=stop[0], error=stop[1])
                    continue
                client.timeout = max(1, int(min(cell_timeout, remaining)))
                try:
                    client.execute_cell(cell, index)
                except DeadKernelError:
                    emit(**base, status="dead", error="the kernel died (crashed or was killed)")
                    stop = ("dead", "not run: the kernel died in an earlier cell")
                    continue
                except CellTimeoutError:
                    emit(**base, status="timeout", error=f"the cell ran longer than {client.timeout} s")
                    continue
                status, error = cell_status(client, cell, index)
                emit(**base, status=status, error=error)
    if executed:
        nbformat.write(nb, executed)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("notebook")
    ap.add_argument("results")
    ap.add_argument("--cell-timeout", type=float, default=60.0)
    ap.add_argument("--notebook-timeout", type=float, default=600.0)
    ap.add_argument("--max-output-bytes", type=int, default=200_000)
    ap.add_argument("--workdir")
    ap.add_argument("--executed", help="also write the executed notebook here")
    args = ap.parse_args(argv)
    try:
        run(args.notebook, args.results, args.cell_timeout, args.notebook_timeout,
            args.max_output_bytes, args.workdir, args.executed)
    except Exception as exc:  # reported to the caller, never raised past it
        with open(args.results, "a") as out:
            out.write(json.dumps({"fatal": _one_line(f"{type(exc).__name__}: {exc}")}) + "\n")
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())


# ------------------------------------------------------------------------- the caller's side

def _kill(pid):
    import signal
    if not pid:
        return
    try:
        pgid = os.getpgid(pid)
        if pgid != os.getpgid(0):
            os.killpg(pgid, signal.SIGKILL)
        else:
            os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run_isolated(path, cell_timeout=60.0, notebook_timeout=600.0, max_output_bytes=200_000,
                 workdir=None, executed=None, grace=60.0):
    """Run ``path`` with :func:`run` in a child process; never raises for what the notebook does.

    Returns ``(cells, problem)``: ``cells`` maps a code cell's index to its result record,
    ``problem`` is ``None`` or a sentence saying why the run stopped early (hard time limit hit,
    worker failure).  The child and its kernel are killed when ``notebook_timeout + grace``
    seconds have passed.
    """
    import subprocess
    import tempfile

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with tempfile.TemporaryDirectory(prefix="cw-run-") as tmp:
        results = os.path.join(tmp, "results.jsonl")
        open(results, "w").close()
        env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""),
                   MPLBACKEND="Agg", PYTHONHASHSEED="0")
        cmd = [sys.executable, "-m", "coursework.runner", str(path), results,
               "--cell-timeout", str(cell_timeout), "--notebook-timeout", str(notebook_timeout),
               "--max-output-bytes", str(max_output_bytes), "--workdir", str(workdir or tmp)]
        if executed:
            cmd += ["--executed", str(executed)]
        proc = subprocess.Popen(cmd, env=env, cwd=str(workdir or tmp), stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        problem = None
        try:
            proc.wait(timeout=notebook_timeout + grace)
        except subprocess.TimeoutExpired:
            problem = f"stopped: the notebook exceeded its hard time limit of {notebook_timeout + grace:g} s"
        cells, kernel_pid = {}, None
        with open(results) as fh:
            for line in fh:
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                if "kernel_pid" in rec:
                    kernel_pid = rec["kernel_pid"]
                elif "fatal" in rec:
                    problem = problem or f"the grader could not run the notebook: {rec['fatal']}"
                else:
                    cells[rec["index"]] = rec
        if problem is not None or proc.returncode not in (0, None):
            problem = problem or f"the notebook runner exited with status {proc.returncode}"
        _kill(proc.pid)
        _kill(kernel_pid)
        proc.wait()
        return cells, problem
