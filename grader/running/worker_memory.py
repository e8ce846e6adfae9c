"""A memory bound for each local grading worker process, like the one each kernel has.

A kernel's memory is bounded by its own control group (:mod:`grader.engine.isolation.cgroups`); the worker that
drives it holds the submission, the kernel's messages (at most a few of at most 65 MB each), the
graded notebook and the sanitised outputs, and starts the child that reads the answers
(:mod:`grader.engine.reading.bounds`, 1 GiB of address space). Each worker bounds itself first thing,
with the same rules as kernels:

- where :func:`grader.engine.isolation.cgroups.cgroup_support` says groups can be made, the worker makes a group
  of its own (``course-grader-<pid>-worker``, memory only, beside the kernels' groups) and moves into
  it; past :data:`WORKER_MEMORY_MB` the out-of-memory killer ends the worker (and the reading child
  with it), which the batch sees as a lost worker (:meth:`grader.running.runner.LocalRunner.lost`): its
  jobs are graded again alone, and a job whose worker dies again fails alone, with the reason;
- where groups are supported but this one cannot be made or joined, the worker refuses every job it
  is given (:class:`grader.engine.isolation.sandbox.SandboxUnavailable`: the submission stays pending, with the
  reason) instead of grading without its bound, as a kernel whose group fails is not started;
- where groups are not supported, the worker sets its own soft ``RLIMIT_DATA`` (heap and private
  mappings) to the same bound: past it an allocation raises ``MemoryError``, and only that submission
  fails, with the reason. The hard limit stays, so the kernels and the reading child it starts set
  their own limits as before.

The kernels themselves are not in the worker's group: their groups sit beside it, each with its own
budget (``Limits.memory_mb``). Workers of a Dask cluster are bounded by Dask's own ``--memory-limit``.

    bound_worker(WORKER_MEMORY_MB)   # in the worker, before any job (grader.running.jobs.start_worker)
    check_bounded()                  # in each job: raises SandboxUnavailable if the worker is not bounded
"""
from __future__ import annotations

import resource

from ..engine.isolation.cgroups import KernelGroup, cgroup_support

__all__ = ["WORKER_MEMORY_MB", "bound_worker", "bound_by_rlimit", "check_bounded"]

WORKER_MEMORY_MB = 3072  # a worker and its reading child (1 GiB); measured 0.24 GB at peak grading tests/stalling.py
_refusal = [""]  # why this worker must not grade ("" once bounded)


def bound_worker(memory_mb: int) -> str:
    """Bound this process (a grading worker) to ``memory_mb``; return how: "cgroup", "rlimit", or "" when it
    could not be (then :func:`check_bounded` refuses every job, saying why)."""
    supported, _ = cgroup_support()  # before joining: the kernels' groups stay where they were, beside it
    if not supported:
        bound_by_rlimit(memory_mb)
        return "rlimit"
    try:
        group = KernelGroup.for_memory(int(memory_mb) * 2**20, "worker")
        if group is None:  # support changed between the two calls: fail closed all the same
            raise OSError("no control group could be made")
        group.join()
    except OSError as error:
        _refusal[0] = (f"this grading worker could not be put in a memory control group of its own "
                       f"({error.strerror or error}), so it grades nothing; fix the cgroup setup "
                       "(cgroup_support() says which) and run autograde again")
        return ""
    return "cgroup"


def bound_by_rlimit(memory_mb: int) -> None:
    """The fallback without cgroups: this process's soft ``RLIMIT_DATA`` at ``memory_mb`` (never above its hard limit)."""
    limit = int(memory_mb) * 2**20
    _, hard = resource.getrlimit(resource.RLIMIT_DATA)
    resource.setrlimit(resource.RLIMIT_DATA, (limit if hard == resource.RLIM_INFINITY else min(limit, hard), hard))


def check_bounded() -> None:
    """Raise :class:`grader.engine.isolation.sandbox.SandboxUnavailable` when this worker could not be bounded."""
    if _refusal[0]:
        from ..engine.isolation.sandbox import SandboxUnavailable

        raise SandboxUnavailable(_refusal[0])
