"""A helper process that imports PyTorch once and then, on request, forks a process that runs a
Python script, so that ``run_distributed``'s launcher starts in milliseconds instead of the second
or two that a new Python spends importing PyTorch.

The caller (:func:`run_script`) starts the helper the first time (``python -m d2lite.script_forker``,
in a session of its own) and talks to it over its stdin and stdout, one JSON object per line, one
request at a time: ``{"argv", "env", "cwd", "log"}`` in; ``{"pid"}`` once the process is forked, then
``{"status"}`` when it has ended (as ``subprocess.Popen.returncode``: the exit status, or minus the
signal that killed it). The forked process starts a session of its own (its pid is its process
group's), so the caller can stop it and everything it started with one ``killpg``. The helper ends
when its stdin closes, that is when the caller's process has ended; it kills a script still running.

Why not multiprocessing's fork server: every process it forks first imports the caller's main script
again (as ``__mp_main__``), which runs a script's top level a second time unless the script guards it
with ``if __name__ == "__main__"``. Linux only (``os.pidfd_open``); :data:`AVAILABLE` says so.
"""
from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import threading
import time

AVAILABLE = hasattr(os, "pidfd_open") and hasattr(os, "fork")

# What the helper imports before it forks anything.
PRELOAD = ("torch", "torch.distributed", "torch.multiprocessing", "torch.nn.functional")

_server: subprocess.Popen | None = None
_unread = bytearray()          # bytes read from the helper after the last full line
_lock = threading.Lock()       # one request at a time
_ENDED = ("the helper process that forks run_distributed's launcher ended unexpectedly (its error, if "
          "any, is in this Python's stderr: for a notebook, the terminal that runs JupyterLab); call "
          "again to start a new helper")


def run_script(argv: list[str], *, env: dict[str, str], cwd: str, log: str, seconds: float) -> int | None:
    """Run the Python script ``argv[0]`` with ``sys.argv == argv``, environment ``env`` and working
    directory ``cwd``, its stdout and stderr appended to the file ``log``, in a process forked by
    the helper. Returns its exit status, or None when it had not ended after ``seconds`` (it is
    then killed, with every process it started)."""
    request = {"argv": list(argv), "env": dict(env), "cwd": cwd, "log": log}
    deadline = time.monotonic() + seconds
    with _lock:
        server = _running_server()
        pid, status, finished = None, None, False
        try:
            try:
                server.stdin.write(json.dumps(request).encode() + b"\n")
                server.stdin.flush()
            except BrokenPipeError:
                raise RuntimeError(_ENDED) from None
            pid = _reply(server, deadline)["pid"]
            status = _reply(server, deadline)["status"]
            finished = True
        except TimeoutError:
            pass
        finally:
            if not finished:  # timed out, interrupted, or the helper failed: stop what runs
                if pid is not None:
                    _kill_group(pid)
                _stop_server()
        return status


def _running_server() -> subprocess.Popen:
    """The helper, started now if it is not running (first call, or it ended)."""
    global _server
    if _server is not None and _server.poll() is None:
        return _server
    _unread.clear()
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the folder that holds d2lite/
    env = {**os.environ, "OMP_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH")) if p)}
    _server = subprocess.Popen([sys.executable, "-m", "d2lite.script_forker"], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, env=env, bufsize=0,
                               start_new_session=True)
    return _server


def _reply(server: subprocess.Popen, deadline: float) -> dict:
    """The helper's next line, as a dict; TimeoutError at ``deadline``, RuntimeError if it ended."""
    fd = server.stdout.fileno()
    while b"\n" not in _unread:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            raise TimeoutError
        chunk = os.read(fd, 65536)
        if not chunk:
            raise RuntimeError(_ENDED)
        _unread.extend(chunk)
    line, _, rest = bytes(_unread).partition(b"\n")
    _unread[:] = rest
    return json.loads(line)


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _stop_server() -> None:
    """End the helper (a new one starts with the next request)."""
    global _server
    if _server is not None:
        _server.kill()
        _server.wait()
        _server.stdin.close()
        _server.stdout.close()
        _server = None
    _unread.clear()


# --- The helper's side ---------------------------------------------------------------------------

def _serve() -> None:
    """Import PyTorch, then fork one process per request until stdin closes."""
    import importlib
    for name in PRELOAD:
        importlib.import_module(name)
    pending = bytearray()
    while True:
        while b"\n" not in pending:
            chunk = os.read(0, 65536)
            if not chunk:
                return
            pending.extend(chunk)
        line, _, rest = bytes(pending).partition(b"\n")
        pending[:] = rest
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _run_forked(request)
        _answer({"pid": pid})
        status = _wait_or_orphaned(pid, pending)
        if status is None:  # the caller has gone: nobody waits for this process any more
            _kill_group(pid)
            os.waitpid(pid, 0)
            return
        _answer({"status": status})


def _answer(reply: dict) -> None:
    os.write(1, json.dumps(reply).encode() + b"\n")


def _wait_or_orphaned(pid: int, pending: bytearray) -> int | None:
    """Wait until process ``pid`` ends (its status) or stdin closes (None)."""
    pidfd = os.pidfd_open(pid)
    try:
        while True:
            ready = select.select([pidfd, 0], [], [])[0]
            if pidfd in ready:
                return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
            chunk = os.read(0, 65536)
            if not chunk:
                return None
            pending.extend(chunk)
    finally:
        os.close(pidfd)


def _run_forked(request: dict) -> None:
    """In the forked process: run the script as ``__main__`` and exit with its status."""
    code = 1
    try:
        os.setsid()
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        null = os.open(os.devnull, os.O_RDONLY)
        log = os.open(request["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        os.dup2(null, 0)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(null)
        os.close(log)
        sys.stdin = open(0, closefd=False)
        sys.stdout = open(1, "w", buffering=1, closefd=False)
        sys.stderr = open(2, "w", buffering=1, closefd=False)
        sys.argv = list(request["argv"])
        import runpy
        runpy.run_path(sys.argv[0], run_name="__main__")
        code = 0
    except SystemExit as stop:  # as a Python's own exit treats it
        if stop.code is None or isinstance(stop.code, int):
            code = stop.code or 0
        else:
            print(stop.code, file=sys.stderr)
    except BaseException:
        import traceback
        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        os._exit(code)


if __name__ == "__main__":
    _serve()
