"""Grading near the limit (issue 32): each course notebook's own run against the grading of one submission.

The limit is the notebook's own run: the solution executed once, in one plain kernel (no sandbox, no
records, every cell in one execution). One submission is then graded as a grading worker grades it
(:func:`grader.engine.grade.grade`, sandboxed where this machine can sandbox): the solution itself,
handed in as a student's notebook, against reference values from a trusted run made first (not timed
here). The table gives both wall times, their ratio (goal: <= 1.2), where the grading's time went
(kernel start, the cells, the answers' source read by a child process after the run), and how long the own run spent in cells after the last graded
test (time that scores nothing).

Every notebook runs on the bundled digits (``D2LITE_DATASET=mnist5k``, as ``make demo`` and CI do, unless the
caller sets another); an own run
with a failing cell stops the benchmark (before 2026-11-28 the variable was not set, so on a machine without
Fashion-MNIST the data cell of each notebook that loads it failed in both runs, and the figures measured
notebooks cut short).
One repeat per notebook (each is a whole notebook); timings on a shared machine are noisy, so the own run
and the grading of a notebook are measured one right after the other. ``BENCH_LIMIT_NOTEBOOKS``:
comma-separated notebook names (default: every graded course notebook).
"""
from __future__ import annotations

import functools
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
ONLY = [n for n in os.environ.get("BENCH_LIMIT_NOTEBOOKS", "").split(",") if n]
GOAL = 1.2


class Stopwatch:
    """Wall seconds spent in wrapped functions, by label; ``calls`` keeps each call of a label in order."""

    def __init__(self):
        self.seconds: dict[str, float] = {}
        self.calls: dict[str, list[float]] = {}

    def wrap(self, owner, name: str, label: str) -> None:
        original = getattr(owner, name)

        @functools.wraps(original)
        def timed(*args, **kwargs):
            start = time.monotonic()
            try:
                return original(*args, **kwargs)
            finally:
                spent = time.monotonic() - start
                self.seconds[label] = self.seconds.get(label, 0.0) + spent
                self.calls.setdefault(label, []).append(spent)

        setattr(owner, name, timed)

    def reset(self) -> None:
        self.seconds.clear()
        self.calls.clear()


def graded_notebooks() -> list[Path]:
    from grader.engine.notebook.cells import is_test

    import nbformat

    found = [p for p in sorted((ROOT / "course").glob("*.ipynb"))
             if any(is_test(c) for c in nbformat.read(str(p), as_version=4).cells)]
    return [p for p in found if not ONLY or p.stem in ONLY]


def own_run(source: Path, scratch: Path, watch: Stopwatch) -> tuple[float, float]:
    """(wall seconds of the solution run once in one plain kernel, of which in cells after the last graded test)."""
    import nbformat

    from grader.engine import grade as engine_grade
    from grader.engine.notebook.cells import is_test
    from grader.engine.notebook.merge import Role
    from grader.engine.isolation.notebook_run import run_notebook

    nb = nbformat.read(str(source), as_version=4)
    roles = [Role("trusted", "") for _ in nb.cells]  # every cell in one execution, hidden tests included
    watch.reset()
    start = time.monotonic()
    runs, problems = run_notebook(nb, roles, scratch, engine_grade.Limits(), sandboxed=False, record=False,
                                  support=engine_grade._support_files(source))
    wall = time.monotonic() - start
    failed = [f"cell {i}: {run.status} {run.error}" for i, run in sorted(runs.items()) if run.status != "ok"]
    if failed or problems:  # a run cut short by an error is no limit to measure against
        raise SystemExit(f"{source.name}: the solution's own run did not run cleanly, so there is nothing to compare "
                         f"with: {'; '.join(problems + failed[:3])}")
    code = [c for c in nb.cells if c.cell_type == "code"]
    last_test = max(i for i, c in enumerate(code) if is_test(c))
    return wall, sum(watch.calls.get("cells", [])[last_test + 1:])


def measure(source: Path, watch: Stopwatch) -> dict:
    from grader.engine import grade as engine_grade

    unsafe = not engine_grade.sandbox_status()[0]
    with tempfile.TemporaryDirectory(prefix="bench-limit-") as tmp:
        tmp = Path(tmp)
        own, tail = own_run(source, tmp / "own", watch)
        references = engine_grade.run_reference(source, workdir=tmp / "reference", unsafe=unsafe)
        watch.reset()
        start = time.monotonic()
        result = engine_grade.grade(source, source, references, workdir=tmp / "grade", unsafe=unsafe)
        grading = time.monotonic() - start
    parts = dict(watch.seconds)
    return {"name": source.stem, "own": own, "tail": tail, "grading": grading, "start": parts.get("start", 0.0),
            "cells": parts.get("cells", 0.0), "reading": parts.get("reading", 0.0),
            "score": f"{result.score:g}/{result.max_score:g}", "sandboxed": not unsafe}


def main() -> str:
    from d2lite.unattended import DATASET

    os.environ.setdefault(DATASET, "mnist5k")  # the bundled digits, as in make demo and CI
    from grader.engine.reading import bounds
    from grader.engine import grade as engine_grade
    from grader.engine.isolation.kernel import Kernel

    watch = Stopwatch()
    watch.wrap(Kernel, "_launch", "start")
    watch.wrap(Kernel, "run", "cells")
    watch.wrap(bounds, "bounded_readings", "reading")
    watch.wrap(engine_grade, "bounded_readings", "reading")
    rows = []
    for source in graded_notebooks():
        rows.append(measure(source, watch))
        print(f"  {rows[-1]}", file=sys.stderr, flush=True)
    load = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    lines = [f"## Grading near the limit: own run vs one submission's grading, per notebook (goal: <= {GOAL}x)",
             f"<!-- headline: per-submission grading / the notebook's own run, worst notebook | "
             f"{max(r['grading'] / r['own'] for r in rows):.2f}x | <= {GOAL}x -->", "",
             "| notebook | own run (s) | grading one submission (s) | ratio | of which kernel start / cells / "
             "reading the source (s) | own run after the last graded test (s) | score |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        lines.append(f"| {r['name']} | {r['own']:.1f} | {r['grading']:.1f} | {r['grading'] / r['own']:.2f} | "
                     f"{r['start']:.1f} / {r['cells']:.1f} / {r['reading']:.1f} | {r['tail']:.1f} | {r['score']} |")
    sandbox = "sandboxed" if all(r["sandboxed"] for r in rows) else "NOT sandboxed (no bubblewrap here)"
    lines += ["", f"Own run: the solution in one plain kernel. Grading: `grade()` of the solution as a submission, "
              f"{sandbox}, in this process (a worker's view, without the job's transport). One run each; "
              f"load average after the run {load} on {os.cpu_count()} cores (other jobs shared the machine)."]
    return "\n".join(lines)


if __name__ == "__main__":
    print(main())
