"""Grading work as data: everything a worker needs travels inside the job.

A job carries the trusted notebook's bytes and its support files, the submission's bytes, the
reference values and the limits. The functions that run jobs write them into a fresh temporary
folder, grade there with :mod:`grader.engine.grade`, and return plain data; so a job runs the same in a
local worker process and on another machine (:mod:`grader.running.runner`), and a worker never sees the
gradebook, the course directory or other students' work.

    job = GradeJob(TrustedNotebook.from_source(path), submission_bytes, refs.to_dict(), Limits(), False)
    outcome = run_grade_job(job)  # Outcome("", "", score, max_score, [TestResult], problems, seconds=...,
                                  #         notebooks={"01_tensors": graded notebook text})

An assignment of several notebooks (nbgrader's layout) travels as one :class:`NotebooksJob` holding a job per
notebook; its outcome has every notebook's tests (each naming its ``notebook``) and graded notebooks.
"""
from __future__ import annotations

import os
import sys
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path

from ..engine.isolation.cgroups import set_kernel_slots
from ..engine.isolation.cleanup import scratch_folder
from ..engine.isolation.sandbox import Limits
from ..engine.notebook.cells import safe_relative_name, support_files_under
from ..engine.verdict.result import Outcome, TestResult
from .worker_memory import bound_worker, check_bounded

__all__ = ["TrustedNotebook", "ReferenceJob", "GradeJob", "NotebooksJob", "run_reference_job", "run_grade_job",
           "run_notebooks_job", "run_notebooks_reference_job", "merged_results", "start_worker", "share_cores",
           "die_with_parent", "failed_result", "worker_environ", "WORKER_MODULES"]


@dataclass(frozen=True)
class TrustedNotebook:
    """One trusted notebook (an assignment's, or one of its notebooks in nbgrader's layout) and the files that ship
    with it."""

    name: str                                   # the notebook's file name, "01_tensors.ipynb"
    notebook: bytes
    support: tuple[tuple[str, bytes], ...] = ()  # (relative path, content), e.g. ("data/x.csv", b"...")

    @classmethod
    def from_source(cls, path: Path) -> "TrustedNotebook":
        """Read ``path`` and the files that ship with it, sub-folders included
        (:func:`grader.engine.notebook.cells.support_files_under`)."""
        path = Path(path)
        support = tuple((name, (path.parent / name).read_bytes()) for name in support_files_under(path.parent))
        return cls(path.name, path.read_bytes(), support)

    def write(self, folder: Path) -> Path:
        """Write the notebook and its support files into ``folder`` (each at its relative path,
        which must stay inside it); return the notebook's path."""
        folder.mkdir(parents=True, exist_ok=True)
        for name, content in self.support:
            target = folder / safe_relative_name(name)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
        notebook = folder / Path(self.name).name
        notebook.write_bytes(self.notebook)
        return notebook


@dataclass(frozen=True)
class ReferenceJob:
    assignment: TrustedNotebook
    limits: Limits
    unsafe: bool


@dataclass(frozen=True)
class GradeJob:
    assignment: TrustedNotebook
    submission: bytes | None   # None: nothing to grade (``missing`` says why)
    references: dict           # grader.engine.verdict.references.References.to_dict()
    limits: Limits
    unsafe: bool
    missing: str = ""
    deduct_certain: bool = False  # the course opted in to deduct certain findings (grader.engine.grade.reviewed)


def run_reference_job(job: ReferenceJob) -> dict:
    """Run the trusted solution; return its reference values (``References.to_dict()``)."""
    from ..engine.grade import run_reference

    check_bounded()
    with scratch_folder("reference") as scratch:
        source = job.assignment.write(Path(scratch) / "trusted")
        return run_reference(source, workdir=Path(scratch) / "work", limits=job.limits,
                             unsafe=job.unsafe).to_dict()


def run_grade_job(job: GradeJob) -> Outcome:
    """Grade one submission; return its outcome: student and assignment blank (the worker never learns them),
    ``notebooks``: {the notebook's name without ".ipynb": the graded notebook's text}."""
    import nbformat

    from ..engine.grade import grade
    from ..engine.verdict.references import References

    check_bounded()
    with scratch_folder("submission") as scratch:
        source = job.assignment.write(Path(scratch) / "trusted")
        submission = None
        if job.submission is not None:
            submission = Path(scratch) / "submitted" / Path(job.assignment.name).name
            submission.parent.mkdir()
            submission.write_bytes(job.submission)
        started = time.monotonic()
        result = grade(source, submission, References.from_dict(job.references), workdir=Path(scratch) / "work",
                       limits=job.limits, unsafe=job.unsafe, missing=job.missing, deduct_certain=job.deduct_certain)
        seconds = round(time.monotonic() - started, 2)
    tests = list(result.tests.values())
    return Outcome("", "", sum(t.points for t in tests), sum(t.max_points for t in tests), tests,
                   list(result.problems), seconds=seconds,
                   notebooks={Path(job.assignment.name).stem: nbformat.writes(result.notebook)})


@dataclass(frozen=True)
class NotebooksJob:
    """Every notebook of one assignment folder (nbgrader's layout), graded one after the other in the same
    worker: ``jobs`` holds (notebook name, its GradeJob or ReferenceJob)."""

    jobs: tuple[tuple[str, GradeJob | ReferenceJob], ...]


def run_notebooks_job(job: NotebooksJob) -> Outcome:
    """Grade each notebook of a submission; return :func:`merged_results` of their :func:`run_grade_job` results."""
    return merged_results({name: run_grade_job(one) for name, one in job.jobs})


