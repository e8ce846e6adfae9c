"""The warm-kernel template ("zygote"): a trusted process that has imported torch and ipykernel once, and
forks each sandboxed kernel from that state into a sandbox that bubblewrap has already built.

Run by path, never imported by the grader (its imports are the kernel's, nothing of the grader's)::

    python -c "import runpy, sys; runpy.run_path(sys.argv[1], run_name='__main__')" zygote.py LISTEN_FD LIFELINE_FD

(``-c`` rather than the script itself: ``sys.path[0]`` is then the working folder, as a kernel's is.)

It is started by :mod:`.warm` with a kernel's environment (without the per-kernel folders), imports
:data:`WARM_MODULES`, then serves requests on the listening Unix socket ``LISTEN_FD`` (in a folder only the
grader can open) until ``LIFELINE_FD`` reaches end of file (the grader process that started it is gone).

One request (JSON, with three file descriptors: a pidfd of the sandbox's holder process and the write ends of
the holder's and the grader's status pipes) makes one kernel:

1. A child C1 joins the holder's PID namespace for its children and forks the kernel, C2. C1 stays outside
   the sandbox, waits for C2 and writes how it ended (``x<code>`` or ``k<signal>``) to the status pipe, which
   the holder reads on its stdin and repeats as its own end (so the grader reads the kernel's end as before).
2. C2 moves itself into the kernel's control group(s), joins every other namespace of the holder (user,
   mount, network, IPC, UTS, cgroup: the sandbox bubblewrap made), takes that root as its own, and leaves
   privileges exactly as ``setpriv`` leaves a cold kernel's (its uid, no groups, no capabilities in any set,
   no new privileges), sets the resource limits that ``prlimit`` sets, replaces its whole environment,
   closes every inherited descriptor, and then runs ``ipykernel_launcher`` as ``python -m`` would.

C2 reports ``ok`` (or what failed) on a pipe before it runs anything of the kernel; the zygote passes that on
as its reply. The zygote never runs a student's code and holds nothing of the grader's: it is a fresh
interpreter with a clean environment, so what a kernel inherits from it is only the modules imported.
"""
from __future__ import annotations

import ctypes
import json
import os
import select
import signal
import socket
import sys

WARM_MODULES = ("torch", "ipykernel.kernelapp", "ipykernel.ipkernel", "ipykernel.zmqshell", "IPython",
                "encodings.idna")

CLONE = {"user": 0x10000000, "mnt": 0x00020000, "net": 0x40000000, "ipc": 0x08000000, "uts": 0x04000000,
         "cgroup": 0x02000000, "pid": 0x20000000}
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS, PR_CAP_AMBIENT = 1, 4, 24, 38, 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
_LINUX_CAPABILITY_VERSION_3 = 0x20080522
REPORT_TIMEOUT_S = 60.0  # a kernel enters its sandbox in milliseconds: a safety net

_libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _prctl(option: int, arg: int, what: str) -> None:
    _check(_libc.prctl(option, ctypes.c_ulong(arg), 0, 0, 0), what)


def _setns(fd: int, flags: int, what: str) -> None:
    _check(_libc.setns(fd, flags), f"setns({what})")


def _capset_zero() -> None:
    """Empty the effective, permitted and inheritable capability sets of this thread."""
    header = (ctypes.c_uint32 * 2)(_LINUX_CAPABILITY_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()
    _check(_libc.capset(header, data), "capset")


def _last_cap() -> int:
    with open("/proc/sys/kernel/cap_last_cap") as f:
        return int(f.read())


def _ns_differs(pid: int, name: str) -> bool:
    return os.stat(f"/proc/self/ns/{name}").st_ino != os.stat(f"/proc/{pid}/ns/{name}").st_ino


def _become_kernel(request: dict, holder_fd: int, report: int) -> None:
    """In C2: enter the sandbox and drop everything a cold kernel lacks. Raises on any failure."""
    for path in request["cgroup_procs"]:  # before the mount namespace hides /sys
        with open(path, "w") as f:
            f.write("0")
    pid = request["holder_pid"]
    names = [n for n in ("user", "mnt", "net", "ipc", "uts", "cgroup") if _ns_differs(pid, n)]
    if "mnt" not in names or "net" not in names:
        raise OSError("the holder is not in a sandbox of its own (same mount or network namespace)")
    flags = 0
    for name in names:
        flags |= CLONE[name]
    _setns(holder_fd, flags, "+".join(names))
    os.chdir("/")
    os.chroot(".")
    devnull = os.open("/dev/null", os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    _close_all_but(report)
    os.setsid()
    _prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, "PR_CAP_AMBIENT_CLEAR_ALL")
    for cap in range(_last_cap() + 1):
        _prctl(PR_CAPBSET_DROP, cap, f"PR_CAPBSET_DROP {cap}")
    uid = request["uid"]
    if uid is not None:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    _capset_zero()
    _prctl(PR_SET_NO_NEW_PRIVS, 1, "PR_SET_NO_NEW_PRIVS")
    # A change of uid resets both of these: dumpable as a cold kernel is after its exec (its own /proc files
    # readable), and gone when C1 is.
    _prctl(PR_SET_DUMPABLE, 1, "PR_SET_DUMPABLE")
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL, "PR_SET_PDEATHSIG")
    import resource
    for name, soft, hard in request["rlimits"]:
        resource.setrlimit(getattr(resource, name), (soft, hard))
    os.environ.clear()
    os.environ.update(request["env"])
    os.environ["PWD"] = request["workdir"]  # as bubblewrap's --chdir leaves it
    os.chdir(request["workdir"])
    _fresh_state(request["workdir"])


