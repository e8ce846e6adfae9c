"""What reading a notebook's answers costs the grading worker (:mod:`grader.engine.reading.bounds`): in a fresh
Python per notebook, as the grader read until 2026-11-28, against a fork of the worker's reading server, as it
reads now. Both read the same cells with the same code and d2lite forms; only the process around the reading
differs.

Each round reads every course notebook's solution once each way, in turn. Measured per notebook: the wall time
and the CPU time the whole machine spent meanwhile (``/proc/stat``, every process). The server's own start (once
per grading worker) is timed apart. Medians of ``BENCH_REPEATS`` rounds (default 5).
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
REPEATS = int(os.environ.get("BENCH_REPEATS", "5"))

# The fresh child, as bounds.py ran it before the server: a new Python that imports the reading code, takes the
# forms, sets its address-space limit, reads, and prints the readings.
FRESH_CHILD = """
import json, resource, sys
from IPython.core.inputtransformer2 import TransformerManager
from grader.engine.reading.copies import use_d2lite_forms
from grader.engine.reading.rules import test_cell_readings
pairs, forms = json.load(sys.stdin)
use_d2lite_forms(forms)
resource.setrlimit(resource.RLIMIT_AS, (2**30, 2**30))
read = test_cell_readings([tuple(p) for p in pairs])
json.dump({i: [a, r.problems, r.certain] for i, (a, r) in read.items()}, sys.stdout)
"""


def _busy_seconds() -> float:
    """CPU seconds the machine has spent (all cores, everything but idle and I/O wait) since boot."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def _cells(path: Path) -> list[tuple[str, str]]:
    """(role, source) of every cell of a course notebook, its solutions in: what the grader reads."""
    import nbformat

    def role(cell) -> str:
        meta = cell.metadata.get("nbgrader", {})
        return ("answer" if meta.get("solution") else "test" if meta.get("grade") and cell.cell_type == "code"
                else "trusted" if cell.cell_type == "code" else "markdown")

    return [(role(cell), cell.source) for cell in nbformat.read(str(path), as_version=4).cells]


def _fresh(cells) -> None:
    from grader.engine.reading.copies import _d2lite_functions

    done = subprocess.run([sys.executable, "-c", FRESH_CHILD], input=json.dumps([cells, _d2lite_functions()]),
                          capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)), check=True)
    json.loads(done.stdout)


def _timed(read, cells) -> tuple[float, float]:
    cpu, start = _busy_seconds(), time.perf_counter()
    read(cells)
    return time.perf_counter() - start, _busy_seconds() - cpu


def main() -> str:
    from grader.engine.reading.bounds import bounded_readings
    from grader.engine.reading.copies import _d2lite_functions

    notebooks = {path.stem: _cells(path) for path in sorted((ROOT / "course").glob("*.ipynb"))}
    _d2lite_functions()  # computed once per worker either way
    server = _timed(bounded_readings, [("answer", "x = 1")])  # starts the server: timed apart
    runs = {name: {"fresh": [], "server": []} for name in notebooks}
    for _ in range(REPEATS):
        for name, cells in notebooks.items():
            runs[name]["fresh"].append(_timed(_fresh, cells))
            runs[name]["server"].append(_timed(bounded_readings, cells))
    rows, totals = [], {"fresh": [0.0, 0.0], "server": [0.0, 0.0]}
    for name, kinds in runs.items():
        medians = {kind: [statistics.median(x[i] for x in kinds[kind]) for i in (0, 1)] for kind in kinds}
        for kind in totals:
            totals[kind][0] += medians[kind][0]
            totals[kind][1] += medians[kind][1]
        rows.append(f"| {name} | {medians['fresh'][0]:.2f} | {medians['fresh'][1]:.2f} | {medians['server'][0]:.2f} "
                    f"| {medians['server'][1]:.2f} | {medians['fresh'][1] / medians['server'][1]:.1f}x |")
    (fresh_wall, fresh_cpu), (server_wall, server_cpu) = totals["fresh"], totals["server"]
    return "\n".join([
        "## Reading a notebook's answers: a fresh Python per notebook, or a fork of the reading server",
        "",
        f"Each course notebook's solution, read both ways in turn; medians of {REPEATS} rounds.",
        "",
        "| notebook | fresh: wall s | fresh: machine CPU s | server: wall s | server: machine CPU s | CPU fresh / server |",
        "| --- | --- | --- | --- | --- | --- |",
        *rows,
        f"| all ten | {fresh_wall:.2f} | {fresh_cpu:.2f} | {server_wall:.2f} | {server_cpu:.2f} | "
        f"{fresh_cpu / server_cpu:.1f}x |",
        f"| the server's own start, with a first small reading (once per grading worker) | | | {server[0]:.2f} | "
        f"{server[1]:.2f} | |",
        "",
        f"<!-- headline: reading a notebook's answers, fresh Python / server fork (machine CPU, ten notebooks) | "
        f"{fresh_cpu / server_cpu:.1f}x ({fresh_cpu:.2f} s / {server_cpu:.2f} s) | fewer CPU seconds per submission -->",
        "",
        "Every submission graded is read once; a grading worker pays the server's start once.",
    ])


if __name__ == "__main__":
    print(main())