def run_notebooks_reference_job(job: NotebooksJob) -> dict:
    """Run each trusted notebook; return {notebook name: its reference values (``References.to_dict()``)}."""
    return {name: run_reference_job(one) for name, one in job.jobs}


def merged_results(results: dict[str, Outcome]) -> Outcome:
    """One assignment's outcome from its notebooks' (name -> :func:`run_grade_job` outcome): every test, with
    ``notebook`` naming its notebook; problems prefixed with the notebook's file name; ``notebooks``:
    name -> graded notebook (text); seconds added up. Student and assignment blank."""
    tests = [replace(test, notebook=name) for name, result in results.items() for test in result.tests]
    return Outcome("", "", sum(t.points for t in tests), sum(t.max_points for t in tests), tests,
                   [f"{name}.ipynb: {problem}" for name, result in results.items() for problem in result.problems],
                   seconds=round(sum(float(result.seconds) for result in results.values()), 2),
                   notebooks={name: text for name, result in results.items() for text in result.notebooks.values()})


def failed_result(assignment: TrustedNotebook, why: str) -> Outcome:
    """What :func:`run_grade_job` returns for a submission that could not be graded: every test 0 (status
    "error"), ``why`` as its problem, the trusted notebook as the graded one."""
    import nbformat

    from ..engine.notebook.cells import cell_points, is_test, nbgrader_meta

    nb = nbformat.reads(assignment.notebook.decode("utf-8"), as_version=4)
    tests = [TestResult(nbgrader_meta(c)["grade_id"], cell_points(c), 0.0, "error",
                        "This submission could not be graded.") for c in nb.cells if is_test(c)]
    return Outcome("", "", sum(t.points for t in tests), sum(t.max_points for t in tests), tests, [why],
                   notebooks={Path(assignment.name).stem: nbformat.writes(nb)})


# What a worker imports to run any job (the engine, and torch, which decodes and compares recorded values): a
# local runner's workers are forked from a server that imported these once (grader.running.runner), so each new
# worker starts in milliseconds instead of importing them again (about 3 s of CPU). torch is named itself: the
# comparisons import it only when they run, so that nbgrader reading a course's configuration does not.
WORKER_MODULES = ("grader.running.jobs", "grader.engine.grade", "grader.engine.verdict.references",
                  "grader.engine.verdict.compare", "nbformat", "torch")


def start_worker(workers: int, grader: int, memory_mb: int, environ: dict[str, str] | None = None) -> None:
    """Runs first in each local worker process: it takes the grader's environment as it was when the pool was
    made (``environ``; a worker forked from a server would otherwise keep the server's), ends with the grader
    (process ``grader``), shares the cores, and bounds its memory to ``memory_mb``
    (:mod:`grader.running.worker_memory`)."""
    if environ is not None:
        os.environ.clear()
        os.environ.update(environ)
    die_with_parent(grader)
    share_cores(workers)
    bound_worker(memory_mb)


def die_with_parent(grader: int) -> None:
    """Linux: this process ends when the grader (process ``grader``) does, even when it is killed with SIGKILL,
    so a killed batch leaves no worker running (its kernels end with it: bubblewrap's --die-with-parent).

    A worker's parent is the grader (spawned) or the fork server the grader started (:mod:`grader.running.runner`).
    The kernel sends the worker SIGKILL when that parent dies; a worker of the fork server also watches the
    grader itself (a thread waiting on its pidfd), because the server only ends once the grader *and* all of
    its workers have: without the watch, the server and its workers would keep each other alive. If the
    parent is already neither the grader nor its server (the grader died before this ran), the worker exits
    at once. Elsewhere nothing is done."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes
    import signal

    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    parent = os.getppid()
    if parent == grader:
        return
    try:
        watched = os.pidfd_open(grader)
    except OSError:  # the grader is gone (the runner forks workers only where pidfds exist)
        os._exit(1)
    if _parent_of(parent) != grader:  # the server lost the grader (or the pid is another process's now)
        os._exit(1)
    threading.Thread(target=_exit_when_ended, args=(watched,), name="grader-watch", daemon=True).start()


def _exit_when_ended(pidfd: int) -> None:
    """Wait until the process behind ``pidfd`` has ended, then end this process at once (SIGKILL, as the
    parent-death signal would)."""
    import select
    import signal

    try:
        watch = select.poll()
        watch.register(pidfd, select.POLLIN)
        while not watch.poll():
            pass
    finally:  # whatever happened to the watch, the worker does not outlive it
        os.kill(os.getpid(), signal.SIGKILL)


def _parent_of(pid: int) -> int | None:
    """The parent process id of ``pid`` (from /proc), or None when it cannot be read."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat[stat.rindex(")") + 2:].split()[1])  # after "pid (name) state": ppid


def worker_environ(workers: int, environ) -> dict[str, str]:
    """``environ`` with the thread counts a worker of a pool of ``workers`` gives its kernels (:func:`share_cores`)."""
    shared = dict(environ)
    if workers > 1:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            shared.setdefault(name, str(max(1, cores // workers)))
    return shared


def share_cores(workers: int) -> None:
    """Parallel kernels split the cores between them: left alone, each torch kernel would start one
    thread per core, and N kernels on N cores would fight over them. Kernels inherit these variables
    (see grader.engine.isolation.sandbox); an instructor's own setting wins. Each kernel's cgroup gets a CPU quota of
    its share of the cores (grader.engine.isolation.cgroups)."""
    set_kernel_slots(workers)
    os.environ.update(worker_environ(workers, os.environ))
    torch = sys.modules.get("torch")  # imported before these were set (by the fork server): tell it too
    if torch is not None and os.environ.get("OMP_NUM_THREADS", "").isdigit():
        torch.set_num_threads(max(1, int(os.environ["OMP_NUM_THREADS"])))
