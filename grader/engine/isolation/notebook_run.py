"""Run a notebook's code cells in order in one kernel, within the time budgets, keeping score.

Graded test cells run in parts: the code before ``### BEGIN HIDDEN TESTS``, the hidden part, and
what follows, each as an execution of its own (hidden parts outside the kernel's input history).
So a verdict can say whether a visible or a hidden check failed without quoting the kernel.

Once a hidden part has started, the student's code may hold hidden test code (a kernel sees all
the code it runs: ``In``, ``_ih``, ``linecache``, hooks on cell execution), and anything it prints
later could quote it, in any encoding. Every cell that runs from then on is *tainted*:
:func:`scrub_tainted` replaces its outputs with a note, so nothing of a hidden test reaches the
autograded notebook or the feedback made from it.
"""
from __future__ import annotations

import ast
import time
from pathlib import Path

import nbformat

from ..notebook.cells import split_hidden
from .kernel import MAX_RECORD_BYTES, CellRun, Kernel
from .sandbox import Limits

__all__ = ["run_notebook", "scrub_tainted", "TAINTED_NOTE", "NOT_RUN_NOTE", "MAX_NOTEBOOK_RECORD_BYTES",
           "RECORD_LIMITS"]

MAX_NOTEBOOK_RECORD_BYTES = 128 * 1024 * 1024  # the records kept for one notebook, all test cells
RECORD_LIMITS = f"{MAX_RECORD_BYTES >> 20} MB per cell, {MAX_NOTEBOOK_RECORD_BYTES >> 20} MB per notebook"

TAINTED_NOTE = ("[course-grader: the outputs of cells run after the first hidden test are not kept; "
                "run your notebook to see them]\n")
NOT_RUN_NOTE = ("[course-grader: not run while grading: no graded cell comes after it, so it decides no points; "
                "run your notebook to see its output]\n")


def _last_statement(parts: list[tuple[str, bool]]) -> int:
    """The index of the last part that holds a statement: the only one whose result (``Out``) the cell, run
    whole as nbgrader runs it, would show."""
    for index in range(len(parts) - 1, -1, -1):
        try:
            if ast.parse(parts[index][0]).body:
                return index
        except SyntaxError:
            return index
    return -1


def _run_test_cell(kernel: Kernel, source: str, timeout: float, hidden_started: bool) -> CellRun:
    """One test cell, part by part, within ``timeout`` seconds for the whole cell. Only the part holding the
    cell's last statement keeps its result (``Out``): nbgrader scores a cell by it
    (grader.engine.verdict.output_score)."""
    deadline = time.monotonic() + timeout
    total = CellRun("ok", tainted=hidden_started)
    parts = split_hidden(source)
    last = _last_statement(parts)
    for index, (code, hidden) in enumerate(parts):
        run = kernel.run(code, timeout=max(0.0, deadline - time.monotonic()), store_history=not hidden)
        total.tainted |= hidden
        total.outputs += [o for o in run.outputs if index == last or o.get("output_type") != "execute_result"]
        total.records += run.records
        total.record_bytes += run.record_bytes
        total.truncated |= run.truncated
        if run.status != "ok":
            total.status, total.error = run.status, run.error
            total.part = "hidden" if hidden else "visible"
            break
    return total


