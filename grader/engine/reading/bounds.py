"""Read a notebook's answers in a child process with a wall-clock and a memory limit.

The caps of :mod:`grader.engine.reading.limits` keep what is parsed small, but not every cost of reading
is linear in it (a function nested 38 deep around a 17 KB literal, under every cap, took 11 s to read;
ten such cells, 35 s). So the grading worker does not read in its own process: it hands the cells to
``python -m grader.engine.reading.bounds``, which reads them under ``RLIMIT_AS`` and is killed past
:data:`READ_TIMEOUT_S`. A reading that runs out of time or memory, or whose process dies, flags every
graded test of the notebook for a person (a finding: the test keeps the points its behaviour earned);
the grading goes on. The child costs a fresh interpreter per notebook: 01_tensors read in 0.45 s of CPU
in a child against 0.14 s in a warm worker (0.24 s of it is starting Python and importing IPython);
d2lite's canonical forms (1 s to compute) are computed once per worker and handed to each child.
"""
from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

from .copies import _d2lite_functions, use_d2lite_forms
from .rules import Reading, exercises, test_cell_readings

__all__ = ["bounded_readings", "READ_TIMEOUT_S", "READ_MEMORY_MB", "OVER_LIMITS"]

READ_TIMEOUT_S = 60.0  # wall-clock seconds to read one notebook's answers; a cell may run for 300
READ_MEMORY_MB = 1024  # address space of the reading process
OVER_LIMITS = "code the grader cannot read: the answers' source, which {what} (the grader's limit for reading it)"
ROOT = Path(__file__).resolve().parents[3]  # the folder that holds the grader package


def _flag_all(cells: list[tuple[str, str]], what: str) -> dict[int, tuple[list[int], Reading]]:
    """Every test of the notebook, with the one finding that says why its answers were not read."""
    return {index: (answers, Reading([OVER_LIMITS.format(what=what)])) for index, answers in exercises(cells).items()}


def bounded_readings(cells: list[tuple[str, str]], timeout_s: float = READ_TIMEOUT_S,
                     memory_mb: int = READ_MEMORY_MB) -> dict[int, tuple[list[int], Reading]]:
    """:func:`grader.engine.reading.rules.test_cell_readings` of ``cells`` ((role, source) of every cell),
    read in a child process that may use ``memory_mb`` of address space and ``timeout_s`` seconds.
    Never raises for what the student wrote: over a limit, every test gets a finding instead."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    try:
        done = subprocess.run([sys.executable, "-m", "grader.engine.reading.bounds", str(memory_mb)],
                              input=json.dumps([cells, _d2lite_functions()]), capture_output=True, text=True, timeout=timeout_s, env=env)
    except subprocess.TimeoutExpired:
        return _flag_all(cells, f"took longer than {timeout_s:g} s to read")
    if done.returncode != 0 or not done.stdout.strip():
        memory = "MemoryError" in done.stderr or done.returncode == -9
        what = (f"needed more than {memory_mb:,} MB to read" if memory
                else f"stopped the process that reads it (exit status {done.returncode})")
        return _flag_all(cells, what)
    read = json.loads(done.stdout)
    return {int(index): (answers, Reading(problems, certain)) for index, (answers, problems, certain) in read.items()}


def _main(memory_mb: int) -> None:
    """The child: [(role, source) pairs, d2lite's forms] as JSON on stdin; {test index: [answers, problems,
    certain]} on stdout."""
    from IPython.core.inputtransformer2 import TransformerManager  # noqa: F401 (imported before the limit)

    pairs, forms = json.load(sys.stdin)
    cells = [tuple(pair) for pair in pairs]
    use_d2lite_forms(forms)
    limit = memory_mb * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    read = test_cell_readings(cells)
    json.dump({index: [answers, reading.problems, reading.certain] for index, (answers, reading) in read.items()},
              sys.stdout)


if __name__ == "__main__":
    _main(int(sys.argv[1]))
