"""A control group per parallel slot: the memory of a whole notebook, and a fair share of the CPU.

Resource limits (``setrlimit``, see :mod:`coursework.sandbox`) bound each process of a notebook:
its address space, its CPU seconds, its largest file, and the number of processes of its uid.
They do not bound what a notebook keeps in the machine's memory outside any address space, and
a student who wants to hurt the class can use exactly that: files in a ``memfd`` or in the
sandbox's tmpfs, System V shared memory segments detached again, millions of empty files (each
costs the kernel about a kilobyte of inode and dentry), pipe and socket buffers.  Nor do they
stop one notebook from taking the CPU from the notebooks graded beside it: the scheduler shares
the CPU among threads, so 128 busy threads get 128 shares and an honest notebook running at the
same time slows down until it hits its time limit.

A control group fixes both.  Each parallel slot gets one (cgroup v2: one directory with the
``memory`` and ``cpu`` controllers; cgroup v1: one directory in the ``memory`` hierarchy and one
in the ``cpu`` hierarchy), created under the grader's own cgroup (or the hierarchy's root when
the grader's own cannot have children with controllers).  The memory limit bounds everything the
notebook's processes charge, kernel memory and tmpfs pages included, with no swap; the cgroup's
OOM killer ends the notebook when it goes over.  Every slot being one scheduling group with the
default weight, each notebook gets the same share of the CPU whatever its number of threads.

The sandbox's first process enters the slot's groups before it starts bubblewrap (the ``sh``
prefix of :meth:`SlotGroup.enter_command`), so everything the notebook starts is inside.  After
the notebook the grader kills whatever is still in the group, and counts the OOM kills.

Creating control groups needs root (or a delegated subtree, which is not looked for).
:func:`open_slots` raises :class:`Unavailable` with the reason when it cannot; the grader then
grades without them and says so in its summary.
"""

from __future__ import annotations

import dataclasses
import errno
import itertools
import os
import signal
import time

ENTER = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"'


_SERIAL = itertools.count()  # one number per open_slots call in this process


class Unavailable(RuntimeError):
    """No control group can be made here (not root, no memory/cpu controller, read-only)."""


@dataclasses.dataclass(frozen=True)
class Hierarchy:
    """One mounted cgroup hierarchy: its version, mount point, controllers, and the grader's
    own cgroup in it as a directory."""

    version: int
    mount: str
    controllers: frozenset
    own: str


def _unescape(path):
    """mountinfo escapes space, tab, newline and backslash as octal ``\\ooo``."""
    out, i = [], 0
    while i < len(path):
        if path[i] == "\\" and path[i + 1 : i + 4].isdigit():
            out.append(chr(int(path[i + 1 : i + 4], 8)))
            i += 4
        else:
            out.append(path[i])
            i += 1
    return "".join(out)


def hierarchies(mountinfo="/proc/self/mountinfo", cgroup="/proc/self/cgroup"):
    """The cgroup hierarchies mounted here, with the grader's own cgroup directory in each."""
    with open(cgroup) as fh:
        own = {}
        for line in fh:
            hid, controllers, path = line.rstrip("\n").split(":", 2)
            key = "v2" if hid == "0" and controllers == "" else frozenset(controllers.split(","))
            own[key] = path
    found = []
    with open(mountinfo) as fh:
        for line in fh:
            left, _, right = line.partition(" - ")
            fields, rfields = left.split(), right.split()
            if len(fields) < 5 or len(rfields) < 3:
                continue
            fstype, root, mount = rfields[0], _unescape(fields[3]), _unescape(fields[4])
            if fstype == "cgroup2":
                path = own.get("v2")
                try:
                    with open(os.path.join(mount, "cgroup.controllers")) as c:
                        controllers = frozenset(c.read().split())
                except OSError:
                    continue
                version = 2
            elif fstype == "cgroup":
                controllers = frozenset(rfields[2].split(",")) & {"memory", "cpu", "cpuacct", "pids"}
                path = next((p for k, p in own.items() if k != "v2" and controllers & k), None)
                version = 1
            else:
                continue
            if path is None or not controllers:
                continue
            rel = path[len(root) :] if root != "/" and path.startswith(root) else path
            found.append(Hierarchy(version, mount, controllers, os.path.join(mount, rel.lstrip("/"))))
    return found


def _write(path, text):
    with open(path, "w") as fh:
        fh.write(text)


def _read(path, default=""):
    try:
        with open(path) as fh:
            return fh.read()
    except OSError:
        return default


