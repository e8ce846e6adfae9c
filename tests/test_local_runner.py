"""Local grading workers: fresh processes that take the grader's environment as it is when their pool is made.

Workers are forked from multiprocessing's fork server (started once, with the engine and torch imported), so
a later pool's workers come from a server started long before: they must still see the environment of the
moment their pool was made, and nothing else of the caller's state, as spawned workers would.
"""
from __future__ import annotations

import os
import sys

import pytest

import grader.running.jobs
from grader.running.runner import LocalRunner, _pidfds, worker_context

SETTING = "COURSE_GRADER_TEST_SETTING"


def setting_in_worker(_job) -> tuple[str | None, int]:
    return os.environ.get(SETTING), os.getpid()


def worker_modules_in_caller_state(_job) -> tuple[str, ...]:
    return grader.running.jobs.WORKER_MODULES


def parent_of_worker(_job) -> int:
    return os.getppid()


def torch_already_in_worker(_job) -> bool:
    return "torch" in sys.modules  # this module imports no torch: only the fork server can have


def torch_threads_in_worker(_job) -> tuple[int, str | None]:
    import torch

    return torch.get_num_threads(), os.environ.get("OMP_NUM_THREADS")


def test_each_pool_sees_the_environment_of_the_moment_it_was_made(monkeypatch):
    monkeypatch.setenv(SETTING, "first")
    with LocalRunner(workers=1) as runner:
        first, first_pid = runner.result(runner.submit(setting_in_worker, None))
    monkeypatch.setenv(SETTING, "second")
    with LocalRunner(workers=1) as runner:
        second, second_pid = runner.result(runner.submit(setting_in_worker, None))
    monkeypatch.delenv(SETTING)
    with LocalRunner(workers=1) as runner:
        third, _ = runner.result(runner.submit(setting_in_worker, None))

    assert (first, second, third) == ("first", "second", None)
    assert os.getpid() not in (first_pid, second_pid) and first_pid != second_pid


def test_a_worker_inherits_no_state_of_the_caller(monkeypatch):
    monkeypatch.setattr(grader.running.jobs, "WORKER_MODULES", ("changed in the caller",))
    with LocalRunner(workers=1) as runner:
        seen = runner.result(runner.submit(worker_modules_in_caller_state, None))
    assert seen != ("changed in the caller",) and "grader.engine.grade" in seen


@pytest.mark.skipif(not sys.platform.startswith("linux") or not _pidfds(),
                    reason="workers are forked from a server on Linux with pidfds only")
def test_workers_come_from_a_fork_server_that_is_not_the_caller():
    assert worker_context().get_start_method() == "forkserver"
    with LocalRunner(workers=2) as runner:
        parents = {runner.result(runner.submit(parent_of_worker, None)) for _ in range(4)}
    assert len(parents) == 1 and os.getpid() not in parents


@pytest.mark.skipif(not sys.platform.startswith("linux") or not _pidfds(),
                    reason="workers are forked from a server on Linux with pidfds only")
def test_a_worker_starts_with_torch_imported_by_the_fork_server():
    """Every job decodes recorded values with torch: a worker that imported it itself would pay about 2 s of CPU."""
    with LocalRunner(workers=1) as runner:
        assert runner.result(runner.submit(torch_already_in_worker, None))


def test_torch_in_a_worker_uses_the_thread_count_its_pool_was_given(monkeypatch):
    """torch is imported by the fork server, before a worker learns its share of the cores: the share is
    given to torch too (here the caller's own OMP_NUM_THREADS, which wins; the first pool makes sure the
    server was started with another value)."""
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    with LocalRunner(workers=2) as runner:
        runner.result(runner.submit(torch_threads_in_worker, None))
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    with LocalRunner(workers=2) as runner:
        assert runner.result(runner.submit(torch_threads_in_worker, None)) == (3, "3")
