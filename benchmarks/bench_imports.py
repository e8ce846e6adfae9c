"""What constraints.txt's jsonschema pin saves each process that imports nbformat.

From jsonschema 4.25 on, its ``format-nongpl`` extra (which jupyter-events asks for) installs rfc3987-syntax, and
jsonschema imports it, building dozens of lark parsers, whenever it is imported; nbformat imports jsonschema. The
course pins jsonschema 4.24.1. This benchmark starts the same processes twice over: as installed, and with
jsonschema 4.26.0, rfc3987-syntax 1.1.0 and lark 1.3.1 (the versions the pin replaced) put first on the path from a
folder of their own, downloaded from the package index into a temporary folder (nothing else changes).

Measured per start: the wall time and the CPU time the whole machine spent meanwhile (``/proc/stat``). The two
kinds alternate; medians of ``BENCH_REPEATS`` rounds (default 7).
"""
from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPEATS = int(os.environ.get("BENCH_REPEATS", "7"))
UNPINNED = ("jsonschema==4.26.0", "rfc3987-syntax==1.1.0", "lark==1.3.1")

# (what starts, the Python that it runs)
STARTS = {
    "`import nbformat` (nbval, nbclient, the test processes)": "import nbformat",
    "stock nbgrader's command line, `nbgrader --version`":
        "import sys; from nbgrader.apps.nbgraderapp import main; sys.argv = ['nbgrader', '--version']; main()",
    "`import jupyter_events.validators` (JupyterLab's server)": "import jupyter_events.validators",
}


def _busy_seconds() -> float:
    """CPU seconds the machine has spent (all cores, everything but idle and I/O wait) since boot."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def _timed(code: str, env: dict) -> tuple[float, float]:
    cpu, start = _busy_seconds(), time.perf_counter()
    subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True)
    return time.perf_counter() - start, _busy_seconds() - cpu


def _unpinned_folder(folder: Path) -> Path:
    """The unpinned versions, installed (without their dependencies, which the environment has) into ``folder``."""
    done = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(folder),
                           *UNPINNED], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"bench_imports: could not install {', '.join(UNPINNED)} into a temporary folder (the "
                         f"package index must be reachable):\n{done.stderr[-2000:]}")
    return folder


def main() -> str:
    from importlib.metadata import version

    pinned = version("jsonschema")
    with tempfile.TemporaryDirectory(prefix="bench_imports_") as scratch:
        folder = _unpinned_folder(Path(scratch) / "unpinned")
        envs = {"pinned": dict(os.environ),
                "unpinned": dict(os.environ, PYTHONPATH=os.pathsep.join(
                    [str(folder), *filter(None, [os.environ.get("PYTHONPATH")])]))}
        check = "import sys, nbformat; print('rfc3987_syntax' in sys.modules)"
        loaded = {kind: subprocess.run([sys.executable, "-c", check], env=env, capture_output=True, text=True,
                                       check=True).stdout.strip() for kind, env in envs.items()}
        if loaded != {"pinned": "False", "unpinned": "True"}:
            raise SystemExit(f"bench_imports: expected the lark parsers only without the pin, found {loaded}")
        runs = {name: {kind: [] for kind in envs} for name in STARTS}
        for _ in range(REPEATS):
            for name, code in STARTS.items():
                for kind, env in envs.items():
                    runs[name][kind].append(_timed(code, env))
    rows, ratios = [], []
    for name, kinds in runs.items():
        (u_wall, u_cpu), (p_wall, p_cpu) = ([statistics.median(x[i] for x in kinds[kind]) for i in (0, 1)]
                                            for kind in ("unpinned", "pinned"))
        ratios.append(u_cpu / p_cpu)
        rows.append(f"| {name} | {u_wall:.2f} | {u_cpu:.2f} | {p_wall:.2f} | {p_cpu:.2f} | {u_cpu - p_cpu:.2f} "
                    f"| {u_cpu / p_cpu:.1f}x |")
    return "\n".join([
        "## A process that imports nbformat: jsonschema 4.26 with rfc3987-syntax, or the pinned jsonschema",
        "",
        f"Each start run both ways in turn: jsonschema 4.26.0 with rfc3987-syntax 1.1.0 and lark 1.3.1, against the "
        f"pinned jsonschema {pinned} (constraints.txt); medians of {REPEATS} rounds.",
        "",
        "| process start | 4.26: wall s | 4.26: machine CPU s | pinned: wall s | pinned: machine CPU s "
        "| CPU saved s | CPU 4.26 / pinned |",
        "| --- | --- | --- | --- | --- | --- | --- |",
        *rows,
        "",
        f"<!-- headline: stock nbgrader's command line starting, jsonschema 4.26 / pinned {pinned} (machine CPU) | "
        f"{ratios[1]:.1f}x | fewer CPU seconds per process -->",
        "",
        "`make test` starts dozens of such processes: every nbgrader command of the tests, every JupyterLab "
        "server, nbval and each grader command that reads a notebook before the grader's own guard "
        "(grader/__init__.py) is imported.",
    ])


if __name__ == "__main__":
    print(main())