def run_notebook(nb, roles: list, workdir: Path, limits: Limits, *, sandboxed: bool,
                 record: bool, support: tuple[Path, ...] = (),
                 upto: int | None = None) -> tuple[dict[int, CellRun], list[str]]:
    """Run every code cell of ``nb`` in order in one kernel; outputs go into ``nb``.

    roles: one :class:`grader.engine.notebook.merge.Role` per cell (``kind`` "test" cells run in parts).
    workdir: a scratch folder; the kernel works in a fresh folder inside it (grader.engine.isolation.kernel).
    support: files each kernel finds in its working folder.
    upto: the last cell to run (None: all); each code cell after it keeps only :data:`NOT_RUN_NOTE` and has no run.
    Returns (cell index -> what happened, problems for the instructor). Records are kept for test
    cells only, up to MAX_NOTEBOOK_RECORD_BYTES in all; past that a test's records become [None]."""
    runs: dict[int, CellRun] = {}
    problems: list[str] = []
    if upto is not None:
        for cell in nb.cells[upto + 1:]:
            if cell.cell_type == "code":
                cell.outputs = [nbformat.v4.new_output("stream", name="stderr", text=NOT_RUN_NOTE)]
                cell.execution_count = None
    count, record_budget = 0, MAX_NOTEBOOK_RECORD_BYTES
    try:
        kernel = Kernel(Path(workdir).resolve(), limits, sandboxed=sandboxed, record=record, support=support)
        kernel.__enter__()
    except Exception as exc:  # noqa: BLE001 - whatever stops the kernel, grading goes on
        problems.append(f"the kernel could not start: {exc}")
        for i, cell in enumerate(nb.cells[: None if upto is None else upto + 1]):
            if cell.cell_type == "code":
                runs[i] = CellRun("not run", error=f"the kernel could not start ({exc})")
        return runs, problems
    budget_end = time.monotonic() + limits.notebook_timeout_s
    hidden_started = False
    try:
        for i, cell in enumerate(nb.cells[: None if upto is None else upto + 1]):
            if cell.cell_type != "code":
                continue
            left = budget_end - time.monotonic()
            if left <= 0:
                runs[i] = CellRun("not run", error="the notebook used up its total time limit "
                                  f"of {limits.notebook_timeout_s:g} s")
                continue
            timeout = min(limits.cell_timeout_s, left)
            if roles[i].kind == "test":
                run = _run_test_cell(kernel, cell.source, timeout, hidden_started)
            else:
                run = kernel.run(cell.source, timeout=timeout)
                run.tainted = hidden_started
            hidden_started |= run.tainted
            runs[i] = run
            if run.status != "not run":
                count += 1
                cell.execution_count = count
            cell.outputs = run.outputs
            label = roles[i].grade_id or f"cell {i + 1}"
            if run.status == "timeout" and left < limits.cell_timeout_s:
                problems.append(f"{label} timed out: the notebook used up its total time limit "
                                f"of {limits.notebook_timeout_s:g} s; later cells were not run")
            elif run.status == "timeout":
                problems.append(f"{label} timed out after {limits.cell_timeout_s:g} s")
                if not kernel.alive() and left >= limits.cell_timeout_s:
                    problems.append(_replay(kernel, nb, roles, runs, i, label, budget_end))
            elif run.status == "crashed":
                problems.append(f"{label}: {run.error}; later cells were not run")
            if run.truncated:
                problems.append(f"{label} printed more than {limits.max_output_bytes} bytes; "
                                "its output was cut")
            if run.records and roles[i].kind in ("answer", "added"):
                problems.append(f"{label} (a student cell) emitted grading records; they were "
                                "ignored")
                run.records = []
            elif run.records and roles[i].kind != "test":
                run.records = []  # only test cells' records count; keep no others in memory
            elif run.records:
                record_budget = _keep_within(run, record_budget)
                if None in run.records:
                    problems.append(f"{label} recorded values over the grader's size limit ({RECORD_LIMITS}); "
                                    "they were dropped and the test fails")
    finally:
        kernel.__exit__(None, None, None)
    return runs, problems + kernel.problems


def _keep_within(run: CellRun, budget: int) -> int:
    """Drop the records of ``run`` if they do not fit in ``budget`` bytes; then the budget is spent,
    and every later test's records are dropped too. Returns the budget left."""
    if run.record_bytes > budget:
        run.records, run.record_bytes = [None], 0
        return 0
    return budget - run.record_bytes


def _replay(kernel: Kernel, nb, roles: list, runs: dict[int, CellRun], upto: int, label: str,
            budget_end: float) -> str:
    """After a cell ignored the interrupt and its kernel was killed: start a fresh kernel and
    run again, silently, every cell before it that had succeeded. Returns the problem to report."""
    try:
        kernel.restart()
    except Exception:  # noqa: BLE001
        return f"{label} ignored the interrupt; the kernel could not be restarted"
    for j in range(upto):
        left = min(kernel.limits.cell_timeout_s, budget_end - time.monotonic())
        if j not in runs or runs[j].status != "ok":
            continue
        source = nb.cells[j].source
        again = (CellRun("timeout") if left <= 0 else _run_test_cell(kernel, source, left, True)
                 if roles[j].kind == "test" else kernel.run(source, timeout=left))
        if again.status != "ok":
            kernel.stop()
            kernel.dead_reason = (f"the kernel was restarted after {label} ignored the interrupt, "
                                  "but the cells before it did not run again")
            return kernel.dead_reason + "; later cells were not run"
    return (f"{label} ignored the interrupt: the kernel was restarted and the cells before it "
            "were run again")


def scrub_tainted(nb, runs: dict[int, CellRun]) -> None:
    """Replace the outputs of every tainted cell with one note (see the module docstring)."""
    for i, run in runs.items():
        if run.tainted and nb.cells[i].get("outputs"):
            nb.cells[i].outputs = [nbformat.v4.new_output("stream", name="stderr", text=TAINTED_NOTE)]
