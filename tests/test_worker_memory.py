"""Each local grading worker is bounded in memory, as each kernel is (grader/running/worker_memory.py).

The allocations are real, made by real spawned worker processes: a worker that goes past its bound is
stopped (the out-of-memory killer in its cgroup, or MemoryError under the RLIMIT_DATA fallback), only
the job that allocated fails, and the runner grades the next job. What a batch does with a lost
worker (grade its jobs again alone, fail the one that loses it twice) is tested by
tests/test_attacks_resources.py::test_a_killed_worker_fails_only_its_submission_and_the_batch_completes.
"""
from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

from grader.engine.isolation.cgroups import cgroup_support
from grader.running.runner import LocalRunner, WorkerLost
from grader.running.worker_memory import WORKER_MEMORY_MB, bound_by_rlimit

BOUND_MB = 512    # the bound the tests give their workers
OVER_MB = 1024    # what the greedy job writes: twice the bound, far below the machine's memory


def write_megabytes(mb: int) -> int:
    """Allocate and write ``mb`` MB (every page touched, so it is resident), then return its length."""
    block = b"\1" * (mb * 2**20)
    return len(block) // 2**20


def memory_group(_=None) -> str:
    """The path of this process's memory cgroup (v1 ``memory`` line, else the v2 line)."""
    lines = Path("/proc/self/cgroup").read_text().splitlines()
    memory = [line for line in lines if ":memory:" in line] or [line for line in lines if line.startswith("0::")]
    return memory[0].split(":", 2)[2]


def test_a_worker_writing_past_its_bound_is_stopped_and_the_runner_grades_the_next_job():
    expected = WorkerLost if cgroup_support()[0] else MemoryError
    with LocalRunner(workers=1, memory_mb=BOUND_MB) as runner:
        assert runner.result(runner.submit(write_megabytes, 64)) == 64  # under the bound: an ordinary job
        with pytest.raises(expected):
            runner.result(runner.submit(write_megabytes, OVER_MB))
        if expected is WorkerLost:
            runner.replace()  # what grader.running.batch does with a lost worker
        assert runner.result(runner.submit(write_megabytes, 64)) == 64


@pytest.mark.skipif(not cgroup_support()[0], reason="no cgroup can be made here: workers fall back to RLIMIT_DATA")
def test_with_cgroups_each_worker_sits_in_a_memory_group_of_its_own_beside_the_kernels():
    with LocalRunner(workers=2, memory_mb=BOUND_MB) as runner:
        groups = {runner.result(runner.submit(memory_group, None)) for _ in range(4)}
    assert all(Path(group).name.startswith("course-grader-") and group.endswith("-worker") for group in groups)
    assert Path(next(iter(groups))).parent.as_posix() != "/" and memory_group() not in groups


def test_without_cgroups_the_worker_falls_back_to_its_own_data_limit():
    """The fallback's allocation fails in the worker (MemoryError) and the worker stays usable."""
    pool = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"),
                               initializer=bound_by_rlimit, initargs=(BOUND_MB,))
    with pool:
        with pytest.raises(MemoryError):
            pool.submit(write_megabytes, OVER_MB).result()
        assert pool.submit(write_megabytes, 64).result() == 64


def test_a_kernel_started_by_a_worker_under_the_fallback_gets_its_own_memory_budget_back():
    """The worker's soft RLIMIT_DATA is inherited by what it starts; the kernel's prlimit sets its own."""
    import subprocess
    import sys

    from grader.engine.isolation.sandbox import Limits, kernel_command

    writes = [sys.executable, "-c", f"print(len(b'1' * ({OVER_MB} * 2**20)) // 2**20)"]
    command = kernel_command(writes, workdir=None, sockdir=None, limits=Limits(), unsafe=True)
    done = subprocess.run(command, capture_output=True, text=True, preexec_fn=lambda: bound_by_rlimit(BOUND_MB))
    assert done.stdout.strip() == str(OVER_MB), done.stderr[-300:]


def test_a_worker_that_cannot_join_its_group_refuses_to_grade(monkeypatch):
    """Fail closed, as a kernel whose group cannot be made is not started: the submission stays pending."""
    from grader.engine.isolation.cgroups import KernelGroup
    from grader.engine.isolation.sandbox import SandboxUnavailable
    from grader.running import worker_memory

    def refused(*_):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(worker_memory, "cgroup_support", lambda: (True, "cgroup v1 (test)"))
    monkeypatch.setattr(KernelGroup, "for_memory", classmethod(refused))
    monkeypatch.setattr(worker_memory, "_refusal", [""])
    assert worker_memory.bound_worker(BOUND_MB) == ""
    with pytest.raises(SandboxUnavailable, match="memory control group"):
        worker_memory.check_bounded()


def test_the_default_bound_leaves_room_for_the_reading_child_and_the_messages():
    from grader.engine.reading.bounds import READ_MEMORY_MB

    assert WORKER_MEMORY_MB >= READ_MEMORY_MB + 1024