def _v2_parent(h):
    """A directory of the v2 hierarchy ``h`` whose children get the memory and cpu controllers:
    the grader's own cgroup, else the hierarchy's root."""
    why = []
    for parent in (h.own, h.mount):
        have = set(_read(os.path.join(parent, "cgroup.subtree_control")).split())
        missing = {"memory", "cpu"} - have
        if missing:
            try:
                _write(os.path.join(parent, "cgroup.subtree_control"), " ".join(f"+{c}" for c in sorted(missing)))
            except OSError as exc:
                why.append(f"{parent}: {exc.strerror}")
                continue
        return parent
    raise Unavailable("cannot enable the memory and cpu controllers (" + "; ".join(why) + ")")


@dataclasses.dataclass
class SlotGroup:
    """The control group(s) of one slot: ``dirs`` (one for v2, memory and cpu for v1)."""

    version: int
    dirs: list
    memory_dir: str
    memory_bytes: int

    def enter_command(self, cmd):
        """``cmd`` prefixed so that its first process moves itself into the slot's groups."""
        procs = [os.path.join(d, "cgroup.procs") for d in self.dirs]
        return ["/bin/sh", "-c", ENTER, "cw-enter", *procs, "--", *cmd]

    def oom_kills(self):
        """How many processes of the group an OOM killer (any) has killed so far."""
        return self.oom_counts()[1]

    def oom_counts(self):
        """``(limit, kills)``: how often the group's memory reached its own limit (v2: the
        ``oom`` events of ``memory.events``; v1: ``memory.failcnt`` and ``memory.memsw.failcnt``),
        and how many of its
        processes an OOM killer has killed, its own or the machine's (``oom_kill``)."""
        name = "memory.events" if self.version == 2 else "memory.oom_control"
        found = {}
        for line in _read(os.path.join(self.memory_dir, name)).splitlines():
            key, _, value = line.partition(" ")
            if value.strip().isdigit():
                found[key] = int(value)
        if self.version == 2:
            return found.get("oom", 0), found.get("oom_kill", 0)
        fails = 0  # the memory counter's, and the memory+swap one's (which, no swap, fails first)
        for counter in ("memory.failcnt", "memory.memsw.failcnt"):
            text = _read(os.path.join(self.memory_dir, counter), "0").strip()
            fails += int(text) if text.isdigit() else 0
        # some kernels (6.18) leave failcnt at 0 through a limit OOM: the peak since
        # reset_peak() reaching the limit (less 1 MiB) counts as reaching it
        for counter in ("memory.max_usage_in_bytes", "memory.memsw.max_usage_in_bytes"):
            text = _read(os.path.join(self.memory_dir, counter), "0").strip()
            if text.isdigit() and int(text) >= self.memory_bytes - (1 << 20):
                fails += 1
                break
        # kernels before 4.13 have no oom_kill line: count the failures at the limit
        return fails, found.get("oom_kill", fails)

    def reset_peak(self):
        """Start the v1 peak counters afresh (before each notebook of the slot)."""
        if self.version == 1:
            for counter in ("memory.max_usage_in_bytes", "memory.memsw.max_usage_in_bytes"):
                try:
                    _write(os.path.join(self.memory_dir, counter), "0")
                except OSError:
                    pass

    def pids(self):
        found = set()
        for d in self.dirs:
            for line in _read(os.path.join(d, "cgroup.procs")).split():
                if line.isdigit():
                    found.add(int(line))
        return found

    def kill(self, wait=5.0):
        """SIGKILL every process in the group; wait until it is empty (at most ``wait`` s)."""
        deadline = time.monotonic() + wait
        while True:
            pids = self.pids()
            if not pids:
                return True
            if self.version == 2 and os.path.exists(os.path.join(self.dirs[0], "cgroup.kill")):
                try:
                    _write(os.path.join(self.dirs[0], "cgroup.kill"), "1")
                except OSError:
                    pass
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            if time.monotonic() > deadline:
                return False
            time.sleep(0.02)

    def remove(self):
        self.kill()
        for d in self.dirs:
            for _ in range(50):
                try:
                    os.rmdir(d)
                    break
                except FileNotFoundError:
                    break
                except OSError as exc:
                    if exc.errno != errno.EBUSY:
                        break
                    time.sleep(0.02)


