"""The sandbox: how a kernel process is launched so that student code cannot reach the grader.

The kernel runs under bubblewrap (``bwrap``) in fresh mount, PID, network, IPC and UTS
namespaces. Its file system holds only read-only system and Python directories (``/usr``,
``/etc``, the interpreter, the virtualenv, the ``d2lite`` and ``grader`` packages), a size-capped
``/tmp``, the submission's ``workdir`` (read-write) and the socket folder through which it talks
to the grader (ZMQ ``ipc`` transport; there is no network at all). When the grader runs as root,
the kernel drops to an unprivileged uid with no capabilities, so file permissions (and, where no
control group counts its processes, ``RLIMIT_NPROC``) apply. Resource limits (address space, CPU seconds, processes, file size, no core
dumps) are set with ``prlimit`` just before Python starts. See ``grader/THREAT_MODEL.md``.

The folders a kernel may write are made here, new for each kernel start (:func:`new_folder`), and
filled only with new files (:func:`copy_new`, :func:`seed_font_list`) before :func:`hand_over`.
"""
from __future__ import annotations

import functools
import glob
import importlib.util
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from d2lite import unattended

from .cgroups import cgroup_gaps, cgroup_support

__all__ = ["Limits", "SandboxUnavailable", "sandbox_status", "kernel_command", "kernel_uid", "sandboxed_rlimits", "gpu_devices", "new_folder",
           "copy_new", "hand_over", "seed_font_list"]

# Environment variables passed from the grader to the kernel, by name (nothing else is: no secrets,
# no NBGRADER_* variables, no paths to the instructor's folders, no other D2LITE_* name).
PASSED_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "LANG", "LC_ALL", "TZ",
              "CUDA_VISIBLE_DEVICES",  # which GPUs the instructor grades on
              unattended.DATASET, unattended.DATA_DIR, unattended.FASHION_MNIST_URL)  # the data the course uses
UID_BASE = 61000  # kernels run as UID_BASE + (grader pid % UID_SPAN) when the grader is root
UID_SPAN = 3000


@dataclass(frozen=True)
class Limits:
    """Resource limits for one kernel. Defaults suit the course on a 2-core CPU machine."""

    cell_timeout_s: float = 300.0  # wall-clock seconds per cell
    memory_mb: int = 6144  # address space of each kernel process; with cgroups, also the memory of all together
    cpu_seconds: int = 1800  # CPU seconds of each kernel process
    cpu_cores: float = 0.0  # with cgroups: cores a kernel may use at once; 0: the cores split between kernels
    max_processes: int = 512  # processes + threads of the kernel (its cgroup; its uid's rlimit when root)
    max_file_mb: int = 512  # largest file the kernel may write; also the size of its /tmp
    max_output_bytes: int = 256_000  # per cell, all outputs together
    notebook_timeout_s: float = 3600.0  # wall-clock seconds for the whole notebook
    max_cell_message_mb: int = 256  # bytes of messages the kernel may send during one cell
    max_notebook_message_mb: int = 1024  # ... during the whole submission


class SandboxUnavailable(RuntimeError):
    """The machine cannot isolate a kernel; grading refuses unless asked for ``unsafe=True``."""


def kernel_uid() -> int | None:
    """The uid kernels run as, or None when the grader is not root (they keep its uid)."""
    if os.geteuid() != 0:
        return None
    return UID_BASE + os.getpid() % UID_SPAN


