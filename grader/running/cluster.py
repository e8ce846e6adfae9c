"""Grading on a Dask cluster: ``autograde --scheduler tcp://HOST:8786``.

Each job (:mod:`grader.running.jobs`) is sent to the cluster as data and comes back as data: workers need
this project installed (the same code: checked before anything runs) and bubblewrap, nothing
else - no shared filesystem, no gradebook, no course directory. A worker lost mid-job (its process
killed) costs a retry: the scheduler gives the job to another worker.

Checked before the first job, each failing within seconds with a message that says what to do: the
scheduler is reachable, it has at least one worker, and the workers run the same Python, Dask
and grading code as this machine.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

from ..errors import GraderError

__all__ = ["DaskRunner", "code_digest", "CONNECT_TIMEOUT_S"]

CONNECT_TIMEOUT_S = 10


def code_digest() -> str:
    """SHA-256 of the grading code (grader/ and d2lite/ Python sources): must match on every worker."""
    digest = hashlib.sha256()
    for package in ("grader", "d2lite"):
        folder = Path(__import__(package).__file__).parent
        for path in sorted(folder.rglob("*.py")):
            digest.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


class DaskRunner:
    """Jobs on the workers of the Dask scheduler at ``address``."""

    def __init__(self, address: str, *, timeout: float = CONNECT_TIMEOUT_S):
        try:
            from distributed import Client
        except ImportError:
            raise GraderError("--scheduler needs Dask's distributed package: pip install -c constraints.txt "
                              "distributed (it is part of this project's dependencies)") from None
        self.address = address
        try:
            self.client = Client(address, timeout=timeout, set_as_default=False)
        except (OSError, TimeoutError, ValueError) as error:
            raise GraderError(f"cannot reach the Dask scheduler at {address} within {timeout:g} s ({error}); "
                              "start it with `dask scheduler` on the scheduler machine and check the "
                              "address, port and firewall") from None
        try:
            self._check_workers(timeout)
            self._share_cores()
        except BaseException:
            self.client.close()
            raise

    def _check_workers(self, timeout: float) -> None:
        try:
            self.client.wait_for_workers(1, timeout=timeout)
        except TimeoutError:
            raise GraderError(f"the Dask scheduler at {self.address} has no workers after {timeout:g} s; start "
                              f"`dask worker {self.address} --nthreads 1` on each grading machine") from None
        try:
            self.client.get_versions(check=True)
        except ValueError as mismatch:
            raise GraderError(f"the Dask workers run other versions than this machine; install the same "
                              f"pinned versions everywhere (pip install -c constraints.txt ...):\n{mismatch}") from None
        ours = code_digest()
        try:
            theirs = self.client.run(code_digest)
        except Exception as error:  # noqa: BLE001 - e.g. ModuleNotFoundError: grader is not installed there
            raise GraderError(f"the Dask workers cannot load the grading code ({type(error).__name__}: {error}); "
                              "install this project on every worker machine") from None
        other = sorted(worker for worker, digest in theirs.items() if digest != ours)
        if other:
            raise GraderError(f"{len(other)} Dask worker(s) run different grading code than this machine "
                              f"({', '.join(other)}); install the same version of this project on every "
                              "worker, so that every submission is graded by the same code")

    def _share_cores(self) -> None:
        """Kernels on one machine split its cores, as local workers do (grader.running.jobs.share_cores):
        each worker process tells its kernels to use cores / (its machine's kernel slots) threads,
        unless OMP_NUM_THREADS was set where the worker started. Workers that join later keep
        their own setting."""
        from .jobs import share_cores

        workers = self.client.scheduler_info()["workers"]
        slots_per_host: dict[str, int] = {}
        for info in workers.values():
            slots_per_host[info["host"]] = slots_per_host.get(info["host"], 0) + info["nthreads"]
        for address, info in workers.items():
            self.client.run(share_cores, slots_per_host[info["host"]], workers=[address])

    def slots(self) -> int:
        """How many jobs can run at once: the workers' threads, as they are now (workers may come
        and go during a batch)."""
        return max(1, sum(self.client.nthreads().values()))

    def submit(self, function, job):
        return self.client.submit(function, job, pure=False)

    def wait_any(self, futures) -> set:
        from distributed.client import _wait  # distributed.wait() would look for a default client

        return set(self.client.sync(_wait, list(futures), return_when="FIRST_COMPLETED").done)

    @staticmethod
    def lost(future) -> bool:
        """Never (:meth:`LocalRunner.lost`): Dask itself sends a dead worker's jobs to other workers, and ends a job
        that kills several with an error, graded like any other."""
        return False

    @staticmethod
    def result(future):
        return future.result()

    def close(self) -> None:
        self.client.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
