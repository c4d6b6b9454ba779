"""The sandbox each graded notebook runs in (bubblewrap), and the one-way channel out of it.

One notebook = one sandbox = one :func:`Sandbox.execute` call.  Inside, :mod:`coursework.runner`
starts a fresh kernel and runs the notebook; the grader reads the runner's results from a pipe.

What the notebook's code (the kernel, and everything it starts) gets:

- an unprivileged identity: when the grader runs as root, the sandbox runs as a host uid of its
  own (one per parallel job, so the process limit of one job does not couple with another's;
  claimed from ``uid_base`` up with a lock file, so that two graders on one machine never
  share one and never kill each other's notebooks) inside a new user namespace where it is uid
  65534, with no capabilities, ``no_new_privs``, and no way to create further user
  namespaces; when the grader runs as an ordinary user, bubblewrap maps that user to 65534 in
  a new user namespace;
- new mount, PID, network (loopback only), IPC and UTS namespaces;
- a file system made of read-only binds of only what the kernel needs: ``/usr`` (and the
  ``/lib``, ``/bin`` links), the Python installation, the virtual environment, and the
  ``blrlib`` and ``coursework`` packages; a size-limited tmpfs as its working directory
  (``/home/student``) holding only its notebook, and another as ``/tmp``; no book, no other
  submission, no grades, no instructor file, no ``/sys``, a minimal ``/dev``;
- resource limits per process: address space, CPU seconds, file size, open files, and the
  number of processes (threads included) of its uid;
- a seccomp filter (:func:`seccomp_filter`, handed to bubblewrap's ``--seccomp``) that refuses
  ``io_setup`` and ``io_uring_setup`` (asynchronous I/O contexts are a machine-wide resource,
  ``fs.aio-max-nr``: one notebook took all 65,536) and every system call of another ABI (x32,
  i386) whose numbers the filter would not know;
- the first choice of the machine's OOM killer: every process of the sandbox has
  ``oom_score_adj`` 1000, while the grader protects itself (:func:`protect_from_oom`);
- a control group per parallel job when the grader is root (:mod:`coursework.cgroup`): a
  memory limit for the whole notebook, which the per-process limits are not (memory in files
  of a memfd or tmpfs, shared memory, inodes), and one share of the CPU whatever its number of
  threads, so that a notebook cannot starve those graded beside it into their time limits;
- an end: when the runner exits, or when the grader's hard time limit kills the sandbox's first
  process, the kernel ends the whole PID namespace, so no process (``setsid``, double fork)
  survives the notebook; the grader then also kills anything still running under the slot's uid.

The results channel: the runner writes JSON lines to a pipe; each line carries an HMAC-SHA256
of its sequence number and text under a random key that the runner read from another pipe
before any kernel existed.  The runner is non-dumpable, so the kernel (same uid, no
capabilities) cannot read the key; a line it injects, drops, reorders or cuts fails the check,
and the grader then scores the whole notebook 0.  The grader reads at most ``max_stream_bytes``.

How, when the grader is root: ``prlimit`` sets the limits, then ``bwrap`` (as root, so it can
bind paths only root can read, such as a Python installed under /root) makes the mount, PID,
network, IPC and UTS namespaces and the file system; inside, ``setpriv`` drops to the slot's
uid with no capabilities and ``no_new_privs``, and a second, unprivileged ``bwrap`` makes the
user namespace (``--disable-userns``) and starts the runner.  The first process of the PID
namespace is bubblewrap's own, still root, which the notebook can neither signal nor trace.
When the grader is not root, one unprivileged ``bwrap`` does it all.

``Sandbox(unsafe=True)`` (``--unsafe-no-sandbox``) runs the runner as a plain child process of
the grader instead, with the same limits (and control group) but none of the isolation.
"""

from __future__ import annotations

import dataclasses
import fcntl
import functools
import importlib.util
import json
import os
import pathlib
import pwd
import secrets
import selectors
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time

from . import cgroup
from .signing import sign, verify  # noqa: F401 - sign: the runner's, verify: the results stream

WORK = "/home/student"  # the notebook's working directory inside the sandbox
SANDBOX_UID = 65534  # the notebook's uid as it sees it (nobody)
DEFAULT_UID_BASE = 64000  # host uids used for the sandboxes when the grader is root
KEY_BYTES = 32
# bubblewrap's user namespace for the notebook: uid and gid 65534, no further namespaces
_OWN_USERNS = ("--unshare-user", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID), "--disable-userns")
END_GRACE = 10.0  # seconds a sandbox has to exit after its runner's last record


