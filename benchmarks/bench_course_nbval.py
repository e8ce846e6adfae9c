"""Whole course under `pytest --nbval-lax` with the bundled data set (on a GPU where there is one).

One pytest run over every course notebook, exactly as `make test` runs them, repeated
REPEATS times; we report the median wall time, its ratio to the 4-minute goal, and each
notebook's median share (from pytest's JUnit XML, which times every cell).
"""
from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GOAL_SECONDS = 240.0
REPEATS = int(os.environ.get("BENCH_REPEATS", "3"))


def one_run() -> tuple[float, dict[str, float]]:
    """Wall seconds of one nbval run over course/, and seconds per notebook."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "junit.xml"
        env = dict(os.environ, D2LITE_DATASET="mnist5k")
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "--nbval-lax", "--nbval-cell-timeout=600", "-q",
             "-p", "no:cacheprovider", f"--junitxml={report}", "course"],
            cwd=ROOT, env=env, capture_output=True, text=True,
        )
        wall = time.perf_counter() - start
        if done.returncode != 0:
            raise SystemExit(f"the course notebooks failed under nbval:\n{done.stdout[-3000:]}")
        per_notebook: dict[str, float] = defaultdict(float)
        for case in ET.parse(report).iter("testcase"):
            notebook = Path(case.get("file") or case.get("classname", "?").split("::")[0]).name
            per_notebook[notebook] += float(case.get("time", 0))
    return wall, dict(per_notebook)


def where() -> str:
    """The device the notebooks train on: a CUDA GPU's name where there is one, else CPU."""
    import torch

    return f"GPU: {torch.cuda.get_device_name(0)}" if torch.cuda.is_available() else "CPU"


def main() -> str:
    runs = [one_run() for _ in range(REPEATS)]
    walls = [wall for wall, _ in runs]
    median_wall = statistics.median(walls)
    notebooks = sorted({name for _, per in runs for name in per})
    rows = [
        f"| `{name}` | {statistics.median(per.get(name, 0.0) for _, per in runs):.1f} | "
        f"{statistics.median(per.get(name, 0.0) for _, per in runs) / median_wall:.2f} |"
        for name in notebooks
    ]
    return "\n".join([
        f"## Whole course under `pytest --nbval-lax` ({where()}, MNIST-5k)",
        f"<!-- headline: whole course under pytest --nbval-lax ({where()}) | {median_wall:.0f} s "
        f"({median_wall / GOAL_SECONDS:.2f} of the goal) | <= 240 s -->",
        "",
        f"Median of {REPEATS} runs: **{median_wall:.0f} s** wall for all {len(notebooks)} notebooks; "
        f"ratio to the 4-minute goal: **{median_wall / GOAL_SECONDS:.2f}** (below 1 meets it). "
        f"Runs: {', '.join(f'{w:.0f} s' for w in walls)}.",
        "",
        "| notebook | median seconds (cells) | share of wall time |",
        "| --- | ---: | ---: |",
        *rows,
        "",
        "Shares do not add up to 1: the rest is pytest start-up and one kernel start per notebook.",
    ])


if __name__ == "__main__":
    print(main())
