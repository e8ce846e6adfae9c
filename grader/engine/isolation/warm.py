"""Warm kernel starts: a sandboxed kernel forked from a template that has already imported torch and ipykernel.

A cold sandboxed kernel spends about 2 s of CPU (Python, ipykernel, ``import torch``) before its first cell.
A warm one is made in two halves, so that the sandbox stays bubblewrap's:

1. The grader starts bubblewrap exactly as for a cold kernel (same namespaces, mounts, uid, limits, control
   group), but what runs inside is a *holder*, a shell that waits on its stdin (:data:`HOLDER_ARGV`).
2. The template (:mod:`.zygote`, one per kernel environment, shared by a grader process and the processes it
   starts, :func:`template_for`; a pool of grading workers has it started beforehand, :func:`prestart`) forks the kernel into the
   holder's namespaces and control group, drops its privileges as ``setpriv`` does, sets the limits
   ``prlimit`` sets, and runs ipykernel. When the kernel ends, the holder ends the same way, so the grader
   sees its exit status as it sees a cold kernel's.

Where any of this is not possible (no pidfd, the template fails to start, a request fails), the kernel starts
cold, which is isolated the same way, and one line on stderr says why; that process's later kernels start cold
too. Warm starts need a root grader (:func:`warm_enabled`). ``COURSE_GRADER_WARM_KERNELS=0`` turns them off. ``tests/test_warm_kernels.py`` checks that a warm kernel sees what a cold one sees.
"""
from __future__ import annotations

import atexit
import hashlib
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from .cleanup import owned_folder

__all__ = ["HOLDER_ARGV", "WarmUnavailable", "warm_enabled", "template_for", "prestart", "give_up", "find_holder",
           "read_end"]

SWITCH = "COURSE_GRADER_WARM_KERNELS"
# {key: socket path} of the templates this process and its ancestors started: processes it starts (grading
# workers get the grader's environment) use them. Never passed to a kernel (sandbox.PASSED_ENV).
REGISTRY = "COURSE_GRADER_WARM_TEMPLATES"
# The holder: waits for the template's child to say how the kernel ended, then ends the same way (and the sandbox
# with it). The grader reads its own copy of that line (Kernel.alive), since the kernel can reach the holder.
HOLDER_ARGV = ["/bin/sh", "-c", 'read end; case "$end" in k*) kill -"${end#k}" $$;; x*) exit "${end#x}";; esac; exit 1',
               "course-grader-kernel-holder"]
# Variables that differ from one kernel to the next; every other one is fixed when the template starts.
PER_KERNEL = ("HOME", "TMPDIR", "IPYTHONDIR", "MPLCONFIGDIR", "JUPYTER_RUNTIME_DIR", "COURSE_GRADER_RECORD")
ZYGOTE = Path(__file__).with_name("zygote.py")
REQUEST_TIMEOUT_S = 120.0  # the first request waits while the template imports torch: a safety net only
_told: set[str] = set()
_failed: list[str] = []  # why a warm start failed in this process: its later kernels start cold


class WarmUnavailable(RuntimeError):
    """A warm start was not possible; the kernel starts cold."""


def warm_enabled() -> bool:
    """Whether sandboxed kernels start warm here: on, with pidfds, and the grader root. A grader that is not root
    has its kernels in bubblewrap's user namespaces, which a process outside them cannot join (Linux asks for
    capabilities there that the template's child lacks): its kernels start cold."""
    return (os.environ.get(SWITCH, "1") != "0" and hasattr(os, "pidfd_open") and os.geteuid() == 0
            and not _failed)


def give_up(why: str) -> None:
    """A warm start failed: this process's later kernels start cold (one line on stderr says why)."""
    _failed.append(why)
    tell_once(why)


def tell_once(why: str) -> None:
    """Say on stderr, once per process and reason, that kernels start cold."""
    if why not in _told:
        _told.add(why)
        print(f"course-grader: kernels start cold ({why}); {SWITCH}=0 skips the attempt", file=sys.stderr)


