"""Partial credit: each recorded key of a graded test cell may carry a share of the cell's points.

    record("mean", m, "the mean of a vector", atol=1e-6, points=1)
    record("max", top, "the largest entry of a vector", points=2)   # the cell is worth 3

Either no ``record()`` call of a cell gives ``points=`` (all or nothing, as before) or every one
does, and the shares add up to the cell's nbgrader points. The share that counts is the one the
trusted *reference* run recorded (kept with the key in ``references/``, like its tolerances);
whatever a student's kernel puts in a payload is never read.

A key earns its share when it was recorded exactly once with a matching value. When the cell
stopped part-way (an exception, a timeout or a crash in the hidden part), only the keys of the
reference's order *before the first key that was not recorded* count: those the hidden part
recorded before it stopped. A payload for a later key can only come from the student's code (the
hidden part never got there), so it earns nothing; and the stop itself never earns anything, it
only costs the keys that were not reached.

:func:`declared_shares` reads the shares from a cell's source (the gate's check (f) and its
stubbed walk-through, :func:`visible_apart`, use it); nothing here runs a kernel or imports torch.
"""
from __future__ import annotations

import ast

__all__ = ["TOLERANCE", "declared_shares", "in_loop_or_function", "share_of", "has_shares", "earned",
           "visible_apart"]

TOLERANCE = 1e-9  # shares and cell points are compared with this slack (floats: 0.1 + 0.2)


def share_of(ref: dict) -> float | None:
    """The share of one reference key (None: the key carries none)."""
    points = ref.get("points") if isinstance(ref, dict) else None
    return float(points) if isinstance(points, (int, float)) and not isinstance(points, bool) else None


def has_shares(expected: dict) -> bool:
    """True when the reference keys of a cell carry shares (partial credit)."""
    return bool(expected) and all(share_of(ref) is not None for ref in expected.values())


def earned(expected: dict, problems: dict[str, str], recorded: set[str], stopped: bool) -> tuple[float, list[str]]:
    """(points earned, the keys that earned them) for a cell with shares.

    expected: reference key -> {"points": share, ...}, in the reference run's order.
    problems: key -> why it does not match ("" when it does; :mod:`grader.engine.verdict.compare` decides).
    recorded: the keys the run recorded at least once.
    stopped: the hidden part did not run to its end: keys after the first one not recorded at all
    earn nothing (see the module docstring)."""
    total, keys = 0.0, []
    for key, ref in expected.items():
        if stopped and key not in recorded:
            break
        if not problems.get(key):
            total, keys = total + (share_of(ref) or 0.0), keys + [key]
    return total, keys


def _points_argument(call: ast.Call) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == "points"), None)


def declared_shares(code: str) -> list[tuple[int, object]]:
    """[(line, share)] for every ``record(...)`` call in ``code``; share is the number given as
    ``points=``, None when the call has no ``points=``, or the string "not a number" when it is
    not a non-negative number literal. Code that does not parse gives []."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "record":
            value = _points_argument(node)
            if value is None:
                found.append((node.lineno, None))
            elif (isinstance(value, ast.Constant) and type(value.value) in (int, float)
                  and value.value >= 0):
                found.append((node.lineno, float(value.value)))
            else:
                found.append((node.lineno, "not a number"))
    return sorted(found, key=lambda pair: pair[0])


def in_loop_or_function(code: str) -> list[int]:
    """Lines of ``record(..., points=...)`` calls inside a loop, comprehension or function: such a
    call may record several keys (or none), so its share cannot be read from the source."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return []
    lines = []
    blocks = (ast.For, ast.AsyncFor, ast.While, ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda,
              ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
    for block in ast.walk(tree):
        if isinstance(block, blocks):
            lines += [node.lineno for node in ast.walk(block) if isinstance(node, ast.Call)
                      and isinstance(node.func, ast.Name) and node.func.id == "record"
                      and _points_argument(node) is not None]
    return sorted(set(lines))


def visible_apart(cell) -> list:
    """For the gate's stub runs: a graded test cell with shares as two cells, its visible part as a
    plain code cell (that it fails on the stub stops nothing) and then the test cell holding its
    hidden part(s) only. So every key is recorded on the stub unless the stub stops it, and a key
    that matches there (a share given for nothing) shows as points. Any other cell: ``[cell]``."""
    import copy

    import nbformat

    from .cells import HIDDEN_BEGIN, HIDDEN_END, is_test, split_hidden, without_hidden

    pieces = split_hidden(cell.get("source", "")) if is_test(cell) else []
    if not any(share is not None for code, hidden in pieces if hidden for _, share in declared_shares(code)):
        return [cell]
    test = copy.deepcopy(cell)
    test.source = "\n".join(f"### {HIDDEN_BEGIN}\n{code}\n### {HIDDEN_END}" for code, hidden in pieces if hidden)
    return [nbformat.v4.new_code_cell(without_hidden(cell.source)), test]
