"""What the submissions that once stalled a grading worker cost it now, graded in one batch beside an honest one.

tests/stalling.py holds the class: ``ann`` hands in the fixture's solution; the others the solution plus
one attack of issue 28 (400 ``!`` lines: 1,050 s of a worker before; a function nested 98 deep around a
1.8 MB list: 700 s and 1.1 GB; 30,000 nested ``<div>``s as an output: 55 s of cleaning; the same as a
written answer: +25 s; ``- - ... 1`` 500 deep: ``RecursionError``). tests/test_answer_bounds.py checks
the verdicts; here the time each submission took (``Outcome.seconds``: merging, the kernel's run, the
reading, the cleaning) is reported, worst case first, with the wall-clock time of the whole batch.
One batch, two workers, the sandbox on; the kernels' own work (400 shell commands run by ``!``)
is part of a submission's time.
"""
from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))
WORKERS = 2


def main() -> str:
    from classroom import write_inbox
    from stalling import stalling_class, written_course

    from grader.engine.reading.bounds import READ_TIMEOUT_S
    from grader.engine.isolation.sandbox import Limits
    from grader.intake.collect import collect
    from grader.running.batch import autograde

    with tempfile.TemporaryDirectory(prefix="bench-stalling-") as tmp:
        root = written_course(Path(tmp) / "course")
        collect(root, write_inbox(Path(tmp) / "inbox", stalling_class()))
        start = time.perf_counter()
        outcomes = {o.student: o for o in autograde(root, workers=WORKERS)}
        batch = time.perf_counter() - start
    honest = outcomes.pop("ann")
    ranked = sorted(outcomes.values(), key=lambda o: -o.seconds)
    worst = ranked[0]
    budget = Limits().cell_timeout_s
    return "\n".join([
        "## Stalling submissions graded in one batch beside an honest one",
        "",
        f"<!-- headline: worst stalling submission's grading time, one batch (before: 1,050 s) | {worst.seconds:.0f} s "
        f"({worst.student}; honest: {honest.seconds:.0f} s) | < {budget:.0f} s (a cell's budget) -->",
        "| submission | seconds | score | flagged for review |",
        "| --- | ---: | ---: | --- |",
        *(f"| {o.student} | {o.seconds:.1f} | {o.score:g}/{o.max_score:g} | "
          f"{sum(1 for t in o.tests if t.review)} tests |" for o in [*ranked, honest]),
        "",
        f"The whole batch ({len(ranked) + 1} submissions, {WORKERS} workers) took {batch:.0f} s. The worst case, "
        f"{worst.student}, took {worst.seconds:.0f} s against {honest.seconds:.0f} s for the honest student; the "
        f"reading of any one notebook is bounded at {READ_TIMEOUT_S:.0f} s, the rest is the kernel running the "
        "student's own cells under their time budget (``shell``: 400 shell commands started by ``!``). The "
        "seventh point of each score is the written answer, which awaits a person.",
    ])


if __name__ == "__main__":
    print(main())
