"""What a sandboxed kernel costs before its first cell has imported torch and d2lite: started cold (bubblewrap runs
a new Python) and warm (forked from the template that imported torch and ipykernel once,
:mod:`grader.engine.isolation.warm`), side by side.

Each round starts one kernel of each kind, in turn, and runs the cell ``import torch, d2lite`` in it. Measured
per kernel: the wall time from ``Kernel.start`` to the end of that cell, and the CPU time the whole machine spent
meanwhile (``/proc/stat``: every process, the template included), both to its end. The template's own start (once
per grader process and kernel environment) is timed apart. Medians of ``BENCH_REPEATS`` rounds (default 5).
"""
from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
REPEATS = int(os.environ.get("BENCH_REPEATS", "5"))
CELL = "import torch, d2lite"


def _busy_seconds() -> float:
    """CPU seconds the machine has spent (all cores, everything but idle and I/O wait) since boot."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def _one(warm: bool, scratch: Path) -> tuple[float, float]:
    """(wall seconds, machine CPU seconds) of one kernel's start and first cell."""
    from grader.engine.isolation.kernel import Kernel
    from grader.engine.isolation.sandbox import Limits

    os.environ["COURSE_GRADER_WARM_KERNELS"] = "1" if warm else "0"
    cpu, start = _busy_seconds(), time.perf_counter()
    kernel = Kernel(scratch, Limits(), sandboxed=True)
    kernel.start()
    try:
        run = kernel.run(CELL)
        wall, used = time.perf_counter() - start, _busy_seconds() - cpu
        if run.status != "ok" or kernel.warm != warm:
            raise SystemExit(f"the {'warm' if warm else 'cold'} kernel failed: {run.status} {run.error}")
    finally:
        kernel.stop()
    return wall, used


def main() -> str:
    from grader.engine.isolation import warm

    with tempfile.TemporaryDirectory() as folder:
        scratch = Path(folder)
        template = _one(True, scratch / "first")  # starts the template: timed apart
        runs = {True: [], False: []}
        for n in range(REPEATS):
            for kind in (False, True):
                runs[kind].append(_one(kind, scratch / f"{kind}-{n}"))
    os.environ.pop(warm.SWITCH, None)
    cold_wall, cold_cpu = (statistics.median(x[i] for x in runs[False]) for i in (0, 1))
    warm_wall, warm_cpu = (statistics.median(x[i] for x in runs[True]) for i in (0, 1))
    return "\n".join([
        "## A sandboxed kernel's start, cold and warm",
        "",
        f"Start plus the first cell `{CELL}`, medians of {REPEATS} kernels of each kind, started in turn.",
        "",
        "| kernel | wall s | machine CPU s |",
        "| --- | --- | --- |",
        f"| cold (bubblewrap runs a new Python) | {cold_wall:.2f} | {cold_cpu:.2f} |",
        f"| warm (forked from the template) | {warm_wall:.2f} | {warm_cpu:.2f} |",
        f"| ratio cold / warm | {cold_wall / warm_wall:.1f}x | {cold_cpu / warm_cpu:.1f}x |",
        f"| the template's own start, with the first warm kernel (once per grader process) | {template[0]:.2f} | "
        f"{template[1]:.2f} |",
        "",
        f"<!-- headline: sandboxed kernel start to `{CELL}`, cold / warm (machine CPU) | "
        f"{cold_cpu / warm_cpu:.1f}x ({cold_cpu:.2f} s / {warm_cpu:.2f} s) | fewer CPU seconds per kernel -->",
        "",
        "Every kernel of a grading run after the first pays the warm row instead of the cold one; the suite starts "
        "several hundred sandboxed kernels.",
    ])


if __name__ == "__main__":
    print(main())
