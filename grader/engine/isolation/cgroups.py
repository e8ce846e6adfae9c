"""One control group per kernel: a budget of memory, CPU and processes for the kernel and all its children.

Rlimits bound each process alone; a kernel that starts many processes (or threads) adds them up, and
two kernels on one machine share its CPU and memory with no limit between them. So each kernel
starts in a control group of its own, made here, and every process it starts stays in it (a
sandboxed kernel runs as an unprivileged uid that cannot write the cgroup files):

- memory: ``Limits.memory_mb`` for all its processes together (v1 ``memory.limit_in_bytes``, v2
  ``memory.max``, no swap); past it the kernel's out-of-memory killer runs inside the group, and
  the grader then stops the whole kernel (:meth:`KernelGroup.oom_kills`);
- CPU: a quota of ``cores`` cores (v1 ``cpu.cfs_quota_us``, v2 ``cpu.max``) and an equal share
  against the other kernels (``cpu.shares`` / ``cpu.weight``);
- processes: ``Limits.max_processes`` processes and threads (``pids.max``), whatever their uid.

cgroup v2 is used where the grader's own group delegates ``memory`` to it (root, or a ``Delegate=yes``
systemd unit); else cgroup v1 where the memory hierarchy is mounted and writable (root); else
:func:`cgroup_support` says why not, and kernels run with rlimits only. ``cpu`` and ``pids`` are used
where the same hierarchy offers them (where the kernels' groups go beside the grader's, the parent
is asked to hand on all three it is offered: on an H100 machine it offered all three but handed on
memory alone); where it does not, the group bounds memory only, CPU stays bounded by CPU seconds and
processes by the kernel uid's ``RLIMIT_NPROC``, and :func:`cgroup_gaps` names what is missing so
that ``autograde`` warns. Memory is the one that matters most: it is what lets a kernel use a GPU
(:func:`grader.engine.isolation.sandbox.gpu_devices`).
Each local grading worker gets a group of the same kind, for memory alone, beside the kernels' groups
(:meth:`KernelGroup.for_memory`, :mod:`grader.running.worker_memory`).

    group = KernelGroup.create(limits, cores=1.0)   # None where cgroups cannot be used
    argv = group.wrap(argv)                          # the command joins the group, then execs argv
    ...; group.close()                               # kills what is left in it, removes it
"""
from __future__ import annotations

import errno
import functools
import itertools
import os
import shlex
import signal
import time
from pathlib import Path

__all__ = ["KernelGroup", "cgroup_changes", "cgroup_gaps", "cgroup_support", "kernel_cores", "set_kernel_slots"]

CONTROLLERS = ("memory", "cpu", "pids")
REQUIRED = "memory"  # without it no group is made; cpu and pids are used where offered
PERIOD_US = 100_000
PREFIX = "course-grader-"
_serial = itertools.count(1)
_slots = [1]  # kernels that run at once in this process's machine share (grader.running.jobs.share_cores)


def set_kernel_slots(slots: int) -> None:
    """How many kernels run at once on this machine: each gets ``cores // slots`` cores by default."""
    _slots[0] = max(1, int(slots))