@functools.lru_cache(maxsize=1)
def _probe() -> tuple[bool, str]:
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return False, ("bubblewrap (bwrap) is not installed; install the Debian package "
                       "'bubblewrap' (make setup does) or grade with --unsafe")
    probe = kernel_command([sys.executable, "-c", "import socket, os; "
                            "socket.create_connection(('1.1.1.1', 53), timeout=1)"],
                           workdir=None, sockdir=None, limits=Limits(), unsafe=False)
    try:
        done = subprocess.run(probe, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"bubblewrap could not start a sandbox ({exc}); grade with --unsafe"
    if "Network is unreachable" not in done.stderr and "[Errno 101]" not in done.stderr:
        detail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return False, (f"bubblewrap could not start an isolated Python ({detail}); user "
                       "namespaces may be disabled on this machine; grade with --unsafe")
    uid = kernel_uid()
    who = f"uid {uid}" if uid is not None else f"the grader's uid {os.geteuid()}"
    grouped, how = cgroup_support()
    gaps = cgroup_gaps()
    bounded = "its memory" if gaps else "its memory, CPU and processes"
    budget = (f"one control group per kernel bounds {bounded} ({how})" if grouped else
              f"WARNING: no control group per kernel ({how}), so memory is bounded per process only, CPU by "
              "CPU seconds only, and kernels compete for the machine's CPU and memory")
    return True, f"bubblewrap sandbox: no network, private file system, kernels run as {who}; {budget}"


def sandbox_status() -> tuple[bool, str]:
    """(isolation available?, a sentence saying how, or why not)."""
    return _probe()


def rlimit_values(limits: Limits, *, by_uid: bool, address_space: bool = True) -> list[tuple[str, int, int]]:
    """(resource name, soft, hard) of each limit a kernel gets. RLIMIT_NPROC counts every process of the uid,
    so it is only set when ``by_uid`` says the uid is the kernels' alone (otherwise a user's browser threads
    would count too) and no group's ``pids.max`` bounds the kernel (:func:`counts_processes_by_uid`).
    ``address_space`` False leaves RLIMIT_AS unset: for kernels that use a GPU (see :func:`gpu_devices`).
    RLIMIT_DATA is set with it, to the same budget: a grading worker without cgroups bounds itself by a
    lower soft RLIMIT_DATA (:mod:`grader.running.worker_memory`), which its kernels must not inherit."""
    mb = 1024 * 1024
    cpu = int(limits.cpu_seconds)
    values = [("RLIMIT_AS", limits.memory_mb * mb, limits.memory_mb * mb),
              ("RLIMIT_DATA", limits.memory_mb * mb, limits.memory_mb * mb)] if address_space else []
    values += [("RLIMIT_CPU", cpu, cpu + 5)]
    values += [("RLIMIT_NPROC", limits.max_processes, limits.max_processes)] if by_uid else []
    size = limits.max_file_mb * mb
    return values + [("RLIMIT_FSIZE", size, size), ("RLIMIT_CORE", 0, 0), ("RLIMIT_NOFILE", 1024, 1024)]


def counts_processes_by_uid(processes_in_cgroup: bool) -> bool:
    """Whether a sandboxed kernel gets RLIMIT_NPROC: only where it runs as a uid of its own and no control group
    counts its processes. The kernels of one grader process share that uid, and RLIMIT_NPROC counts every process
    of it, so beside a group's ``pids.max`` (one budget per kernel) it would make the kernels that run at the
    same time share one budget: a student's processes, or a finished kernel's still dying, would take another
    student's. The group is the exact bound; the rlimit is the fallback where there is none."""
    return kernel_uid() is not None and not processes_in_cgroup


def _rlimits(limits: Limits, *, by_uid: bool, address_space: bool = True) -> list[str]:
    """prlimit arguments setting :func:`rlimit_values`."""
    option = {"RLIMIT_AS": "as", "RLIMIT_DATA": "data", "RLIMIT_CPU": "cpu", "RLIMIT_NPROC": "nproc",
              "RLIMIT_FSIZE": "fsize", "RLIMIT_CORE": "core", "RLIMIT_NOFILE": "nofile"}
    return ["prlimit", *(f"--{option[name]}={soft}" if soft == hard else f"--{option[name]}={soft}:{hard}"
                         for name, soft, hard in rlimit_values(limits, by_uid=by_uid, address_space=address_space)),
            "--"]


def gpu_devices() -> list[str]:
    """This machine's GPU device files (NVIDIA's ``/dev/nvidia*``; ``/dev/dri`` for others).

    CUDA cannot start under an address-space limit: its initialisation reserves far more virtual
    memory than any sensible RLIMIT_AS (on an H100, ``cudaGetDeviceCount()`` failed with "out of
    memory" under the default 6 GiB limit, and torch then reported no GPU). So a kernel that gets
    the GPU gets no RLIMIT_AS, and a sandboxed kernel gets the GPU only where a memory control
    group bounds it instead; elsewhere it keeps RLIMIT_AS and runs on the CPU.
    """
    return sorted(glob.glob("/dev/nvidia*")) + (["/dev/dri"] if Path("/dev/dri").exists() else [])


def mpl_config_dir(workdir: Path) -> Path:
    """The kernel's matplotlib config and cache folder: in its workdir, so that the grader can put
    a font list there before the kernel starts (:func:`seed_font_list`)."""
    return Path(workdir) / ".matplotlib"


def kernel_env(workdir: Path | None, *, sandboxed: bool, environ: dict[str, str] | None = None) -> dict[str, str]:
    """The whole environment of a kernel: a fixed minimum plus a few passed-through settings (of ``environ``,
    by default this process's environment)."""
    tmp = "/tmp" if sandboxed else str(Path(workdir or "/tmp") / ".tmp")
    env = {
        "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(workdir) if workdir else "/tmp",
        # The kernel's uid has no passwd entry: without these, getpass.getuser() raises KeyError,
        # and libraries that name caches after the user (torch's compilers) fail on import.
        "USER": "student",
        "LOGNAME": "student",
        "TMPDIR": tmp,
        "IPYTHONDIR": f"{tmp}/ipython",
        "MPLCONFIGDIR": str(mpl_config_dir(workdir)) if workdir else f"{tmp}/matplotlib",
        "JUPYTER_RUNTIME_DIR": f"{tmp}/jupyter",
        "MPLBACKEND": "module://matplotlib_inline.backend_inline",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYDEVD_DISABLE_FILE_VALIDATION": "1",
    }
    for name, value in (os.environ if environ is None else environ).items():
        if name in PASSED_ENV:
            env[name] = value
    if _source_roots():
        env["PYTHONPATH"] = os.pathsep.join(_source_roots())
    return env


def _source_roots() -> list[str]:
    """The folders holding the d2lite and grader packages the grader itself imports, when these
    are not installed in the interpreter (a source checkout on PYTHONPATH, a git worktree): the
    kernel must record with the same ``grader`` package that decodes its records. Inside the
    sandbox such a folder holds nothing but the two read-only packages (see :func:`_parents`)."""
    installed = (Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve())
    roots: list[str] = []
    for package in _package_dirs():
        if not any(package.is_relative_to(p) for p in installed) and str(package.parent) not in roots:
            roots.append(str(package.parent))
    return roots


def _package_dirs() -> list[Path]:
    """Where the d2lite and grader packages live (found without importing them: d2lite imports torch)."""
    dirs = []
    for name in ("d2lite", "grader"):
        spec = importlib.util.find_spec(name)
        dirs += [Path(p).resolve() for p in ((spec and spec.submodule_search_locations) or [])]
    return dirs


def _ro_dirs() -> list[Path]:
    """Read-only directories the kernel needs: system, interpreter, virtualenv, our packages."""
    dirs = [Path("/usr"), Path("/etc")]
    for root in ("/bin", "/sbin", "/lib", "/lib32", "/lib64"):
        if Path(root).exists() and not Path(root).is_symlink():
            dirs.append(Path(root))
    dirs += [Path(sys.base_prefix).resolve(), Path(sys.prefix), Path(sys.prefix).resolve()]
    dirs += _package_dirs()
    unique: list[Path] = []
    for d in dirs:
        if d.exists() and d not in unique and not any(d.is_relative_to(u) for u in unique):
            unique.append(d)
    return unique


def _parents(paths: list[Path]) -> list[str]:
    """bwrap arguments creating every ancestor of ``paths`` world-readable (bwrap's are 0700)."""
    seen: list[Path] = []
    for path in paths:
        for parent in reversed(path.parents):
            if parent not in (Path("/"), Path("/tmp")) and parent not in seen and parent not in paths:
                seen.append(parent)
    args: list[str] = []
    for parent in seen:
        args += ["--perms", "0755", "--dir", str(parent)]
    return args


def kernel_command(argv: list[str], *, workdir: Path | None, sockdir: Path | None,
                   limits: Limits, unsafe: bool, env: dict[str, str] | None = None,
                   memory_in_cgroup: bool = False, processes_in_cgroup: bool = False) -> list[str]:
    """The command line that runs ``argv`` (a Python kernel) isolated, or just rate-limited.
    ``memory_in_cgroup``: a control group bounds the kernel's memory, so a GPU may be passed in
    without RLIMIT_AS (:func:`gpu_devices`). ``processes_in_cgroup``: the group's ``pids.max`` bounds
    its processes, so RLIMIT_NPROC is left unset (:func:`counts_processes_by_uid`)."""
    if unsafe:  # e.g. a student's own machine: limits where prlimit exists (not on macOS)
        limited = _rlimits(limits, by_uid=False, address_space=not gpu_devices())
        return (limited if shutil.which("prlimit") else []) + argv
    ro = _ro_dirs()
    rw = [Path(p).resolve() for p in (workdir, sockdir) if p is not None]
    cmd = ["bwrap", "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
           "--unshare-cgroup-try", "--die-with-parent", "--new-session", "--clearenv"]
    uid = kernel_uid()
    if uid is None:
        cmd += ["--unshare-user"]
    else:
        cmd += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    size = str(limits.max_file_mb * 1024 * 1024)
    cmd += ["--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--size", size,
            "--tmpfs", "/tmp", "--perms", "1777", "--size", size, "--tmpfs", "/dev/shm"]
    cmd += _parents(ro + rw)
    for d in ro:
        cmd += ["--ro-bind", str(d), str(d)]
    for root in ("/bin", "/sbin", "/lib", "/lib32", "/lib64"):
        if Path(root).is_symlink():
            cmd += ["--symlink", os.readlink(root), root]
    for d in rw:
        cmd += ["--bind", str(d), str(d)]
    gpus = gpu_devices() if memory_in_cgroup else []
    for dev in gpus:  # GPU machines: the course's GPU notebooks need the devices and /sys
        cmd += ["--dev-bind", dev, dev]
    if gpus:
        cmd += ["--ro-bind", "/sys", "/sys"]
    cmd += ["--chdir", str(workdir or "/tmp")]
    for name, value in (env or {}).items():
        cmd += ["--setenv", name, value]
    if uid is not None:
        cmd += ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups",
                "--inh-caps=-all", "--bounding-set=-all", "--"]
    return cmd + _rlimits(limits, by_uid=counts_processes_by_uid(processes_in_cgroup),
                          address_space=not gpus) + argv


