"""Notebooks the course gate makes from a source notebook, and the lines a release must not hold.

    truncate(nb, exercise.last_cell)   # cells up to an exercise's last test: grade it without the rest
    stubbed_walkthrough(nb)            # every exercise's tests against its stub, in one kernel
    solution_lines(nb), hidden_test_lines(nb)   # what gate (d) looks for in the release
"""
from __future__ import annotations

import copy

import nbformat
from nbformat import NotebookNode

from .cells import (HIDDEN_BEGIN, HIDDEN_END, SOLUTION_BEGIN, SOLUTION_END, exercises, is_manual, is_solution,
                     is_test, nbgrader_meta, stub)

__all__ = ["truncate", "solution_lines", "hidden_test_lines", "STUBBED_PREFIX", "stubbed_walkthrough"]


def truncate(nb: NotebookNode, last_cell: int) -> NotebookNode:
    """A copy that keeps cells 0..last_cell (to grade one exercise without running the rest)."""
    out = copy.deepcopy(nb)
    out.cells = out.cells[: last_cell + 1]
    return out


def _region_lines(source: str, begin: str, end: str) -> list[str]:
    lines, inside = [], False
    for line in source.splitlines():
        if begin in line:
            inside = True
        elif end in line:
            inside = False
        elif inside:
            lines.append(line)
    return lines


def solution_lines(nb: NotebookNode) -> list[str]:
    """Every line of solution code (inside BEGIN/END SOLUTION, or a whole delimiter-less solution cell)."""
    lines = []
    for cell in nb.cells:
        if not is_solution(cell):
            continue
        if SOLUTION_BEGIN in cell.source:
            lines += _region_lines(cell.source, SOLUTION_BEGIN, SOLUTION_END)
        else:
            lines += cell.source.splitlines()
    return lines


def hidden_test_lines(nb: NotebookNode) -> list[str]:
    lines = []
    for cell in nb.cells:
        lines += _region_lines(cell.source, HIDDEN_BEGIN, HIDDEN_END)
    return lines


STUBBED_PREFIX = "gate-stubbed:"


def stubbed_walkthrough(nb: NotebookNode) -> NotebookNode:
    """One notebook that checks every exercise's tests against its stub, in a single kernel.

    For each exercise, in order: its cells with the solution cells stubbed (as plain code cells)
    and its graded test cells renamed ``gate-stubbed:<grade_id>``; then the same span again with
    the real solutions and without the tests, so later exercises start from the state the
    solutions leave. Cells after the last exercise and hand-graded answers are dropped. Each
    renamed test must fail; one whose keys carry shares runs its hidden part even when its visible
    part fails on the stub (:func:`grader.engine.notebook.shares.visible_apart`), so that each key must fail
    there on its own.
    """
    from .shares import visible_apart

    found = exercises(nb)
    out = copy.deepcopy(nb)
    out.cells = []
    if not found:
        return out
    solutions = {i for i, c in enumerate(nb.cells) if is_solution(c) and not is_manual(c)}
    start = 0
    for exercise in found:
        first = min((i for i in solutions if start <= i <= exercise.last_cell), default=start)
        out.cells += [copy.deepcopy(c) for c in nb.cells[start:first] if not is_manual(c)]
        span = [c for c in nb.cells[first: exercise.last_cell + 1] if not is_manual(c)]  # hand-graded: left out
        for cell in span:
            cell = copy.deepcopy(cell)
            if is_solution(cell) and not is_manual(cell):
                holder = nbformat.v4.new_notebook()  # cells set after: new_notebook's check wants ids
                holder.cells = [cell]  # (a course notebook older than nbformat 4.5 has none)
                cell = stub(holder).cells[0]
                cell.metadata.pop("nbgrader", None)
                cell.id = nbformat.v4.new_code_cell().id
            elif is_test(cell):
                cell.metadata.nbgrader["grade_id"] = STUBBED_PREFIX + nbgrader_meta(cell)["grade_id"]
                cell.id = nbformat.v4.new_code_cell().id
            out.cells += visible_apart(cell)  # a cell with shares: its hidden part runs on the stub too
        for cell in span:
            if not is_test(cell):
                cell = copy.deepcopy(cell)
                if not is_solution(cell):
                    cell.id = nbformat.v4.new_code_cell().id
                out.cells.append(cell)
        start = exercise.last_cell + 1
    return out
