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
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool

from ..errors import GraderError
from .jobs import start_worker
from .worker_memory import WORKER_MEMORY_MB

__all__ = ["LocalRunner", "WorkerLost", "open_runner"]


class WorkerLost(GraderError):
    """A worker process died (killed from outside, out of memory) and its job cannot finish. The pool
    is then broken: every job still running in it is lost too, and :meth:`LocalRunner.replace` makes
    a new one (:mod:`grader.running.batch` decides what to grade again)."""


class LocalRunner:
    """``workers`` processes on this machine (spawned: no state inherited from the caller), each bounded to
    ``memory_mb`` of memory (:mod:`grader.running.worker_memory`)."""

    def __init__(self, workers: int, memory_mb: int = WORKER_MEMORY_MB):
        self.workers, self.memory_mb = max(1, workers), memory_mb
        self._pool = self._new_pool()

    def _new_pool(self) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(max_workers=self.workers, mp_context=multiprocessing.get_context("spawn"),
                                   initializer=start_worker, initargs=(self.workers, os.getpid(), self.memory_mb))

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


def open_runner(*, workers: int = 1, scheduler: str | None = None, **options):
    """A :class:`LocalRunner`, or with ``scheduler`` a :class:`grader.running.cluster.DaskRunner`."""
    if scheduler:
        from .cluster import DaskRunner

        return DaskRunner(scheduler, **options)
    return LocalRunner(workers)
