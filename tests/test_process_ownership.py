"""A batch killed with SIGKILL leaves no process of its own behind.

The main process owns its workers, and they own their kernels: when it dies, they die (Linux
parent-death signal for the workers, bubblewrap's --die-with-parent for the kernels), and the
multiprocessing resource tracker, left without users, ends too.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

from classroom import class_of, released_course, write_inbox
from grader.intake.collect import collect

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


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's")
def test_workers_kernels_and_the_resource_tracker_end_with_a_killed_batch(tmp_path):
    root = released_course(tmp_path / "course")
    collect(root, write_inbox(tmp_path / "inbox", class_of(root)))
    batch = subprocess.Popen([sys.executable, "-c", GRADE, str(root)], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 900
        while time.monotonic() < deadline:  # until both workers run a kernel
            family = psutil.Process(batch.pid).children(recursive=True)
            if sum("ipykernel" in " ".join(p.cmdline()) for p in family if p.is_running()) >= 2:
                break
            time.sleep(0.2)
        else:
            pytest.fail("the batch did not start two kernels")
        descendants = [p.pid for p in psutil.Process(batch.pid).children(recursive=True)]
        assert len(descendants) >= 5  # 2 workers, their kernels (bwrap and python), the tracker
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
