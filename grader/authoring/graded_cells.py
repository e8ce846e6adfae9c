"""The rules a graded test cell follows, checked on its source (course gate check (f)).

A graded test cell has a visible part (the student sees and runs it) and a hidden part between
the markers ``### BEGIN HIDDEN TESTS`` / ``### END HIDDEN TESTS``. The hidden part runs only under
the grader, in the student's kernel, next to code the student controls. So it must hold nothing a
student could read or replace to change a verdict:

- it makes inputs, calls the student's code and *records* the results
  (``record(key, value, "what it checks")``); the grader compares them with the reference run's
  in its own process, and reports a failed key with its description;
- it contains no assertion, no comparison and no testing function: an expected value computed in
  the kernel can be read or overwritten by the student's code (through a patched function, the
  caller's frame, or a replaced operator) before it is compared;
- its markers stand at the top level, so that each part runs as one execution of its own.

The visible part must run where only ``d2lite`` is installed (a student's image): it neither
imports the grader nor records. Everything here reads source code; nothing runs.
"""
from __future__ import annotations

import ast

from ..engine.notebook.cells import (HIDDEN_BEGIN, HIDDEN_END, RECORD_IMPORT, asserts_only, cell_points, is_test,
                                     nbgrader_meta, split_hidden)
from ..engine.notebook.shares import TOLERANCE, declared_shares, in_loop_or_function
from ..engine.reading.rules import rule_problems

__all__ = ["graded_cell_problems", "share_problems", "who_decides", "kernel_word_hint", "COMPARING_CALLS"]

# Names of functions that compare values; any attribute chain through ``testing`` counts too.
COMPARING_CALLS = {"assert_close", "assert_allclose", "assert_equal", "assert_array_equal", "equal",
                   "allclose", "isclose", "array_equal", "testing"}


def _call_names(node: ast.Call) -> list[str]:
    """Every name along a call's function expression: ``torch.testing.assert_close`` gives
    ['torch', 'testing', 'assert_close']."""
    names, target = [], node.func
    while isinstance(target, ast.Attribute):
        names.append(target.attr)
        target = target.value
    if isinstance(target, ast.Name):
        names.append(target.id)
    return names[::-1]


def _describes(call: ast.Call) -> bool:
    """A record() call with a non-empty description: the third argument or ``what=``."""
    what = call.args[2] if len(call.args) >= 3 else next((k.value for k in call.keywords if k.arg == "what"), None)
    if isinstance(what, ast.Constant):
        return isinstance(what.value, str) and bool(what.value.strip())
    return isinstance(what, ast.JoinedStr)


def _hidden_problems(code: str, label: str) -> list[str]:
    try:
        tree = ast.parse(code)
    except SyntaxError as error:
        return [f"{label}: the hidden part does not parse on its own ({error.msg}, line {error.lineno}); "
                "put the markers at the top level, outside any block"]
    problems = []
    first = tree.body[0] if tree.body else None
    imported = {alias.name for alias in first.names} if isinstance(first, ast.ImportFrom) else set()
    if not (isinstance(first, ast.ImportFrom) and first.module == "grader.record" and "record" in imported
            and imported <= {"record", "answer_rules"}):
        problems.append(f"{label}: the hidden part must start with `{RECORD_IMPORT}` "
                        "(or `from grader.record import answer_rules, record`)")
    problems += [f"{label}: {problem}" for problem in rule_problems(code)]
    records = 0
    for node in ast.walk(tree):
        if isinstance(node, ast.Assert):
            problems.append(f"{label}: the hidden part asserts (line {node.lineno}); record the student's "
                            "result instead: the grader compares it with the reference run's")
        elif isinstance(node, ast.Compare):
            problems.append(f"{label}: the hidden part compares values (line {node.lineno}); record the "
                            "student's result instead, and let the grader compare")
        elif isinstance(node, ast.Call):
            names = _call_names(node)
            if COMPARING_CALLS & set(names):
                problems.append(f"{label}: the hidden part calls {'.'.join(names)} (line {node.lineno}), which "
                                "needs an expected value in the student's kernel; record the result instead")
            if names == ["record"]:
                records += 1
                if not _describes(node):
                    problems.append(f"{label}: record() on line {node.lineno} has no description; pass what "
                                    "the value checks as the third argument, in words a student understands")
    if not records:
        problems.append(f"{label}: the hidden part records nothing")
    return problems


def _visible_problems(code: str, label: str) -> list[str]:
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return []  # the cell does not run at all: the reference run says so
    for node in ast.walk(tree):
        module = node.module if isinstance(node, ast.ImportFrom) else None
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
        if (module or "").split(".")[0] == "grader" or any(n.split(".")[0] == "grader" for n in names):
            return [f"{label}: the visible part imports the grader, which students do not have; "
                    "move the import and every record() call into the hidden part"]
    return []