class Template:
    """One running :mod:`.zygote`, serving this process (and processes forked from it) by its socket path."""

    def __init__(self, env: dict[str, str] | None, path: str | None = None):
        """Start a template with environment ``env``, or (``path``) use one an ancestor started."""
        self.owner = os.getpid()
        if path is not None:
            self.path, self.process, self.folder = path, None, None
            return
        self.folder = owned_folder("warm")
        self.path = str(self.folder / "s")
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(self.path)
        listener.listen(16)
        life_r, self.lifeline = os.pipe()
        os.set_inheritable(self.lifeline, False)
        code = "import runpy, sys; runpy.run_path(sys.argv[1], run_name='__main__')"
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-c", code, str(ZYGOTE), str(listener.fileno()), str(life_r)],
                pass_fds=(listener.fileno(), life_r), env=env, cwd="/", stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        finally:
            listener.close()
            os.close(life_r)
        atexit.register(self.close)

    def alive(self) -> bool:
        if self.process is None or os.getpid() != self.owner:
            return Path(self.path).exists()
        return self.process.poll() is None

    def fork_kernel(self, holder_pid: int, status_fds: tuple[int, int], request: dict) -> None:
        """Ask for a kernel in the sandbox of ``holder_pid``; ``status_fds``: the write ends of the holder's and
        the grader's status pipes. Raises WarmUnavailable when it was not made."""
        try:
            holder = os.pidfd_open(holder_pid)
        except OSError as exc:
            raise WarmUnavailable(f"the holder process is gone: {exc}") from None
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
                conn.settimeout(REQUEST_TIMEOUT_S)
                conn.connect(self.path)
                _check_peer(conn)
                socket.send_fds(conn, [json.dumps({**request, "holder_pid": holder_pid}).encode()],
                                [holder, *status_fds])
                conn.shutdown(socket.SHUT_WR)
                reply = b""
                while chunk := conn.recv(4096):
                    reply += chunk
        except OSError as exc:
            raise WarmUnavailable(f"the kernel template did not answer: {exc}") from None
        finally:
            os.close(holder)
        if reply != b"ok":
            raise WarmUnavailable(reply.decode(errors="replace") or "the kernel template said nothing")

    def close(self) -> None:
        if self.process is None or os.getpid() != self.owner:
            return
        try:
            os.close(self.lifeline)
        except OSError:
            pass
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        for name in (self.path,):
            try:
                os.unlink(name)
            except OSError:
                pass
        try:
            self.folder.rmdir()
        except OSError:
            pass


_templates: dict[str, Template] = {}


def _check_peer(conn: socket.socket) -> None:
    """The process at the other end must run as this one's user (no other user's socket in a reused path)."""
    import struct

    _, uid, _ = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
    if uid != os.geteuid():
        raise OSError(f"the template's socket belongs to uid {uid}")


def _registry() -> dict[str, str]:
    """The registered templates, {key: socket path}; only paths in a folder of this user's that nobody else may
    open (anything else in the variable is ignored)."""
    try:
        entries = json.loads(os.environ.get(REGISTRY) or "{}")
    except ValueError:
        return {}
    if not isinstance(entries, dict):
        return {}
    good = {}
    for key, path in entries.items():
        if isinstance(key, str) and isinstance(path, str) and os.path.isabs(path):
            try:
                folder = os.lstat(os.path.dirname(path))
            except OSError:
                continue
            if folder.st_uid == os.geteuid() and folder.st_mode & 0o7777 == 0o700 and not os.path.islink(path):
                good[key] = path
    return good


def _key(env: dict[str, str]) -> tuple[str, dict[str, str]]:
    fixed = {k: v for k, v in env.items() if k not in PER_KERNEL}
    return hashlib.sha256(json.dumps(sorted(fixed.items())).encode()).hexdigest()[:16], fixed


def template_for(env: dict[str, str]) -> Template:
    """The template for kernels with environment ``env``: this process's, else one an ancestor registered in
    :data:`REGISTRY`, else a new one (started here, registered for the processes this one starts)."""
    key, fixed = _key(env)
    template = _templates.get(key)
    if template is not None and template.alive():
        return template
    inherited = _registry().get(key)
    if inherited and Path(inherited).exists() and (template is None or template.path != inherited):
        template = Template(None, path=inherited)
    else:
        template = Template({**fixed, "HOME": "/"})
    _templates[key] = template
    os.environ[REGISTRY] = json.dumps({**_registry(), key: template.path})
    return template


def prestart(kernel_vars: dict[str, str]) -> None:
    """Start (in the background) the template for kernels with environment ``kernel_vars``, where warm starts
    are on, so that processes started after this (a pool's workers) share it instead of each starting one."""
    if warm_enabled():
        try:
            template_for(kernel_vars)
        except OSError as exc:
            tell_once(f"the kernel template could not start: {exc}")


def read_end(fd: int) -> str | None:
    """How the kernel ended, from the grader's status pipe ``fd`` (non-blocking): ``x<code>`` or ``k<signal>``;
    ``"lost"`` when the template's child ended without saying (the template was killed); None while it runs."""
    try:
        data = os.read(fd, 64)
    except BlockingIOError:
        return None
    line = data.decode(errors="replace").strip()
    return line if line[:1] in ("x", "k") and line[1:].lstrip("-").isdigit() else "lost"


def find_holder(bwrap: subprocess.Popen, timeout: float) -> int:
    """The host pid of the holder shell that ``bwrap`` (the sandbox's outer bubblewrap) runs, once it runs (its
    command line is then :data:`HOLDER_ARGV`). Raises WarmUnavailable when bubblewrap ends first, or after
    ``timeout`` seconds."""
    wanted = "\0".join(HOLDER_ARGV).encode()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and bwrap.poll() is None:
        for pid in _descendants(bwrap.pid):
            try:
                if Path(f"/proc/{pid}/cmdline").read_bytes().rstrip(b"\0") == wanted:
                    return pid
            except OSError:
                continue
        time.sleep(0.002)
    raise WarmUnavailable("the sandbox's holder process did not start")


def _descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                stat = Path(f"/proc/{entry.name}/stat").read_text()
            except OSError:
                continue
            children.setdefault(int(stat.rsplit(")", 1)[1].split()[1]), []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        for child in children.get(pid, []):
            found.append(child)
            todo.append(child)
    return found