class SandboxUnavailable(RuntimeError):
    """The sandbox cannot be set up on this machine; grading must not go on without it."""


@dataclasses.dataclass(frozen=True)
class Limits:
    """Per-notebook limits.  ``memory_bytes``, ``cpu_seconds`` and ``file_bytes`` apply to each
    process; ``processes`` to all processes and threads of the sandbox's uid together;
    ``disk_bytes`` is the size of each of the two writable tmpfs (work directory and /tmp);
    ``notebook_memory_bytes`` bounds all the memory the notebook's processes hold together,
    kernel memory and tmpfs files included (a control group, :mod:`coursework.cgroup`)."""

    cell_timeout: float = 120.0
    notebook_timeout: float = 600.0
    grace: float = 30.0  # hard limit = notebook_timeout + grace, then killed
    max_output_bytes: int = 200_000  # output kept per cell by the runner
    max_stream_bytes: int = 32_000_000
    memory_bytes: int = 4 << 30
    file_bytes: int = 64 << 20
    disk_bytes: int = 128 << 20
    processes: int = 128
    open_files: int = 1024
    notebook_memory_bytes: int = 4 << 30

    @property
    def cpu_seconds(self):
        return int(self.notebook_timeout + self.grace) + 1


@dataclasses.dataclass
class Run:
    """What came out of one sandboxed notebook: the verified records, in order, ``problem``
    (``None``, or a sentence saying why the stream cannot be trusted or is incomplete), and
    ``memory`` (``None``, or a sentence saying that its control group's OOM killer acted)."""

    records: list
    problem: str | None
    seconds: float
    stderr: str = ""
    memory: str | None = None  # a sentence when the notebook went over its memory limit
    machine_oom: str | None = None  # a sentence when the machine's OOM killer hit it, not its limit


