"""Where jobs run: local worker processes, or the workers of a Dask cluster.

Both runners take the same jobs (:mod:`grader.running.jobs`) and hand back futures with ``result()``; the
caller (autograde, the course gate) keeps every write to itself.

    with open_runner(workers=2) as runner:                  # or scheduler="tcp://10.0.0.5:8786"
        future = runner.submit(run_grade_job, job)
        done = runner.wait_any({future})
"""
from __future__ import annotations

import multiprocessing
import os
import sys
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool

from ..errors import GraderError
from .jobs import WORKER_MODULES, start_worker, worker_environ
from .worker_memory import WORKER_MEMORY_MB

__all__ = ["LocalRunner", "WorkerLost", "open_runner", "worker_context"]


class WorkerLost(GraderError):
    """A worker process died (killed from outside, out of memory) and its job cannot finish. The pool
    is then broken: every job still running in it is lost too, and :meth:`LocalRunner.replace` makes
    a new one (:mod:`grader.running.batch` decides what to grade again)."""


def worker_context():
    """How local workers are started: forked from multiprocessing's fork server, a fresh Python that the
    grader starts once (none of the caller's state) and that imports :data:`WORKER_MODULES` once, so that
    each worker starts at once instead of importing torch and the engine again (about 3 s of CPU each).
    Elsewhere than on Linux (macOS and Windows start fresh Pythons), or without pidfds (Linux before 5.3: a
    worker of the server watches the grader through one, :func:`grader.running.jobs.die_with_parent`),
    spawned. The server ends when the grader process and its workers have."""
    if not sys.platform.startswith("linux") or not _pidfds():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(list(WORKER_MODULES))  # only read when the server starts
    return context


def _prestart_template(workers: int) -> None:
    """Start the warm-kernel template the workers' sandboxed kernels will fork from
    (:mod:`grader.engine.isolation.warm`) here, once per grader process, rather than once in every worker. It
    starts in the background; the workers find it through their environment."""
    from ..engine.isolation.sandbox import kernel_env, sandbox_status
    from ..engine.isolation.warm import prestart

    if sandbox_status()[0]:
        prestart(kernel_env(None, sandboxed=True, environ=worker_environ(workers, os.environ)))


def _pidfds() -> bool:
    """Whether this system gives process file descriptors (``os.pidfd_open``)."""
    try:
        os.close(os.pidfd_open(os.getpid()))
    except (AttributeError, OSError):
        return False
    return True


class LocalRunner:
    """``workers`` processes on this machine (started from a fresh Python, :func:`worker_context`: no state
    inherited from the caller but its environment), each bounded to ``memory_mb`` of memory
    (:mod:`grader.running.worker_memory`). ``sandboxed``: the jobs will run sandboxed kernels, so the warm-kernel
    template is started for them (an ``--unsafe`` run's kernels are never sandboxed: no template)."""

    def __init__(self, workers: int, memory_mb: int = WORKER_MEMORY_MB, sandboxed: bool = True):
        self.workers, self.memory_mb, self.sandboxed = max(1, workers), memory_mb, sandboxed
        self._pool = self._new_pool()

    def _new_pool(self) -> ProcessPoolExecutor:
        if self.sandboxed:
            _prestart_template(self.workers)
        return ProcessPoolExecutor(max_workers=self.workers, mp_context=worker_context(), initializer=start_worker,
                                   initargs=(self.workers, os.getpid(), self.memory_mb, dict(os.environ)))

    def replace(self) -> None:
        """A new pool of workers in place of a broken one (its jobs are lost; its workers are ended)."""
        self._pool.shutdown(wait=True, cancel_futures=True)
        self._pool = self._new_pool()

    def slots(self) -> int:
        """How many jobs can run at once."""
        return self.workers

    def submit(self, function, job):
        return self._pool.submit(function, job)

    def wait_any(self, futures) -> set:
        """The futures of ``futures`` that are done, waiting until at least one is."""
        return wait(futures, return_when=FIRST_COMPLETED).done

    @staticmethod
    def lost(future) -> bool:
        """Whether ``future``'s worker died (the pool is then broken): :meth:`result` would raise
        :class:`WorkerLost`."""
        return future.done() and not future.cancelled() and isinstance(future.exception(), BrokenProcessPool)

    @staticmethod
    def result(future):
        try:
            return future.result()
        except BrokenProcessPool:
            raise WorkerLost("the grading worker process died while grading it (killed from outside, or out of "
                             "memory)") from None

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def open_runner(*, workers: int = 1, scheduler: str | None = None, sandboxed: bool = True, **options):
    """A :class:`LocalRunner` (``sandboxed``: see there), or with ``scheduler`` a
    :class:`grader.running.cluster.DaskRunner`."""
    if scheduler:
        from .cluster import DaskRunner

        return DaskRunner(scheduler, **options)
    return LocalRunner(workers, sandboxed=sandboxed)
