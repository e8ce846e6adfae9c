"""A batch killed with SIGKILL leaves no process of its own behind.

The main process owns the fork server its workers come from, and they own their kernels: when it dies, each
worker kills itself (it watches the main process through a pidfd; a worker whose server dies gets the Linux
parent-death signal), the kernels die with their workers (bubblewrap's --die-with-parent), the server ends
once the main process and all its workers have, and the multiprocessing resource tracker, left without
users, ends too.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

from classroom import answer_of, released_course, with_answer, write_inbox
from grader.engine.isolation.warm import HOLDER_ARGV
from grader.intake.collect import collect

HOLDER = HOLDER_ARGV[-1]
GRADE = "import sys; from pathlib import Path; from grader.running.batch import autograde; autograde(Path(sys.argv[1]), workers=2)"


def alive(pids: list[int]) -> list[int]:
    found = []
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                found.append(pid)
        except psutil.NoSuchProcess:
            pass
    return found


def command_line(process: psutil.Process) -> str:
    try:
        return " ".join(process.cmdline())
    except (psutil.NoSuchProcess, psutil.ZombieProcess):
        return ""


def process_tree(batch_pid: int) -> tuple[list[int], int]:
    """One snapshot of the batch's processes: every descendant's pid (its workers, the fork server they come
    from, the resource tracker, the kernels, their warm template), and how many workers have a kernel below them.
    The workers are the fork server's children (or, where workers are spawned, the batch's own); kernels are
    counted by worker, since bubblewrap's command line names the kernel too and would count one kernel twice. A
    kernel shows as ipykernel (a cold start) or as its sandbox's holder (a warm start: the kernel itself then
    carries its template's command line)."""
    try:
        children = psutil.Process(batch_pid).children()
        descendants = [p.pid for p in psutil.Process(batch_pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        return [], 0
    workers = []
    for child in children:
        try:
            workers += child.children() if "forkserver" in command_line(child) else [child]
        except psutil.NoSuchProcess:
            pass
    with_a_kernel = 0
    for worker in workers:
        try:
            with_a_kernel += any("ipykernel" in command_line(p) or HOLDER in command_line(p)
                                 for p in worker.children(recursive=True))
        except psutil.NoSuchProcess:
            pass
    return descendants, with_a_kernel


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's")
def test_workers_kernels_and_the_resource_tracker_end_with_a_killed_batch(tmp_path):
    root = released_course(tmp_path / "course")
    # Two students whose answer waits: each worker holds its kernel until the batch is killed, so the snapshot
    # below sees both at once however fast or slow the machine (the fixture's own answers take a fraction of a
    # second: on a busy machine the two kernels could miss each other and the batch end unseen).
    waiting = with_answer("scale", answer_of("scale") + "\n\nimport time\ntime.sleep(3600)")
    collect(root, write_inbox(tmp_path / "inbox", {"ann": waiting, "bob": waiting}))
    batch = subprocess.Popen([sys.executable, "-c", GRADE, str(root)], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 900
        while time.monotonic() < deadline:  # until both workers run a kernel, seen in one snapshot
            descendants, workers_with_a_kernel = process_tree(batch.pid)
            if workers_with_a_kernel >= 2:
                break
            if batch.poll() is not None:
                pytest.fail(f"the batch ended (exit status {batch.returncode}) before two kernels were seen")
            time.sleep(0.2)
        else:
            pytest.fail("the batch did not start two kernels")
        assert len(descendants) >= 6  # 2 workers, their kernels (bwrap and python or holder), the fork server, the tracker
        os.kill(batch.pid, signal.SIGKILL)
        batch.wait()
        deadline = time.monotonic() + 300  # a safety net for a busy machine, not a measurement
        while alive(descendants) and time.monotonic() < deadline:
            time.sleep(0.2)
        left = alive(descendants)
        assert not left, [" ".join(psutil.Process(p).cmdline())[:120] for p in left]
    finally:
        for pid in alive([batch.pid, *[p.pid for p in psutil.Process(os.getpid()).children(recursive=True)]]):
            if pid != os.getpid():
                os.kill(pid, signal.SIGKILL)