def _package_dir(name):
    """The folder of the package ``name``, found without importing it (importing blrlib takes
    seconds, and the grader needs only the path)."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.origin:
        raise ModuleNotFoundError(f"package {name!r} not found")
    return os.path.dirname(os.path.realpath(spec.origin))


def missing_tool(root=None):
    """The first program the sandbox needs that is not installed (``bwrap``, ``prlimit`` and,
    when the grader runs as root, ``setpriv``), as the sentence the grader stops with; None
    when all are there.  Cheap, so that the grader can refuse before any other work."""
    root = os.geteuid() == 0 if root is None else root
    for tool in ("bwrap", "prlimit") + (("setpriv",) if root else ()):
        if shutil.which(tool) is None:
            return (
                f"'{tool}' is not installed, so notebooks cannot be sandboxed "
                "(Debian/Ubuntu: apt-get install bubblewrap util-linux). To grade anyway, "
                "without any protection from the submissions, pass --unsafe-no-sandbox."
            )
    return None


def _under(path, parent):
    return path == parent or path.startswith(parent.rstrip("/") + "/")


def read_only_paths():
    """Host paths the sandbox binds read-only (each at the same path inside): the Python
    installation, the virtual environment, blrlib and coursework (when they live elsewhere)."""
    wanted = [
        os.path.realpath(sys.base_prefix),
        sys.prefix,
        os.path.realpath(sys.prefix),
        _package_dir("coursework"),
        _package_dir("blrlib"),
    ]
    paths = []
    for p in wanted:
        if _under(p, "/usr") or p in paths:
            continue
        paths.append(p)
    # drop paths inside another bound path (e.g. a non-editable blrlib inside the venv)
    return [p for p in paths if not any(q != p and _under(p, q) for q in paths)]


def _system_mounts():
    args = ["--ro-bind", "/usr", "/usr"]
    for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        path = "/" + name
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    for path in ("/etc/ld.so.cache", "/etc/localtime"):
        if os.path.exists(path):
            args += ["--ro-bind", path, path]
    return args


def _mounts(limits, seeds=()):
    """bubblewrap's arguments for the file system; ``seeds`` are ``(fd, path)`` of files copied
    into the sandbox's /tmp (the matplotlib font cache).  The notebook itself is no file in
    there: the runner reads it from a descriptor, so the kernel cannot read the check cells'
    code ahead of their turn."""
    # The private /tmp and work directory come first: a later tmpfs would hide the environment
    # when it lives under /tmp (a CI checkout in /tmp/..., say), as a bind under it is mounted
    # before the tmpfs covers it.
    args = _system_mounts() + [
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--perms",
        "1777",
        "--size",
        str(limits.disk_bytes),
        "--tmpfs",
        "/tmp",
        "--perms",
        "1777",
        "--size",
        str(limits.disk_bytes),
        "--tmpfs",
        WORK,
    ]
    made = {"/tmp", WORK}
    for path in read_only_paths():
        parents = pathlib.PurePosixPath(path).parents
        for parent in sorted((str(p) for p in parents if str(p) != "/"), key=len):
            if parent not in made and not _under(parent, "/usr"):
                made.add(parent)
                args += ["--perms", "0755", "--dir", parent]
        args += ["--ro-bind", path, path]
    for folder in sorted({os.path.dirname(path) for _, path in seeds}):
        args += ["--perms", "1777", "--dir", folder]
    for fd, path in seeds:
        args += ["--perms", "0644", "--file", str(fd), path]
    args += ["--remount-ro", "/", "--chdir", WORK]
    return args


@functools.lru_cache(maxsize=1)
def font_cache():
    """matplotlib's font list, built once per grader process on the host with the grader's own
    environment.  A new kernel with an empty cache folder spends several seconds scanning the
    fonts (about 3 s, 15 s on a busy machine), so every sandbox gets a copy in /tmp/matplotlib."""
    import importlib.util

    if importlib.util.find_spec("matplotlib") is None:
        return {}
    with tempfile.TemporaryDirectory(prefix="cw-mpl-") as folder:
        env = dict(sandbox_env(), MPLCONFIGDIR=folder, HOME=folder, TMPDIR=folder)
        try:
            subprocess.run(
                [sys.executable, "-I", "-c", "import matplotlib.font_manager"],
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=600,
                check=False,
            )
        except (OSError, subprocess.SubprocessError):
            return {}
        return {p.name: p.read_bytes() for p in pathlib.Path(folder).glob("fontlist-*.json")}


def sandbox_env(threads=1, home=WORK, tmp="/tmp"):
    """The whole environment of the runner and the kernel (nothing is inherited); ``threads``
    is the number of BLAS/OpenMP threads a notebook may use."""
    threads = str(threads)
    return {
        "PATH": f"{os.path.dirname(sys.executable)}:/usr/local/bin:/usr/bin:/bin",
        "HOME": home,
        "USER": "student",
        "LOGNAME": "student",
        "LANG": "C.UTF-8",
        "TMPDIR": tmp,
        "MPLBACKEND": "Agg",
        "MPLCONFIGDIR": f"{tmp}/matplotlib",
        "IPYTHONDIR": f"{tmp}/ipython",
        "JUPYTER_RUNTIME_DIR": f"{tmp}/jupyter-runtime",
        "JUPYTER_CONFIG_DIR": f"{tmp}/jupyter-config",
        "JUPYTER_PLATFORM_DIRS": "1",
        "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYDEVD_DISABLE_FILE_VALIDATION": "1",
        "OPENBLAS_NUM_THREADS": threads,
        "OMP_NUM_THREADS": threads,
        "MKL_NUM_THREADS": threads,
    }


def _prlimit(limits, processes):
    return [
        "prlimit",
        f"--as={limits.memory_bytes}",
        f"--cpu={limits.cpu_seconds}",
        f"--fsize={limits.file_bytes}",
        f"--nproc={processes}",
        f"--nofile={limits.open_files}",
        "--core=0",
        "--",
    ]


def _uid_processes(uid):
    """Host pids whose real uid is ``uid``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status") as fh:
                for line in fh:
                    if line.startswith("Uid:"):
                        if int(line.split()[1]) == uid:
                            found.append(int(entry))
                        break
        except (OSError, ValueError):
            continue
    return found


def kill_uid(uid):
    """SIGKILL every process of ``uid`` (only ever a sandbox uid); return how many there were."""
    pids = _uid_processes(uid)
    for pid in pids:
        try:
            fd = os.pidfd_open(pid)
        except OSError:
            continue
        try:
            if pid in _uid_processes(uid):  # still the same process and uid (pidfd pins it)
                signal.pidfd_send_signal(fd, signal.SIGKILL)
        except OSError:
            pass
        finally:
            os.close(fd)
    return len(pids)


# ----------------------------------------------------------------------------- seccomp

# classic BPF (linux/filter.h, linux/seccomp.h); a program is an array of struct sock_filter
_LD_W_ABS, _JEQ_K, _JGE_K, _RET_K = 0x20, 0x15, 0x35, 0x06
_RET_ALLOW, _RET_ERRNO = 0x7FFF0000, 0x00050000
_ENOSYS = 38
# architecture: (AUDIT_ARCH_*, {blocked name: number}); numbers from the kernel's syscall tables
SECCOMP_ARCHES = {
    "x86_64": (0xC000003E, {"io_setup": 206, "io_uring_setup": 425}),
    "aarch64": (0xC00000B7, {"io_setup": 0, "io_uring_setup": 425}),
}
X32_BIT = 0x40000000  # x86_64's x32 ABI: the same arch, numbers with this bit