def kernel_cores(requested: float = 0.0) -> float:
    """The CPU quota of one kernel, in cores: ``requested``, or (0) the machine's cores split between
    the kernels that run at once."""
    if requested > 0:
        return float(requested)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return float(max(1, cores // _slots[0]))


def _mounts() -> tuple[Path | None, dict[str, Path]]:
    """(the cgroup2 mount, {v1 controller: its mount}) from /proc/self/mounts."""
    v2, v1 = None, {}
    for line in Path("/proc/self/mounts").read_text().splitlines():
        fields = line.split()
        if len(fields) < 4:
            continue
        if fields[2] == "cgroup2" and v2 is None:
            v2 = Path(fields[1])
        elif fields[2] == "cgroup":
            for option in fields[3].split(","):
                if option in CONTROLLERS:
                    v1.setdefault(option, Path(fields[1]))
    return v2, v1


def _own_paths() -> tuple[str | None, dict[str, str]]:
    """This process's group: (its v2 path, {v1 controller: its path}) from /proc/self/cgroup."""
    v2, v1 = None, {}
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if controllers == "":
            v2 = path
        for name in controllers.split(","):
            if name in CONTROLLERS:
                v1[name] = path
    return v2, v1


def _write(path: Path, value) -> None:
    with open(path, "w") as f:
        f.write(str(value))


@functools.lru_cache(maxsize=1)
def _bases() -> tuple[str, dict[str, Path], str, tuple[str, ...], str]:
    """(version "v2"/"v1"/"", {controller or "unified": the folder new groups go in}, a sentence saying
    which or why not, the controllers a group gets, a sentence saying what the grader turned on in a
    group outside its own ("" when nothing))."""
    try:
        mount2, mounts1 = _mounts()
        own2, own1 = _own_paths()
    except (OSError, ValueError) as error:
        return "", {}, f"the cgroup files cannot be read ({type(error).__name__})", (), ""
    why = []
    if mount2 is not None and own2 is not None:
        base = mount2 / own2.lstrip("/")
        found, busy = _v2_base(base, why)
        if found is None and busy and base != mount2:
            # cgroup v2 lets a group with processes in it (the grader's own) hand no controller to
            # children: make the kernels' groups beside it instead, where its parent delegates memory
            # (seen on an H100 machine, where the grader runs as root in a group of its own).
            found, _ = _v2_base(base.parent, why, beside=True)
        if found is not None:
            return found
    used = tuple(c for c in CONTROLLERS if c in mounts1 and c in own1)
    if REQUIRED in used:
        bases = {c: mounts1[c] / own1[c].lstrip("/") for c in used}
        probe = _probe(bases)
        if not probe:
            return "v1", bases, "cgroup v1 (" + ", ".join(str(b) for b in bases.values()) + ")" + _lacking(used), used, ""
        why.append(f"cgroup v1: {probe}")
    elif mounts1:
        why.append("cgroup v1 lacks memory")
    return "", {}, "; ".join(why) or "no cgroup file system is mounted", (), ""


def _v2_base(base: Path, why: list[str], beside: bool = False) -> tuple[tuple | None, bool]:
    """(("v2", {"unified": base}, sentence, controllers, what was turned on) when kernel groups can be made in ``base``, else
    None with the reason appended to ``why``; True where ``base`` refused controllers for holding processes)."""
    where = f"cgroup v2 {'beside the grader in' if beside else 'at'} {base}"
    try:
        offered = set((base / "cgroup.controllers").read_text().split())
        used = tuple(c for c in CONTROLLERS if c in offered)
        if REQUIRED not in offered:
            why.append(f"{where} does not offer memory")
            return None, False
        delegated = set((base / "cgroup.subtree_control").read_text().split())
        turned_on = []
        if not beside and not set(used) <= delegated:
            _write(base / "cgroup.subtree_control", " ".join("+" + c for c in used))
        elif beside and not set(used) <= delegated:
            used, turned_on = _hand_on(base, used, delegated)
            if REQUIRED not in used:
                why.append(f"{where} does not hand memory to its groups")
                return None, False
        probe = _probe({c: base for c in used})
        if not probe:
            control = " ".join("+" + c for c in turned_on)
            said = f" (turned on {control} in {base / 'cgroup.subtree_control'})" if turned_on else ""
            changed = (f"the kernels' control groups are made beside the grader's in {base}, so the grader turned on "
                       f"{control} in its cgroup.subtree_control: the other groups there get these controllers too"
                       if turned_on else "")
            return ("v2", {"unified": base}, f"{where}{said}{_lacking(used)}", used, changed), False
        why.append(f"{where}: {probe}")
    except OSError as error:
        why.append(f"{where}: {error.strerror or type(error).__name__}")
        return None, error.errno == errno.EBUSY
    return None, False


def _hand_on(parent: Path, used: tuple[str, ...], delegated: set[str]) -> tuple[tuple[str, ...], list[str]]:
    """Ask ``parent`` (the grader's parent group, which holds no processes) to hand on each controller it is
    offered but does not hand on yet, one at a time (a write is all or nothing, and cpu alone can be refused,
    e.g. where real-time tasks run). Returns (the controllers its children get now, those turned on here: the
    parent's other children get them too, so ``autograde`` says so, :func:`cgroup_changes`)."""
    turned_on = []
    for controller in used:
        if controller in delegated:
            continue
        try:
            _write(parent / "cgroup.subtree_control", "+" + controller)
        except OSError:
            continue
        turned_on.append(controller)
    handed_on = tuple(c for c in used if c in delegated or c in turned_on)
    return handed_on, turned_on


def _lacking(used: tuple[str, ...]) -> str:
    """" (memory only: ...)" saying which budgets a group of these controllers leaves to rlimits; "" if none."""
    gaps = _gap_sentences(used)
    return f" ({' and '.join(c for c in used)} only: {'; '.join(gaps)})" if gaps else ""


def _gap_sentences(used) -> list[str]:
    gaps = []
    if "cpu" not in used:
        gaps.append("no cpu controller, so a kernel's CPU is bounded by CPU seconds only and kernels compete for the cores")
    if "pids" not in used:
        gaps.append("no pids controller, so a kernel's processes are bounded only by RLIMIT_NPROC, where the kernel runs as a uid of its own")
    return gaps


def _probe(bases: dict[str, Path]) -> str:
    """"" when a group can be made (and removed) in each base, else why not."""
    name = f"{PREFIX}probe-{os.getpid()}"
    try:
        for base in set(bases.values()):
            (base / name).mkdir()
            (base / name).rmdir()
    except OSError as error:
        return f"cannot make a group there ({error.strerror or type(error).__name__}: run the grader as root " \
               "or in a cgroup delegated to its user)"
    return ""


def cgroup_support() -> tuple[bool, str]:
    """(can each kernel get a control group?, a sentence saying which version, or why not)."""
    version, _, why, _, _ = _bases()
    return bool(version), why


def cgroup_changes() -> str:
    """A sentence saying what this process changed in a control group outside the grader's own, to make the
    kernels' groups there ("" when nothing, or when it has not looked at the cgroups yet: asking looks at
    nothing): a controller turned on in a parent's ``cgroup.subtree_control`` is handed to all of the parent's
    children, not only the grader's, so the command line says it."""
    return _bases()[4] if _bases.cache_info().currsize else ""


def cgroup_gaps() -> list[str]:
    """What a kernel's group does not bound here (one sentence each; [] when it bounds memory, CPU and
    processes, or when there is no group at all: :func:`cgroup_support` says that)."""
    version, _, _, used, _ = _bases()
    return _gap_sentences(used) if version else []


class KernelGroup:
    """The control group(s) of one kernel: one folder per v1 controller, or one v2 folder."""

    def __init__(self, version: str, dirs: dict[str, Path], memory_bytes: int,
                 controllers: tuple[str, ...] = CONTROLLERS):
        self.version, self.dirs, self.memory_bytes = version, dirs, memory_bytes
        self.controllers = controllers

    @classmethod
    def create(cls, limits, cores: float) -> "KernelGroup | None":
        """A new group with the budgets of ``limits`` (memory_mb, max_processes) and ``cores``; None where
        cgroups cannot be used. Raises OSError when making it failed (the kernel must not start)."""
        version, bases, _, used, _ = _bases()
        if not version:
            return None
        _sweep(version, bases)
        name = f"{PREFIX}{os.getpid()}-{next(_serial)}"
        group = cls(version, {c: b / name for c, b in bases.items()}, int(limits.memory_mb) * 1024 * 1024, used)
        try:
            for folder in set(group.dirs.values()):
                folder.mkdir()
            group._limit(cores, int(limits.max_processes))
        except OSError:
            group.close()
            raise
        return group

    @classmethod
    def for_memory(cls, memory_bytes: int, label: str) -> "KernelGroup | None":
        """A group that bounds memory alone (a grading worker's: :mod:`grader.running.worker_memory`), made
        where kernels' groups are, beside them; None where cgroups cannot be used. Raises OSError when
        making it failed."""
        version, bases, _, _, _ = _bases()
        if not version:
            return None
        _sweep(version, bases)
        name = f"{PREFIX}{os.getpid()}-{label}"
        group = cls(version, {c: b / name for c, b in bases.items() if c in ("unified", REQUIRED)}, memory_bytes,
                    (REQUIRED,))
        try:
            for folder in set(group.dirs.values()):
                folder.mkdir()
            group._limit(cores=0.0, processes=0)  # memory only: cpu and pids are not among its controllers
        except OSError:
            group.close()
            raise
        return group

    def join(self) -> None:
        """Move this process into the group (its later children start in it). Raises OSError if refused."""
        for folder in sorted(set(self.dirs.values())):
            _write(folder / "cgroup.procs", os.getpid())

    def file(self, controller: str, name: str) -> Path:
        """The path of the group's file ``name`` (of ``controller``'s hierarchy, under v1)."""
        return self.dirs["unified" if self.version == "v2" else controller] / name

    def _limit(self, cores: float, processes: int) -> None:
        quota = max(1000, int(cores * PERIOD_US))
        if self.version == "v2":
            _write(self.file("memory", "memory.max"), self.memory_bytes)
            for optional, value in (("memory.swap.max", 0), ("memory.oom.group", 1)):
                if self.file("memory", optional).exists():
                    _write(self.file("memory", optional), value)
            if "cpu" in self.controllers:
                _write(self.file("cpu", "cpu.max"), f"{quota} {PERIOD_US}")
                _write(self.file("cpu", "cpu.weight"), 100)
        else:
            _write(self.file("memory", "memory.limit_in_bytes"), self.memory_bytes)
            try:  # no swap either (only where swap accounting is on)
                _write(self.file("memory", "memory.memsw.limit_in_bytes"), self.memory_bytes)
            except OSError:
                pass
            if "cpu" in self.controllers:
                _write(self.file("cpu", "cpu.cfs_period_us"), PERIOD_US)
                _write(self.file("cpu", "cpu.cfs_quota_us"), quota)
                _write(self.file("cpu", "cpu.shares"), 1024)
        if "pids" in self.controllers:
            _write(self.file("pids", "pids.max"), processes)

    def wrap(self, argv: list[str]) -> list[str]:
        """``argv`` run by a shell that first moves itself into the group (its children follow)."""
        joins = " && ".join(f"echo $$ > {shlex.quote(str(d / 'cgroup.procs'))}" for d in sorted(set(self.dirs.values())))
        return ["/bin/sh", "-c", f'{joins} && exec "$@"', "course-grader-cgroup", *argv]

    def oom_kills(self) -> int:
        """How many processes of the group the out-of-memory killer has killed so far."""
        name = "memory.events" if self.version == "v2" else "memory.oom_control"
        try:
            for line in self.file("memory", name).read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
        except (OSError, ValueError):
            pass
        return 0

    def stat(self, controller: str, name: str) -> dict[str, int]:
        """A ``key value`` file of the group (e.g. cpu.stat, pids.events) as a dict; {} if unreadable."""
        try:
            pairs = (line.split() for line in self.file(controller, name).read_text().splitlines())
            return {p[0]: int(p[1]) for p in pairs if len(p) == 2 and p[1].lstrip("-").isdigit()}
        except (OSError, KeyError):  # KeyError: a v1 controller this machine's group does not have
            return {}

    def close(self) -> str:
        """Kill every process left in the group and remove it. "" when done, else what is left; never raises."""
        try:
            return _remove(self.version, set(self.dirs.values()))
        except Exception as error:  # noqa: BLE001 - cleaning up must not stop grading
            return f"the kernel's control group could not be removed ({type(error).__name__})"


def _pids(folder: Path) -> list[int]:
    try:
        return [int(p) for p in (folder / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return []


def _remove(version: str, folders: set[Path], attempts: int = 200) -> str:
    if version == "v2":
        for folder in folders:
            if (folder / "cgroup.kill").exists():
                try:
                    _write(folder / "cgroup.kill", 1)
                except OSError:
                    pass
    left = set(f for f in folders if f.exists())
    for _ in range(attempts):
        for folder in list(left):
            for pid in _pids(folder):
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            try:
                folder.rmdir()
                left.discard(folder)
            except FileNotFoundError:
                left.discard(folder)
            except OSError:
                pass  # busy: processes still exiting
        if not left:
            return ""
        time.sleep(0.01)
    return "the kernel's control group could not be removed: " + ", ".join(map(str, sorted(left)))


def _sweep(version: str, bases: dict[str, Path]) -> None:
    """Remove the (empty) groups of kernels whose grading process is gone (e.g. a killed worker)."""
    for base in set(bases.values()):
        try:
            names = [p.name for p in base.iterdir() if p.name.startswith(PREFIX)]
        except OSError:
            continue
        for name in names:
            owner = name[len(PREFIX):].split("-")[0]
            if owner.isdigit() and not Path(f"/proc/{owner}").exists():
                _remove(version, {base / name}, 5)
