"""Suite-wide rule: in CI, a test marked ``required_in_ci`` that skips FAILS.

Some tests need what a developer's machine may lack (a Chromium that starts, running as root), so
they skip there. In CI (environment variable ``CI`` set, as CI services do; "", "0", "false" and
"no" mean unset, as in ``d2lite.unattended``) such a skip would hide a check that never ran, and
the run would still pass. There the skip becomes a failure that says what was missing and how to
provide it (the marker's argument):

    @pytest.mark.required_in_ci("run the tests as root, as .ci/run does")
    def test_kernel_runs_unprivileged(): ...

Skips of unmarked tests stay skips (e.g. the CUDA-only test: CI has no GPU). Only skips of a
collected test are seen: do not skip a marked test at module level (``allow_module_level``).
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

MARKER = "required_in_ci"

# Threads: torch starts one thread per core in every process. Under pytest-xdist (``-n N``) N test processes
# run at once, each with its kernels and subprocesses: each worker's processes get cores // N threads, so that
# parallel tests do not oversubscribe the cores. Set here, before any test module imports torch; children
# (kernels, scripts, torchrun) inherit it; a value set by the caller wins. A run without xdist leaves it to the
# grader (grader.running.jobs.share_cores gives parallel kernels their share) and to torch.
_XDIST_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 1)
if _XDIST_WORKERS > 1:
    _CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    for _name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_name, str(max(1, _CORES // _XDIST_WORKERS)))


# Memory: glibc gives the large blocks a torch training loop frees (a convolution's buffers, several MB each) back
# to the system and faults them in again at the next batch: in section 6.6's LeNet run
# (tests/test_d2l_chapters.py) that was 22 of its 79 s, in page faults (one thread, 2026-11-29). With a fixed mmap
# threshold (32 MB, the largest man mallopt allows) and a trim threshold of 256 MB it keeps them for reuse: 56 s,
# same accuracies, same peak memory. Only speed changes; set before the xdist workers start, so that they and
# every child (scripts, kernels, torchrun) inherit it; a value set by the caller wins. Sandboxed grading kernels
# start with a clean environment and do not see it.
os.environ.setdefault("GLIBC_TUNABLES", "glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=268435456")


@pytest.fixture(scope="session", autouse=True)
def _one_classroom_per_run(tmp_path_factory):
    """The fixture course and its graded class (tests/classroom.py) made once per run, not once per process.

    Under pytest-xdist each worker has its own session and base temp (``.../pytest-N/popen-gwK``); their
    parent is the run's, shared by all workers (the pattern pytest-xdist documents for session fixtures).
    Without xdist the session's own base temp serves. pytest removes old base temps as it does others.
    A copy of this file that runs elsewhere (tests/test_required_in_ci.py's probe) has no classroom to share."""
    if not (Path(__file__).parent / "classroom.py").exists():
        return
    import classroom

    base = tmp_path_factory.getbasetemp()
    classroom.share_across_processes(base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base)


# The slowest files, slowest first (per-file sums of `pytest --durations=0` under -n 4 on 2 cores, 2026-11-27):
# the Makefile runs pytest-xdist with --dist loadfile --no-loadscope-reorder, so files start in collection order,
# and these start first. A long file that starts last runs alone while the other workers wait; one that starts
# first overlaps with everything else. Order only: no test depends on it.
SLOWEST_FILES_FIRST = ("test_conformance.py", "test_d2l_chapters.py", "test_friction_instructor.py",
                       "test_attacks_resources.py", "test_grader_pipeline.py", "test_stock_nbgrader.py",
                       "test_cluster.py", "test_nbcourse_grading.py", "test_student_lab_in_browser.py",
                       "test_attacks_collect.py", "test_nbgrader_ps1.py", "test_grader_schedule.py")


def pytest_collection_modifyitems(config, items):
    """Put the tests of :data:`SLOWEST_FILES_FIRST` first, in that order; the others keep theirs."""
    missing = [name for name in SLOWEST_FILES_FIRST if not (Path(__file__).parent / name).is_file()]
    if len(missing) == len(SLOWEST_FILES_FIRST):  # a copy of this file elsewhere (tests/test_required_in_ci.py's probe)
        return
    if missing:
        raise pytest.UsageError(f"tests/conftest.py's SLOWEST_FILES_FIRST names {missing}, which tests/ does not "
                                "hold: update the list")
    rank = {name: n for n, name in enumerate(SLOWEST_FILES_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: a file's own order stays


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def pytest_configure(config):
    config.addinivalue_line("markers", f"{MARKER}(how): in CI (CI=true) a skip of this test is a "
                                       "failure; `how` says how to give the test what it needs")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    marker = item.get_closest_marker(MARKER)
    if marker is None or not report.skipped or hasattr(report, "wasxfail") or not in_ci():
        return report
    why = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    how = marker.args[0] if marker.args else "see the test's skip reason"
    report.outcome = "failed"
    report.longrepr = (f"{item.nodeid} must run in CI (CI={os.environ.get('CI')!r}) but was skipped "
                       f"({why.removeprefix('Skipped: ')}).\nWhat to do: {how}")
    return report