def oom_verdict(before, after, memory_bytes):
    """Who is to blame for the OOM kills of a slot between the :meth:`SlotGroup.oom_counts`
    ``before`` and ``after`` a notebook: ``None`` (no kill), ``("limit", sentence)`` when the
    group reached its own limit (the notebook's fault), ``("machine", sentence)`` when its
    processes were killed although the group never reached its limit: the machine ran out of
    memory, and the notebook (another's victim) is not blamed.

    >>> oom_verdict((0, 0), (0, 0), 1 << 30) is None
    True
    >>> oom_verdict((2, 0), (5, 1), 1 << 30)[0], oom_verdict((2, 0), (2, 1), 1 << 30)[0]
    ('limit', 'machine')
    """
    limit, kills = after[0] - before[0], after[1] - before[1]
    if kills <= 0:
        return None
    if limit > 0:
        return "limit", (
            f"the notebook went over its memory limit of {memory_bytes >> 20} MiB "
            f"(all its processes together) and {kills} of its processes were killed"
        )
    return "machine", (
        f"the machine ran out of memory and its OOM killer ended {kills} of this notebook's "
        f"processes, although the notebook stayed under its limit of {memory_bytes >> 20} MiB "
        "(not this notebook's fault)"
    )


def _make(parent, name, settings):
    path = os.path.join(parent, name)
    os.mkdir(path, 0o755)
    try:
        for fname, value in settings:
            if value is None:
                continue
            if os.path.exists(os.path.join(path, fname)):
                _write(os.path.join(path, fname), value)
    except OSError:
        os.rmdir(path)
        raise
    return path


def _remove_stale(h):
    """Remove the empty slot groups of graders that are no longer running (killed, say)."""
    for parent in {h.own, h.mount}:
        try:
            names = os.listdir(parent)
        except OSError:
            continue
        for name in names:
            parts = name.split(".")  # tag.slotK, the tag being name.pid[.n]
            stale = (
                len(parts) in (3, 4)
                and parts[0] in ("coursework-grade", "coursework-test")
                and parts[1].isdigit()
                and not os.path.exists(f"/proc/{parts[1]}")
            )
            if stale:
                try:
                    os.rmdir(os.path.join(parent, name))  # fails, harmlessly, if not empty
                except OSError:
                    pass


def open_slots(n, memory_bytes, tag=None):
    """``n`` new :class:`SlotGroup`, each limiting its notebook to ``memory_bytes`` of memory
    (no swap) and making it one group of the CPU scheduler.  Raises :class:`Unavailable`."""
    if os.geteuid() != 0:
        raise Unavailable("the grader is not root")
    # the pid names the process for the clean-up of stale groups; the counter keeps two
    # graders of one process apart (they collided: the second one's groups "File exists")
    tag = tag or f"coursework-grade.{os.getpid()}.{next(_SERIAL)}"
    try:
        hs = hierarchies()
    except OSError as exc:
        raise Unavailable(f"cannot read the cgroup hierarchies ({exc.strerror})") from None
    v2 = next((h for h in hs if h.version == 2 and {"memory", "cpu"} <= h.controllers), None)
    v1_mem = next((h for h in hs if h.version == 1 and "memory" in h.controllers), None)
    v1_cpu = next((h for h in hs if h.version == 1 and "cpu" in h.controllers), None)
    for h in (v2, v1_mem, v1_cpu):
        if h is not None:
            _remove_stale(h)
    made = []
    try:
        for k in range(n):
            name = f"{tag}.slot{k}"
            if v2 is not None:
                parent = _v2_parent(v2)
                d = _make(
                    parent,
                    name,
                    [
                        ("memory.max", str(memory_bytes)),
                        ("memory.swap.max", "0"),
                        ("memory.oom.group", "1"),
                    ],
                )
                made.append(SlotGroup(2, [d], d, memory_bytes))
            elif v1_mem is not None and v1_cpu is not None:
                mem = _make(
                    v1_mem.own,
                    name,
                    [("memory.limit_in_bytes", str(memory_bytes)), ("memory.memsw.limit_in_bytes", str(memory_bytes))],
                )
                try:
                    cpu = _make(v1_cpu.own, name, [])
                except OSError:
                    os.rmdir(mem)
                    raise
                made.append(SlotGroup(1, [mem, cpu], mem, memory_bytes))
            else:
                raise Unavailable("no cgroup hierarchy with the memory and cpu controllers is mounted")
    except OSError as exc:
        for g in made:
            g.remove()
        raise Unavailable(f"cannot create a control group ({exc.strerror}: {exc.filename})") from None
    except Unavailable:
        for g in made:
            g.remove()
        raise
    return made