def _insn(code, jt, jf, k):
    import struct

    return struct.pack("=HBBI", code, jt, jf, k)


def seccomp_filter(machine=None):
    """The seccomp program (bytes of ``struct sock_filter``) bubblewrap loads into the sandbox,
    or ``None`` on an architecture it does not know: a system call of another ABI (i386, x32)
    and ``io_setup`` / ``io_uring_setup`` fail with ENOSYS (so libraries fall back to ordinary
    I/O), everything else is allowed.  Built here, without libseccomp.

    >>> len(seccomp_filter("x86_64")) // 8, seccomp_filter("sparc") is None
    (8, True)
    """
    arch = SECCOMP_ARCHES.get(machine or os.uname().machine)
    if arch is None:
        return None
    audit, numbers = arch
    deny = _RET_ERRNO | _ENOSYS
    blocked = sorted(numbers.values())
    n = len(blocked)
    # 0 load arch; 1 other arch -> deny; 2 load nr; 3 x32 -> deny; 4.. blocked -> deny; allow; deny
    prog = [_insn(_LD_W_ABS, 0, 0, 4), _insn(_JEQ_K, 0, n + 3, audit), _insn(_LD_W_ABS, 0, 0, 0)]
    prog.append(_insn(_JGE_K, n + 1, 0, X32_BIT))
    for i, nr in enumerate(blocked):
        prog.append(_insn(_JEQ_K, n - i, 0, nr))
    prog += [_insn(_RET_K, 0, 0, _RET_ALLOW), _insn(_RET_K, 0, 0, deny)]
    return b"".join(prog)


# The sandbox's first process makes itself (and so everything it starts) the OOM killer's first
# choice; raising one's own oom_score_adj needs no privilege.
OOM_FIRST = ["/bin/sh", "-c", 'echo 1000 > /proc/self/oom_score_adj || exit 125; exec "$@"', "cw-oom"]
GRADER_OOM_SCORE_ADJ = -900


def protect_from_oom(value=GRADER_OOM_SCORE_ADJ):
    """Make this process (the grader) the OOM killer's last choice; returns the previous value
    (to restore), or ``None`` when it cannot (not root: lowering needs CAP_SYS_RESOURCE)."""
    try:
        with open("/proc/self/oom_score_adj") as fh:
            old = fh.read().strip()
        with open("/proc/self/oom_score_adj", "w") as fh:
            fh.write(str(value))
        return old
    except OSError:
        return None


def restore_oom(old):
    if old is not None:
        try:
            with open("/proc/self/oom_score_adj", "w") as fh:
                fh.write(old)
        except OSError:
            pass


UID_SEARCH = 4096  # how far above uid_base to look for uids no other grader holds


def _lock_dir():
    """A folder only root can write, for the uid locks of concurrent graders."""
    for base in ("/run", "/var/lock", tempfile.gettempdir()):
        if not os.path.isdir(base):
            continue
        path = os.path.join(base, "coursework-grade-uids")
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
        except OSError:
            continue
        st = os.lstat(path)
        if stat.S_ISDIR(st.st_mode) and st.st_uid == 0 and not st.st_mode & 0o022:
            return path
    raise SandboxUnavailable("no folder for the sandbox uid locks (/run, /var/lock or the temp folder)")


def claim_uids(n, base):
    """``(uids, lock_fds)``: ``n`` host uids from ``base`` up that no account uses, no process
    runs as, and no other grader on this machine holds (an exclusive lock file per uid, kept
    until the fds are closed).  Two graders (or a grader and the test suite) running at once
    thus never share a uid, so neither kills the other's notebooks nor eats its process limit."""
    folder = _lock_dir()
    uids, fds = [], []
    for uid in range(base, base + UID_SEARCH):
        if len(uids) == n:
            break
        try:
            pwd.getpwuid(uid)
            continue  # an account's uid
        except KeyError:
            pass
        fd = os.open(
            os.path.join(folder, str(uid)), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600
        )
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue  # another grader's
        if _uid_processes(uid):  # not ours, not a grader's: leave it alone
            os.close(fd)
            continue
        uids.append(uid)
        fds.append(fd)
    if len(uids) < n:
        for fd in fds:
            os.close(fd)
        raise SandboxUnavailable(
            f"found only {len(uids)} free sandbox uids from {base} to {base + UID_SEARCH - 1}; "
            "choose others with --sandbox-uid-base"
        )
    return uids, fds


