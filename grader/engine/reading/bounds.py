"""Read a notebook's answers in a child process with a wall-clock and a memory limit.

The caps of :mod:`grader.engine.reading.limits` keep what is parsed small, but not every cost of reading
is linear in it (a function nested 38 deep around a 17 KB literal, under every cap, took 11 s to read;
ten such cells, 35 s). So the grading worker does not read in its own process. Each notebook is read in a
process of its own, forked for it from a *reading server*: a Python the worker starts once
(``python -m grader.engine.reading.bounds --serve``) that imports the reading code and takes d2lite's
canonical forms (1 s to compute, computed once per worker) and then only forks. The forked reader sets
``RLIMIT_AS`` before it reads, and the worker kills the server and its reader past :data:`READ_TIMEOUT_S`
(the next notebook gets a new server). A reading that runs out of time or memory, or whose process dies,
flags every graded test of the notebook for a person (a finding: the test keeps the points its behaviour
earned); the grading goes on.

Why a server: a fresh interpreter per notebook cost 0.14-0.23 s of CPU per course notebook, most of it starting
Python and importing IPython; a reader forked from the server, 0.03-0.10 s (``make bench``, section reading:
2.7x less for the ten). Each reader still starts from the server's clean state: nothing one notebook's reading
leaves reaches the next.
The server has no student code in it and reads nothing but the requests of the worker that started it; it
ends with that worker (end of its input, and ``PR_SET_PDEATHSIG``).

Protocol (one line each way per notebook, JSON): the worker writes ``[memory_mb, [[role, source], ...]]``;
the server answers ``{"read": {test index: [answers, problems, certain]}}`` or ``{"status": exit status}``
(negative: the signal that ended the reader; :data:`OUT_OF_MEMORY`: it ran out of memory).
"""
from __future__ import annotations

import json
import os
import resource
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from .copies import _d2lite_functions, use_d2lite_forms
from .rules import Reading, exercises, test_cell_readings

__all__ = ["bounded_readings", "READ_TIMEOUT_S", "READ_MEMORY_MB", "OVER_LIMITS", "OUT_OF_MEMORY"]

READ_TIMEOUT_S = 60.0  # wall-clock seconds to read one notebook's answers; a cell may run for 300
READ_MEMORY_MB = 1024  # address space of the reading process
OVER_LIMITS = "code the grader cannot read: the answers' source, which {what} (the grader's limit for reading it)"
OUT_OF_MEMORY = 75     # a reader's exit status when it raised MemoryError
ROOT = Path(__file__).resolve().parents[3]  # the folder that holds the grader package


def _flag_all(cells: list[tuple[str, str]], what: str) -> dict[int, tuple[list[int], Reading]]:
    """Every test of the notebook, with the one finding that says why its answers were not read."""
    return {index: (answers, Reading([OVER_LIMITS.format(what=what)])) for index, answers in exercises(cells).items()}


def bounded_readings(cells: list[tuple[str, str]], timeout_s: float = READ_TIMEOUT_S,
                     memory_mb: int = READ_MEMORY_MB) -> dict[int, tuple[list[int], Reading]]:
    """:func:`grader.engine.reading.rules.test_cell_readings` of ``cells`` ((role, source) of every cell),
    read in a process that may use ``memory_mb`` of address space and ``timeout_s`` seconds.
    Never raises for what the student wrote: over a limit, every test gets a finding instead."""
    with _LOCK:
        reply = _server().ask(json.dumps([memory_mb, cells]), timeout_s)
    if reply is None:
        return _flag_all(cells, f"took longer than {timeout_s:g} s to read")
    if "read" not in reply:
        status = reply["status"]
        what = (f"needed more than {memory_mb:,} MB to read" if status in (OUT_OF_MEMORY, -signal.SIGKILL)
                else f"stopped the process that reads it (exit status {status})")
        return _flag_all(cells, what)
    return {int(index): (answers, Reading(problems, certain))
            for index, (answers, problems, certain) in reply["read"].items()}


# -- the worker's side: one server per process, started when first needed ----------------------------

_LOCK = threading.Lock()
_SERVERS: list["_Server"] = []  # this process's server, while it lives