def graded_cell_problems(cell) -> list[str]:
    """What is wrong with one graded test cell's source, as sentences that say what to change."""
    label = f"test cell {nbgrader_meta(cell).get('grade_id', '?')!r}"
    source = cell.get("source", "")
    problems = []
    for line in source.splitlines():
        if (HIDDEN_BEGIN in line or HIDDEN_END in line) and line != line.lstrip():
            problems.append(f"{label}: the line {line.strip()!r} is indented; hidden-test markers stand at "
                            "the top level")
    pieces = split_hidden(source)
    if not any(hidden for _, hidden in pieces):
        problems.append(f"{label}: there is no hidden part; add `### {HIDDEN_BEGIN}` ... `### {HIDDEN_END}` "
                        "recording the student's results on fresh inputs")
    for code, hidden in pieces:
        problems += _hidden_problems(code, label) if hidden else _visible_problems(code, label)
    return problems + share_problems(cell)


def share_problems(cell) -> list[str]:
    """Partial credit (:mod:`grader.engine.notebook.shares`): ``points=`` on every record() call of the cell or
    on none, each a number literal >= 0, adding up to the cell's points."""
    label = f"test cell {nbgrader_meta(cell).get('grade_id', '?')!r}"
    hidden = [code for code, is_hidden in split_hidden(cell.get("source", "")) if is_hidden]
    shares = [share for code in hidden for _, share in declared_shares(code)]
    if all(share is None for share in shares):
        return []
    problems = [f"{label}: record() on line {line} of a hidden part gives points= that is not a number literal "
                ">= 0; write the key's share as a number, e.g. points=1"
                for code in hidden for line, share in declared_shares(code) if share == "not a number"]
    problems += [f"{label}: record(..., points=) on line {line} of a hidden part is inside a loop or function, "
                 "so the grader cannot tell how many keys it records; write one record() call per key"
                 for code in hidden for line in in_loop_or_function(code)]
    if None in shares:
        problems.append(f"{label}: {shares.count(None)} of its {len(shares)} record() calls give no points=; "
                        "give every record() call of the cell a share, or none (all or nothing)")
    numbers = [share for share in shares if isinstance(share, float)]
    if not problems and abs(sum(numbers) - cell_points(cell)) > TOLERANCE:
        problems.append(f"{label}: the points= of its record() calls add up to {sum(numbers):g}, but the cell is "
                        f"worth {cell_points(cell):g} points; change the shares (or the cell's points) so that "
                        "they agree")
    return problems


KERNEL_CHECKS = {"forbid", "forbid_host_sync", "lines_executed", "tensors_saved_for_backward"}


def who_decides(cells) -> str:
    """One line for the gate: how many of a notebook's points rest on what the grader itself observes.

    Points of a test cell whose hidden part records values rest on the grader's comparison; those
    whose exercise also declares ``answer_rules`` rest in part on facts the grader reads from the
    answer's source. Checks in visible parts that run inside the student's kernel (``forbid``,
    ``forbid_host_sync``, ``lines_executed``) are named as advice: they earn no point."""
    from ..engine.reading.rules import _declaration

    total = compared = read = 0.0
    advice = []
    for cell in cells:
        if not is_test(cell):
            continue
        points = cell_points(cell)
        total += points
        hidden = "\n".join(code for code, is_hidden in split_hidden(cell.get("source", "")) if is_hidden)
        visible = "\n".join(code for code, is_hidden in split_hidden(cell.get("source", "")) if not is_hidden)
        compared += points if "record(" in hidden else 0
        read += points if _declaration(hidden) is not None else 0
        try:
            called = {name for node in ast.walk(ast.parse(visible)) if isinstance(node, ast.Call)
                      for name in _call_names(node)}
        except SyntaxError:
            called = set()
        if called & KERNEL_CHECKS:
            advice.append(nbgrader_meta(cell).get("grade_id", "?"))
    line = (f"{compared:g} of {total:g} points rest on values the grader compares, {read:g} of them also on "
            f"facts it reads from the answer's source; {total - compared:g} on the kernel's own word")
    if advice:
        line += f"; kernel-side checks in visible parts are advice only ({', '.join(advice)})"
    return line


def kernel_word_hint(cells) -> str:
    """For the gate: the assert-only test cells (stock nbgrader's kind,
    :func:`grader.engine.notebook.cells.asserts_only`) by grade_id with their points, and how to add a hidden part the grader compares; "" when there are none.

    Such a cell scores full marks when it runs without an error, as nbgrader scores it; the student's code
    runs in the same kernel and can make its asserts pass, so its points rest on the kernel's word."""
    named = [f"{nbgrader_meta(cell).get('grade_id', '?')} ({cell_points(cell):g} points)"
             for cell in cells if asserts_only(cell)]
    if not named:
        return ""
    return (f"assert-only test cells, scored as nbgrader scores them (full marks when they raise nothing, or the number their last line shows), so a "
            f"student's code can forge them: {', '.join(named)}. To make the grader decide, add at the end of each "
            f"a hidden part that records the student's results on fresh inputs:\n"
            f"    ### {HIDDEN_BEGIN}\n    {RECORD_IMPORT}\n"
            f"    record(\"key\", value, \"what it checks\")\n    ### {HIDDEN_END}")