def _ranges(numbers):
    out, numbers = [], sorted(numbers)
    for x in numbers:
        if out and x == out[-1][1] + 1:
            out[-1][1] = x
        else:
            out.append([x, x])
    return ", ".join(f"{a}" if a == b else f"{a}..{b}" for a, b in out)


class Sandbox:
    """Runs notebooks with :mod:`coursework.runner`, each in its own bubblewrap sandbox.

    ``slots`` is the number of notebooks run at once.  When the grader is root, slot ``k`` runs
    as a host uid of its own, the ``k``-th free one from ``uid_base`` up (:func:`claim_uids`),
    and in a control group of its own (:mod:`coursework.cgroup`).  ``unsafe=True`` runs
    without a sandbox.  :meth:`check` sets it up and tests it; :meth:`close` (or leaving a
    ``with`` block) gives the uids and control groups back.
    """

    def __init__(self, unsafe=False, slots=1, uid_base=DEFAULT_UID_BASE, limits=Limits()):
        self.unsafe, self.slots, self.uid_base, self.limits = unsafe, slots, uid_base, limits
        self.root = os.geteuid() == 0
        self.seeds = None  # file name -> bytes, copied into each sandbox's /tmp/matplotlib
        # the cores shared among the notebooks that run at once (BLAS threads of each kernel)
        self.threads = max(1, (os.cpu_count() or 1) // max(1, slots))
        self.uids, self._locks = None, []
        self.groups, self.groups_problem = None, "not set up"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):  # a safety net for callers without ``with``
        try:
            self.close()
        except Exception:  # noqa: BLE001 - at interpreter exit modules may be gone
            pass

    def close(self):
        """Remove the control groups (killing what is left in them) and release the uids."""
        for group in self.groups or ():
            group.remove()
        self.groups, self.groups_problem = None, "closed"
        for fd in self._locks:
            os.close(fd)
        self._locks, self.uids = [], None

    def uid(self, slot):
        if self.uids is None:
            self._claim()
        return self.uids[slot]

    def _claim(self):
        if self.root and self.uids is None:
            self.uids, self._locks = claim_uids(self.slots, self.uid_base)

    def _open_groups(self):
        if self.groups is not None or self.groups_problem == "closed":
            return
        try:
            self.groups = cgroup.open_slots(self.slots, self.limits.notebook_memory_bytes)
            self.groups_problem = None
        except cgroup.Unavailable as exc:
            self.groups, self.groups_problem = [], str(exc)

    # ------------------------------------------------------------------ setup and self-test
    def memory_text(self):
        """How the memory of a whole notebook is bounded, in a sentence."""
        if self.groups:
            return (
                f"{self.limits.notebook_memory_bytes >> 20} MiB per notebook (all its processes, "
                "kernel memory and tmpfs included; a control group per slot, which also shares "
                "the CPU fairly between slots)"
            )
        return (
            "NOT bounded per notebook, only per process (no control group: "
            f"{self.groups_problem}); a notebook can fill the machine's memory with files in "
            "memory or shared memory, and take CPU from the notebooks graded beside it"
        )

    @staticmethod
    def seccomp_text():
        if seccomp_filter() is None:
            return f"asynchronous I/O NOT blocked (no seccomp filter for {os.uname().machine})"
        return "io_setup and io_uring_setup blocked (seccomp)"

    def describe(self):
        lim = self.limits
        if self.unsafe:
            return (
                "NO SANDBOX (--unsafe-no-sandbox): notebooks ran with the grader's permissions "
                f"(uid {os.geteuid()}{', root' if self.root else ''}), could read and change "
                "every file the grader can, reach the network and leave processes running; "
                f"memory {self.memory_text()}"
            )
        who = f"host uids {_ranges(self.uids)}" if self.root and self.uids else f"the grader's uid {os.geteuid()}"
        return (
            f"bubblewrap sandbox: uid {SANDBOX_UID} in new user/mount/PID/network namespaces "
            f"({who}); limits per process {lim.memory_bytes >> 20} MiB memory, "
            f"{lim.cpu_seconds} s CPU, {lim.file_bytes >> 20} MiB per file; "
            f"{lim.processes} processes; 2 x {lim.disk_bytes >> 20} MiB writable; "
            f"{self.seccomp_text()}; memory {self.memory_text()}"
        )

    def check(self, hidden=()):
        """Set the sandbox up (uids, control groups) and make sure it works here and hides the
        host paths ``hidden`` (the book, the submissions, the grades); raise
        :class:`SandboxUnavailable` if not."""
        self._open_groups()
        if self.unsafe:
            return
        missing = missing_tool(self.root)
        if missing:
            raise SandboxUnavailable(missing)
        self._claim()
        hidden = [os.path.realpath(p) for p in hidden]
        run = self.execute(b"{}", "probe.ipynb", timeout=60, slot=0, probe=hidden)
        rec = run.records[1] if len(run.records) > 1 else {}
        binds = read_only_paths()
        allowed = {
            p: sorted(
                {pathlib.PurePosixPath(b).relative_to(p).parts[0] for b in binds if _under(b, p) and b != p}
            )
            for p in hidden
        }
        seen = rec.get("seen") if isinstance(rec.get("seen"), dict) else {}
        leaks = []
        for p in hidden:
            shown = seen.get(p)
            if shown is False or (isinstance(shown, list) and allowed[p] and set(shown) <= set(allowed[p])):
                continue  # absent, or only the parent of bound paths, showing just those
            leaks.append(p)
        want = {"uid": SANDBOX_UID, "caps": 0, "writable": []}
        got = {k: rec.get(k) for k in want}
        if run.problem or got != want or leaks:
            detail = run.problem or (
                f"the probe saw {got}, expected {want}"
                if got != want
                else f"these host paths are visible inside: {leaks}"
            )
            hint = (
                ""
                if not run.problem
                else " User namespaces must be allowed (sysctl "
                "user.max_user_namespaces > 0; on Ubuntu also "
                "kernel.apparmor_restrict_unprivileged_userns=0)."
            )
            said = run.stderr.strip()[-500:]
            raise SandboxUnavailable(
                f"the sandbox does not work here: {detail}"
                + (f"; bubblewrap said: {said}" if said else "")
                + "."
                + hint
                + " To grade anyway, without any protection from the submissions, pass "
                "--unsafe-no-sandbox."
            )

    # ------------------------------------------------------------------ one notebook
    def command(self, name, runner_args, fds, slot, workdir=None, seeds=(), seccomp_fd=None):
        """The argv that runs the runner (fds: results, key, info, notebook; ``seeds`` are
        ``(fd, path)`` of files to put into the sandbox; ``seccomp_fd`` holds the program of
        :func:`seccomp_filter`)."""
        res_fd, key_fd, info_fd, nb_fd = fds
        py = [
            sys.executable,
            "-I",
            "-m",
            "coursework.runner",
            f"{workdir or WORK}/{name}",
            "--notebook-fd",
            str(nb_fd),
            "--results-fd",
            str(res_fd),
            "--key-fd",
            str(key_fd),
        ] + list(runner_args)
        if self.unsafe:
            return _prlimit(self.limits, self.limits.processes + _count_own()) + py
        common = [
            "--unshare-pid",
            "--unshare-net",
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-cgroup-try",
            "--die-with-parent",
            "--new-session",
            "--info-fd",
            str(info_fd),
            "--clearenv",
        ]
        if seccomp_fd is not None:
            common += ["--seccomp", str(seccomp_fd)]
        for key, value in sandbox_env(self.threads).items():
            common += ["--setenv", key, value]
        common += _mounts(self.limits, seeds)
        if self.root:
            uid = str(self.uid(slot))
            return (
                _prlimit(self.limits, self.limits.processes)
                + ["bwrap"]
                + common
                + [
                    "--",
                    "setpriv",
                    f"--reuid={uid}",
                    f"--regid={uid}",
                    "--clear-groups",
                    "--inh-caps=-all",
                    "--bounding-set=-all",
                    "--no-new-privs",
                    "--",
                    "bwrap",
                    *_OWN_USERNS,
                    "--dev-bind",
                    "/",
                    "/",
                    "--die-with-parent",
                    "--chdir",
                    WORK,
                    "--",
                ]
                + py
            )
        # Not root: every sandbox runs as the grader's own uid, and RLIMIT_NPROC counts all of
        # that uid's processes on the host, the neighbours' too, so a fork bomb in one sandbox
        # kept the kernel of the next from starting.  Since Linux 5.14 the limit is checked at
        # each user namespace level: the limit of the task against its own namespace's count
        # (this sandbox alone), the creator's limit against the counts above.  So bubblewrap
        # gets room for every sandbox, and the runner inside gets the sandbox's own limit.
        if _nproc_per_userns():
            outer = _count_own() + self.limits.processes * (self.slots + 1)
            inner = ["prlimit", f"--nproc={self.limits.processes}", "--"]
        else:
            outer, inner = _count_own() + self.limits.processes, []
        return (
            _prlimit(self.limits, outer)
            + ["bwrap", *_OWN_USERNS]
            + common
            + ["--"]
            + inner
            + py
        )

    def execute(self, notebook, name, runner_args=(), timeout=None, slot=0, probe=False):
        """Run the notebook (bytes of its JSON, named ``name`` in the work directory); return a
        :class:`Run`.  Never raises for what the notebook does."""
        if self.seeds is None:  # built once, before the clock of the first notebook starts
            self.seeds = font_cache()
        t0 = time.monotonic()
        timeout = timeout or (self.limits.notebook_timeout + self.limits.grace)
        key = secrets.token_bytes(KEY_BYTES)
        r_res, w_res = os.pipe()
        r_key, w_key = os.pipe()
        r_info, w_info = os.pipe()
        nb_fd = os.memfd_create("notebook", 0)
        self._open_groups()
        group = self.groups[slot] if self.groups else None
        if group:
            group.reset_peak()
        oom_before = group.oom_counts() if group else (0, 0)
        program = None if self.unsafe else seccomp_filter()
        seccomp_fd = _memfd(program) if program is not None else None
        seeds = (
            []
            if self.unsafe
            else [(_memfd(data), f"/tmp/matplotlib/{fname}") for fname, data in self.seeds.items()]
        )
        workdir = None
        try:
            os.write(w_key, key)
            os.close(w_key)
            _write_all(nb_fd, notebook)
            os.lseek(nb_fd, 0, os.SEEK_SET)
            if self.unsafe:
                workdir = tempfile.mkdtemp(prefix="cw-unsafe-")
                os.makedirs(os.path.join(workdir, ".tmp", "matplotlib"))
                for fname, data in self.seeds.items():
                    pathlib.Path(workdir, ".tmp", "matplotlib", fname).write_bytes(data)
            fds = (w_res, r_key, w_info, nb_fd)
            cmd = self.command(name, runner_args, fds, slot, workdir, seeds, seccomp_fd)
            if probe is not False:
                i = cmd.index("-m")
                cmd[i:] = ["-c", PROBE, str(w_res), str(r_key), json.dumps(list(probe))]
            cmd = OOM_FIRST + cmd
            if group:
                cmd = group.enter_command(cmd)
            env = (
                sandbox_env(self.threads, workdir, f"{workdir}/.tmp")
                if self.unsafe
                else {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}
            )
            try:
                proc = subprocess.Popen(
                    cmd,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                    pass_fds=fds + tuple(fd for fd, _ in seeds) + ((seccomp_fd,) if seccomp_fd is not None else ()),
                    env=env,
                    cwd=workdir or "/",
                    start_new_session=True,
                )
            except OSError as exc:
                return Run([], f"the sandbox could not start: {exc}", time.monotonic() - t0)
        finally:
            for fd in (w_res, r_key, w_info, nb_fd) + tuple(fd for fd, _ in seeds):
                os.close(fd)
            if seccomp_fd is not None:
                os.close(seccomp_fd)
        try:
            lines, problem, stderr, child = _collect(
                proc, r_res, r_info, t0 + timeout, self.limits.max_stream_bytes
            )
        finally:
            _teardown(proc, getattr(proc, "_cw_child", None))
            if group:
                group.kill()
            if self.root and not self.unsafe:
                kill_uid(self.uid(slot))
            if workdir:
                shutil.rmtree(workdir, ignore_errors=True)
        records, bad = verify(lines, key)
        problem = problem or bad
        if problem is None:
            if not records or records[-1].get("kind") != "end":
                fatal = next((r.get("error") for r in records if r.get("kind") == "fatal"), None)
                problem = (
                    f"the notebook runner failed: {fatal}"
                    if fatal
                    else f"the notebook runner stopped without finishing (exit status {proc.returncode}): "
                    "it was killed or crashed"
                )
        verdict = cgroup.oom_verdict(oom_before, group.oom_counts(), group.memory_bytes) if group else None
        if verdict and verdict[0] == "limit":
            problem = f"{problem}; {verdict[1]}" if problem else None
            return Run(records, problem, time.monotonic() - t0, stderr, verdict[1])
        if verdict:  # a neighbour (or the machine) used the memory: not graded, never blamed
            return Run(records, verdict[1], time.monotonic() - t0, stderr, machine_oom=verdict[1])
        return Run(records, problem, time.monotonic() - t0, stderr)