class _Server:
    """A running reading server (``python -m grader.engine.reading.bounds --serve``)."""

    def __init__(self):
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
        self.owner = os.getpid()
        self.process = subprocess.Popen([sys.executable, "-m", "grader.engine.reading.bounds", "--serve",
                                         str(os.getpid())], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL, env=env, start_new_session=True)
        self.pending = b""
        try:
            self._send(json.dumps(_d2lite_functions()))
        except BrokenPipeError:  # it ended at once: the first request says how
            pass

    def usable(self) -> bool:
        return self.owner == os.getpid() and self.process.poll() is None

    def ask(self, request: str, timeout_s: float) -> dict | None:
        """The server's answer to ``request``; None when none came within ``timeout_s`` (the server is then
        ended); ``{"status": ...}`` when the server itself ended without answering."""
        deadline = time.monotonic() + timeout_s
        try:
            self._send(request)
            line = self._line(deadline)
        except BrokenPipeError:
            line = b""
        if line is None:
            self.end()
            return None
        if not line:  # the server ended (it ran out of memory holding the request, or was killed)
            self.end()
            return {"status": self.process.returncode}
        return json.loads(line)

    def _send(self, text: str) -> None:
        self.process.stdin.write(text.encode() + b"\n")
        self.process.stdin.flush()

    def _line(self, deadline: float) -> bytes | None:
        """The next line from the server (b"" when it closed its output), None past ``deadline``."""
        out = self.process.stdout.fileno()
        while b"\n" not in self.pending:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([out], [], [], left)[0]:
                return None
            chunk = os.read(out, 1 << 20)
            if not chunk:
                return b""
            self.pending += chunk
        line, _, self.pending = self.pending.partition(b"\n")
        return line

    def end(self) -> None:
        """Kill the server and the reader it forked (they are a process group of their own)."""
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except OSError:
            pass
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            try:
                stream.close()
            except OSError:
                pass
        if self in _SERVERS:
            _SERVERS.remove(self)


def _server() -> _Server:
    """This process's reading server, started (again) when there is none, or it ended, or it is a forked
    parent's."""
    if not (_SERVERS and _SERVERS[0].usable()):
        if _SERVERS and _SERVERS[0].owner == os.getpid():
            _SERVERS[0].end()
        _SERVERS[:] = [_Server()]
    return _SERVERS[0]


# -- the server's side ---------------------------------------------------------------------------

def _serve(owner: int) -> None:
    """The server: d2lite's forms on the first line of stdin, then one request per line, each read in a
    forked reader; one answer per line on stdout. Ends at the end of its input, or with ``owner``."""
    from IPython.core.inputtransformer2 import TransformerManager  # noqa: F401 (imported before any limit)

    _die_with(owner)
    use_d2lite_forms(json.loads(sys.stdin.readline()))
    for request in sys.stdin:
        sys.stdout.write(json.dumps(_read_in_a_fork(request)) + "\n")
        sys.stdout.flush()


def _read_in_a_fork(request: str) -> dict:
    """Fork a reader for one request; its answer, or the status it ended with."""
    results, written = os.pipe()
    server = os.getpid()
    pid = os.fork()
    if pid == 0:
        os.close(results)
        _die_with(server)
        quiet = os.open(os.devnull, os.O_RDWR)  # the server's input and answers are its own: nothing strays there
        os.dup2(quiet, 0)
        os.dup2(quiet, 1)
        os._exit(_reader(request, written))
    os.close(written)
    with os.fdopen(results, "rb") as stream:
        data = stream.read()
    status = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    return {"read": json.loads(data)} if status == 0 else {"status": status}


def _reader(request: str, written: int) -> int:
    """In the forked reader: read, under ``RLIMIT_AS``, and write the readings to ``written``; the exit status."""
    try:
        memory_mb, pairs = json.loads(request)
        limit = int(memory_mb) * 2**20
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        read = test_cell_readings([tuple(pair) for pair in pairs])
        data = json.dumps({index: [answers, reading.problems, reading.certain]
                           for index, (answers, reading) in read.items()}).encode()
        with os.fdopen(written, "wb") as stream:
            stream.write(data)
    except MemoryError:
        return OUT_OF_MEMORY
    except BaseException:  # noqa: BLE001 - any other failure is the status the worker reports
        return 1
    return 0


def _die_with(parent: int) -> None:
    """Linux: end with ``parent`` (SIGKILL when it dies), or now if it is gone already: the server with the
    worker that started it, a reader with its server."""
    if sys.platform.startswith("linux"):
        _libc().prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:
        os._exit(1)


def _libc():
    import ctypes

    if not _LIBC:
        _LIBC.append(ctypes.CDLL(None, use_errno=True))
    return _LIBC[0]


_LIBC: list = []


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve"]:
        _serve(int(sys.argv[2]))
    else:
        raise SystemExit("usage: python -m grader.engine.reading.bounds --serve WORKER_PID")
