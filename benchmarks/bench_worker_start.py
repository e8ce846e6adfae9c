"""What a local grading worker costs before its first job, and what a new gradebook costs, side by side.

- Workers: a pool of ``LocalRunner`` workers started as before (spawned: each imports the engine, nbformat
  and torch) and as now (forked from the fork server that imported them once, :func:`worker_context`).
  Each worker reports the CPU seconds it has used when it has imported what a grading job imports; the
  pool's wall time is the time from making the pool to both workers' first answers. The fork server's own
  start (once per grader process) is timed apart.
- Gradebooks: creating a new nbgrader gradebook, with nbgrader asking ``alembic heads`` every time (stock)
  and once per process (:func:`grader.authoring.config.ask_alembic_once`).

Medians of ``BENCH_REPEATS`` pools (default 3); nothing here starts a kernel.
"""
from __future__ import annotations

import multiprocessing
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
REPEATS = int(os.environ.get("BENCH_REPEATS", "3"))
WORKERS = 2


def _ready(_job) -> float:
    """In a worker: import what a grading job imports; the CPU seconds this worker has used so far."""
    import importlib

    from grader.running.jobs import WORKER_MODULES

    for name in WORKER_MODULES:
        importlib.import_module(name)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    time.sleep(0.5)  # hold the worker, so that the pool's second job goes to the other one
    return usage.ru_utime + usage.ru_stime


def _pool(context) -> tuple[float, float]:
    """(wall seconds to both workers' first answers, median CPU seconds per worker) of one new pool."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))  # workers import _ready from this module, by name
    from bench_worker_start import _ready

    from grader.running import runner as runners

    original = runners.worker_context
    runners.worker_context = lambda: context
    try:
        start = time.perf_counter()
        with runners.LocalRunner(workers=WORKERS) as pool:
            cpu = [pool.result(f) for f in [pool.submit(_ready, None) for _ in range(WORKERS)]]
            wall = time.perf_counter() - start - 0.5
    finally:
        runners.worker_context = original
    return wall, statistics.median(cpu)


def _gradebooks(cached: bool) -> float:
    """Median seconds to create a new gradebook (nbgrader's Gradebook on a new sqlite file)."""
    import nbgrader.api

    from grader.authoring.config import ask_alembic_once

    ask_alembic_once()
    ask = nbgrader.api.get_alembic_version
    times = []
    with tempfile.TemporaryDirectory() as folder:
        for n in range(REPEATS):
            if not cached:
                ask.cache_clear()
            start = time.perf_counter()
            nbgrader.api.Gradebook(f"sqlite:///{folder}/{cached}-{n}.db").close()
            times.append(time.perf_counter() - start)
    return statistics.median(times[1:] if cached and len(times) > 1 else times)


def main() -> str:
    from grader.running.runner import worker_context

    forked = worker_context()
    spawned = multiprocessing.get_context("spawn")
    first_wall, _ = _pool(forked)  # the process's first pool: the fork server starts and imports, then forks
    rows = {"spawned (before)": [], f"{forked.get_start_method()} (now)": []}
    for _ in range(REPEATS):  # alternating, so that the machine's load falls on both alike
        rows["spawned (before)"].append(_pool(spawned))
        rows[f"{forked.get_start_method()} (now)"].append(_pool(forked))
    medians = {name: (statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs))
               for name, runs in rows.items()}
    (spawn_wall, spawn_cpu), (fork_wall, fork_cpu) = medians.values()
    stock, once = _gradebooks(cached=False), _gradebooks(cached=True)
    lines = [
        f"## A grading worker's start and a new gradebook ({WORKERS} workers per pool, medians of {REPEATS})",
        "",
        "| workers started | pool ready (s, wall) | CPU per worker before its first job (s) |",
        "|---|---:|---:|",
    ]
    lines += [f"| {name} | {wall:.2f} | {cpu:.2f} |" for name, (wall, cpu) in medians.items()]
    lines += [
        "",
        f"Per worker, {spawn_cpu / max(fork_cpu, 1e-3):.0f}x less CPU and a pool ready "
        f"{spawn_wall / max(fork_wall, 1e-3):.0f}x sooner. A grader process's first pool waits for the fork server to "
        f"start and import (ready in {first_wall:.2f} s, about a spawned pool's time); every later pool of the "
        "process forks at once (the test suite's processes grade many times each).",
        "",
        "| new gradebook | seconds |",
        "|---|---:|",
        f"| nbgrader asks `alembic heads` each time (stock) | {stock:.2f} |",
        f"| asked once per process (`ask_alembic_once`) | {once:.2f} |",
        "",
        f"{stock / max(once, 1e-3):.0f}x: the `alembic heads` subprocess is nearly all of a new gradebook's cost.",
        "",
        f"<!-- headline: a grading worker's CPU before its first job, forked vs spawned | {fork_cpu:.2f} s vs "
        f"{spawn_cpu:.2f} s | (issue 32: less CPU per pool) -->",
        f"<!-- headline: a new gradebook, alembic asked once per process vs each time | {once:.2f} s vs {stock:.2f} s "
        "| (issue 32) -->",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    print(main())