def _nproc_per_userns(release=None):
    """Whether RLIMIT_NPROC is counted per user namespace (Linux 5.14 and later).

    >>> _nproc_per_userns("5.13.0-52-generic"), _nproc_per_userns("6.1.0-18-amd64")
    (False, True)
    """
    try:
        major, minor = (int(x) for x in (release or os.uname().release).split(".")[:2])
    except ValueError:
        return False
    return (major, minor) >= (5, 14)


def _count_own():
    """Processes already running under the grader's uid (RLIMIT_NPROC counts them too)."""
    try:
        return len(_uid_processes(os.getuid())) + 64
    except OSError:
        return 256


def _memfd(data):
    fd = os.memfd_create("seed", 0)
    _write_all(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _write_all(fd, data):
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _collect(proc, r_res, r_info, deadline, max_bytes):
    """Read the results pipe (at most ``max_bytes``), bubblewrap's info and stderr until the
    sandbox ends or ``deadline`` passes.  Returns ``(lines, problem, stderr, child_pid)``."""
    sel = selectors.DefaultSelector()
    sel.register(r_res, selectors.EVENT_READ, "res")
    sel.register(r_info, selectors.EVENT_READ, "info")
    sel.register(proc.stderr.fileno(), selectors.EVENT_READ, "err")
    res, info, err = bytearray(), bytearray(), bytearray()
    problem, ended = None, False
    try:
        while sel.get_map():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                if not ended:  # after the last record the results are complete anyway
                    problem = "stopped: the notebook exceeded its hard time limit"
                break
            for key, _ in sel.select(min(remaining, 1.0)):
                data = os.read(key.fd, 1 << 16)
                if not data:
                    sel.unregister(key.fd)
                    continue
                if key.data == "res":
                    res += data
                    if len(res) > max_bytes:
                        problem = f"stopped: the notebook's results exceeded {max_bytes} bytes"
                        break
                    if (
                        not ended
                        and res.endswith(b"\n")
                        and b' {"kind": "end"' in res[res.rfind(b"\n", 0, -1) :]
                    ):
                        ended = True  # the sandbox now has END_GRACE s to exit
                        deadline = min(deadline, time.monotonic() + END_GRACE)
                elif key.data == "info":
                    info += data[: 4096 - len(info)]
                    _pin_child(proc, info)
                else:
                    err += data[: 65536 - len(err)]
            if problem:
                break
    finally:
        sel.close()
        os.close(r_res)
        os.close(r_info)
    lines = bytes(res).split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    elif lines:  # a last line without its newline: cut
        problem = problem or "the results stream was cut in the middle of a line"
    return lines, problem, err.decode("utf-8", "replace"), getattr(proc, "_cw_child", None)


def _pin_child(proc, info):
    """Take a pidfd on the sandbox's first process as soon as bubblewrap names it."""
    if getattr(proc, "_cw_child", None) is not None:
        return
    try:
        pid = int(json.loads(bytes(info).decode().split("}")[0] + "}")["child-pid"])
    except (ValueError, KeyError, IndexError, UnicodeDecodeError):
        return
    try:
        proc._cw_child = os.pidfd_open(pid)
    except OSError:
        proc._cw_child = -1


def _teardown(proc, child_fd):
    """Kill the sandbox: its first process (the PID namespace ends with it) and bubblewrap."""
    if child_fd is not None and child_fd >= 0:
        try:
            signal.pidfd_send_signal(child_fd, signal.SIGKILL)
        except OSError:
            pass
        os.close(child_fd)
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass
    proc.wait()
    if proc.stderr:
        proc.stderr.close()


PROBE = r"""
import hashlib, hmac, json, os, sys
out, key_fd, paths = int(sys.argv[1]), int(sys.argv[2]), json.loads(sys.argv[3])
key = os.read(key_fd, 4096)
caps = int(open("/proc/self/status").read().split("CapEff:")[1].split()[0], 16)
import importlib.util
import coursework.values
blrlib_dir = os.path.dirname(importlib.util.find_spec("blrlib").origin)
seen = {p: sorted(os.listdir(p))[:50] if os.path.isdir(p) else os.path.exists(p) for p in paths}
writable = [p for p in (blrlib_dir, sys.prefix, "/usr", "/")
            if os.access(p, os.W_OK)]
recs = [{"kind": "start"}, {"kind": "probe", "uid": os.getuid(), "caps": caps, "seen": seen,
        "writable": writable}, {"kind": "end", "cells": 0}]
with os.fdopen(out, "wb") as fh:
    for seq, r in enumerate(recs):
        text = json.dumps(r).encode()
        mac = hmac.new(key, f"{seq}:".encode() + text, hashlib.sha256).hexdigest()
        fh.write(mac.encode() + b" " + text + b"\n")
"""