def _fresh_state(workdir: str) -> None:
    """What a fresh interpreter would not share with its siblings: sys.path[0], random seeds, secrets."""
    sys.path[0] = workdir  # ``python -m`` puts the working folder first
    import tempfile
    tempfile.tempdir = None
    if "numpy.random" in sys.modules:
        sys.modules["numpy.random"].seed()  # the legacy global generator: seeded from the OS at import
    if "multiprocessing" in sys.modules:
        sys.modules["multiprocessing"].current_process().authkey = os.urandom(32)
    if "torch" in sys.modules:
        sys.modules["torch"].seed()  # a fresh interpreter's default generator starts from a random seed
    # random: reseeded by its own fork handler.


def _run_kernel(argv: list[str]) -> None:
    import runpy
    sys.argv = ["ipykernel_launcher", *argv]
    code = 0
    try:
        runpy.run_module("ipykernel_launcher", run_name="__main__", alter_sys=True)
    except SystemExit as end:
        code = end.code if isinstance(end.code, int) else (0 if end.code is None else 1)
    except BaseException:  # noqa: BLE001 - the kernel's own failure: its exit status says so
        code = 1
    os._exit(code)


def _kernel_child(request: dict, holder_fd: int, status_fds: list[int]) -> None:
    """C1: fork the kernel into the holder's PID namespace, then report how it ended (to the holder and to the
    grader, which believes only its own pipe: the kernel can reach the holder)."""
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL, "PR_SET_PDEATHSIG")  # ends with the template (and so the kernel)
    try:
        _setns(holder_fd, CLONE["pid"], "pid")
    except OSError as exc:
        os.write(request["reply_fd"], f"error: {exc}".encode()[:4000])
        os._exit(1)
    report_r, report_w = os.pipe()
    kernel = os.fork()
    if kernel == 0:
        os.close(report_r)
        try:
            _become_kernel(request, holder_fd, report_w)
        except BaseException as exc:  # noqa: BLE001 - told to the grader, which starts a cold kernel
            os.write(report_w, f"error: {exc}".encode()[:4000])
            os._exit(1)
        os.write(report_w, b"ok")
        os.close(report_w)
        _run_kernel(request["argv"])
    os.close(report_w)
    report = b""
    while chunk := os.read(report_r, 4096):
        report += chunk
    os.write(request["reply_fd"], report or b"error: the kernel process ended before it reported")
    os.close(request["reply_fd"])
    _, status = os.waitpid(kernel, 0)
    end = f"k{os.WTERMSIG(status)}" if os.WIFSIGNALED(status) else f"x{os.waitstatus_to_exitcode(status)}"
    for fd in status_fds:
        try:
            os.write(fd, end.encode() + b"\n")
        except OSError:
            pass
    os._exit(0)


def _close_all_but(*keep: int) -> None:
    low = 3
    for fd in sorted(keep):
        os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, 1 << 16)


def _serve(conn: socket.socket) -> None:
    """One request: three descriptors (the holder's pidfd, the holder's and the grader's status pipes)."""
    conn.settimeout(REPORT_TIMEOUT_S)
    data, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
    reply_r = reply_w = watch = None
    try:
        if len(fds) != 3:
            conn.sendall(b"error: a request needs three descriptors")
            return
        holder_fd, *status_fds = fds
        request = json.loads(data)
        reply_r, reply_w = os.pipe()
        child = os.fork()
        if child == 0:
            try:
                request["reply_fd"] = reply_w
                _close_all_but(holder_fd, reply_w, *status_fds)
                _kernel_child(request, holder_fd, status_fds)
            finally:
                os._exit(1)
        watch = os.pidfd_open(child)  # the child stays a zombie until reaped (_reap): its pid cannot be reused
        os.close(reply_w)
        reply_w = None
        reply = b""
        while select.select([reply_r], [], [], REPORT_TIMEOUT_S)[0] and (chunk := os.read(reply_r, 4096)):
            reply += chunk
        if reply != b"ok":  # a child that failed, or hangs: it and its kernel end here (the kernel starts cold)
            signal.pidfd_send_signal(watch, signal.SIGKILL)
        conn.sendall(reply or b"error: the template's child did not report")
    finally:
        for fd in (*fds, reply_r, reply_w, watch):
            if fd is not None:
                os.close(fd)


def _reap() -> None:
    """Collect the template's children that have ended (C1s end with their kernels)."""
    try:
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass
    except ChildProcessError:
        pass


def main() -> None:
    listen_fd, lifeline = int(sys.argv[2]), int(sys.argv[3])
    # No parent-death signal here: Linux sends it when the *thread* that started this process ends (a Dask
    # worker's task thread), not the process. The lifeline's end of file says the process has ended.
    for name in WARM_MODULES:
        try:
            __import__(name)
        except ImportError:
            pass
    server = socket.socket(fileno=listen_fd)
    while True:
        ready, _, _ = select.select([server, lifeline], [], [], 1.0)
        _reap()
        if lifeline in ready:
            os._exit(0)
        if server not in ready:
            continue
        try:
            conn, _ = server.accept()
        except OSError:  # e.g. out of descriptors for a moment: the client times out and starts cold
            continue
        with conn:
            try:
                _serve(conn)
            except Exception as exc:  # noqa: BLE001 - one bad request; the template serves on
                try:
                    conn.sendall(f"error: {exc}".encode())
                except OSError:
                    pass


if __name__ == "__main__":
    main()