def sandboxed_rlimits(limits: Limits, *, memory_in_cgroup: bool = False,
                      processes_in_cgroup: bool = False) -> list[tuple[str, int, int]]:
    """The limits :func:`kernel_command` gives a sandboxed kernel (through prlimit), as :func:`rlimit_values`."""
    gpus = gpu_devices() if memory_in_cgroup else []
    return rlimit_values(limits, by_uid=counts_processes_by_uid(processes_in_cgroup), address_space=not gpus)


def hand_over(path: Path) -> None:
    """Make ``path`` (and everything in it) the kernel uid's, so the kernel may write there. Only for
    folders just made and filled by the grader: it walks them, which is safe only before a kernel ran."""
    uid = kernel_uid()
    if uid is None:
        return
    os.chown(path, uid, uid)
    if path.is_dir():
        for root, dirs, files in os.walk(path):
            for name in dirs + files:
                os.chown(os.path.join(root, name), uid, uid, follow_symlinks=False)


def new_folder(parent: Path, prefix: str, first: int = 1) -> Path:
    """A new empty folder ``parent/<prefix>N``, N >= ``first``, made here (an existing name is never reused)."""
    parent.mkdir(parents=True, exist_ok=True)
    n = first
    while True:
        try:
            (parent / f"{prefix}{n}").mkdir()
            return parent / f"{prefix}{n}"
        except FileExistsError:
            n += 1


def copy_new(source: Path, target: Path) -> None:
    """Copy ``source`` to ``target``, a file this creates: never through a link, never over a file."""
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with open(source, "rb") as src, os.fdopen(fd, "wb") as dst:
        shutil.copyfileobj(src, dst)


@functools.lru_cache(maxsize=1)
def _font_list() -> Path | None:
    """This process's matplotlib font list (matplotlib builds it on first import, once per user)."""
    try:
        from matplotlib import font_manager, get_cachedir

        path = Path(get_cachedir()) / f"fontlist-v{font_manager.FontManager.__version__}.json"
    except Exception:  # noqa: BLE001 - no matplotlib, or no usable cache: kernels build their own
        return None
    return path if path.is_file() else None


def seed_font_list(workdir: Path) -> None:
    """Give a kernel the font list the grader already has, in its new ``workdir``: every fresh kernel
    would otherwise scan the system's fonts again when it first imports pyplot (about 0.4 s on a
    2-core laptop)."""
    source = _font_list()
    if source is not None:
        mpl_config_dir(workdir).mkdir()
        copy_new(source, mpl_config_dir(workdir) / source.name)
