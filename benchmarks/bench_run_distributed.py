"""What ``d2lite.run_distributed`` costs per call: its launcher in a new Python per call, as until 2026-11-29,
against a fork of ``d2lite.script_forker``'s helper, which imports torch once (Linux, now).

Each round starts one Python per way that imports torch and d2lite and then makes ``CALLS`` calls of two gloo
processes that all-reduce a tensor: 5, what one grading run of 05_multigpu makes up to its last graded test
(the collectives demo, then a visible and a hidden check for each of the two exercises). The two Pythons run in
turn; measured for each: the wall time of every call and the CPU time the whole machine spent over all of them
(``/proc/stat``, every process: the helper's start is in the first call). Medians of ``BENCH_REPEATS`` rounds
(default 5).
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REPEATS = int(os.environ.get("BENCH_REPEATS", "5"))
CALLS = 5

CALLER = """
import json, os, sys, time
import torch, torch.distributed as dist
import d2lite
from d2lite import parallel

def add_up(x):
    dist.all_reduce(x)
    return x

parallel._FORK_THE_LAUNCHER = sys.argv[1] == "helper"
def busy():
    fields = [int(v) for v in open("/proc/stat").readline().split()[1:]]
    return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")
walls, cpu = [], busy()
for _ in range(int(sys.argv[2])):
    start = time.perf_counter()
    [(_, (x,)), _] = d2lite.run_distributed(add_up, [(torch.ones(2),), (torch.ones(2),)])
    walls.append(time.perf_counter() - start)
    assert x.tolist() == [2.0, 2.0]
print(json.dumps({"walls": walls, "cpu": busy() - cpu}))
"""


def _calls(caller: Path, way: str) -> dict:
    done = subprocess.run([sys.executable, str(caller), way, str(CALLS)], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)), check=True)
    return json.loads(done.stdout)


def main() -> str:
    runs = {"new Python": [], "helper": []}
    with tempfile.TemporaryDirectory() as folder:
        caller = Path(folder) / "caller.py"  # a file: run_distributed reads its function's source
        caller.write_text(CALLER)
        for _ in range(REPEATS):
            for way in runs:
                runs[way].append(_calls(caller, way))

    def median(way, value):
        return statistics.median(value(run) for run in runs[way])

    rows = []
    for way in runs:
        rows.append(f"| {way} | {median(way, lambda r: r['walls'][0]):.2f} | "
                    f"{median(way, lambda r: statistics.median(r['walls'][1:])):.2f} | "
                    f"{median(way, lambda r: sum(r['walls'])):.2f} | {median(way, lambda r: r['cpu']):.2f} |")
    fresh, helper = median("new Python", lambda r: r["cpu"]), median("helper", lambda r: r["cpu"])
    return "\n".join([
        "## run_distributed: a new Python per call, or a fork of a helper that imported torch once",
        "",
        f"One Python per way makes {CALLS} calls (2 gloo processes, one all-reduce each), the ways in turn; medians "
        f"of {REPEATS} rounds. Machine CPU: every process, over all {CALLS} calls.",
        "",
        "| launcher | first call: wall s | later calls: wall s (median) | all calls: wall s | all calls: machine CPU s |",
        "| --- | --- | --- | --- | --- |",
        *rows,
        "",
        f"<!-- headline: run_distributed, {CALLS} calls, new Python per call / helper fork (machine CPU) | "
        f"{fresh / helper:.1f}x ({fresh:.2f} s / {helper:.2f} s) | fewer CPU seconds per grading run of 05 -->",
        "",
        "The helper's start (importing torch once) is in its first call; every later call forks it.",
    ])


if __name__ == "__main__":
    print(main())
