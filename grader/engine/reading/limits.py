"""How much of a student's source the grader agrees to read: caps checked on the raw text, before parsing.

Reading an answer (:mod:`grader.engine.reading.source`) parses it in the grader's own process, and the
cost of parsing is not linear: IPython rewrites a cell once per escaped line (``!ls``, ``%time``), so 400
of them in one cell took minutes; a function nested 98 deep around a 1.8 MB literal is unparsed and
re-parsed once per nesting level; a 500-deep ``- - - 1`` exhausts Python's recursion. These caps are
counted by scanning the text once, so checking them costs a scan and no more. A student cell over a cap
is not parsed: the tests after it are flagged for a person (a finding), never zeroed.

The caps sit about five times above the largest code cell of the course's own notebooks (4,400
characters, 93 lines, 19 escaped lines, brackets 7 deep) so that no honest answer reaches them. What
still escapes them (a long operator chain across bracketed lines) is bounded by the time and memory
limits of the process that reads (:mod:`grader.engine.reading.bounds`).
"""
from __future__ import annotations

import re

__all__ = ["MAX_CELL_CHARS", "MAX_CELL_LINES", "MAX_ESCAPED_LINES", "MAX_DEPTH", "MAX_STUDENT_CHARS",
           "nesting_depth", "cell_over_caps", "cells_over_caps", "OVER_CAPS"]

MAX_CELL_CHARS = 20_000  # characters of one student cell
MAX_CELL_LINES = 500  # lines of one student cell
MAX_ESCAPED_LINES = 50  # lines IPython rewrites (``!cmd``, ``%magic``, ``x?``) in one student cell
MAX_DEPTH = 40  # estimated nesting: brackets + indentation levels + a run of unary operators
MAX_STUDENT_CHARS = 200_000  # characters of all the student's cells of a notebook together

OVER_CAPS = "code the grader cannot read: a cell too large or too deeply nested to read within the grader's limits"
TOKEN = re.compile(r"[-+~]|\bnot\b|\S")  # one token per position tried: a linear scan, no backtracking


def _unary_run(line: str) -> int:
    """The longest run of unary operators in ``line`` that ends at an operand (``- - -x``, ``not not (y)``);
    a run that ends nowhere (a ``# -----`` rule, a docstring's underline) is not counted."""
    longest = run = 0
    for token in TOKEN.finditer(line):
        text = token.group()
        if text in ("-", "+", "~", "not"):
            run += 1
            continue
        if text.isalnum() or text in "_([{.'\"":
            longest = max(longest, run)
        run = 0
    return longest


def _escaped(line: str) -> bool:
    """Whether IPython rewrites ``line``: a shell or magic line (``!ls``, ``%time``) or a help request (``x?``)."""
    return line.lstrip()[:1] in ("!", "%") or line.rstrip().endswith("?")


def nesting_depth(source: str) -> int:
    """An estimate of how deeply ``source`` nests, from its text: the deepest point of open brackets
    plus indentation levels (a stack of indent widths, lines inside brackets skipped), or the longest
    run of unary operators (``- - - x``, ``not not x``), whichever is larger. Strings and comments are
    counted too: the estimate errs high, never low."""
    deepest, brackets, indents = 0, 0, [0]
    for line in source.splitlines():
        if line.strip() and brackets <= 0:
            width = len(line) - len(line.lstrip())
            while width < indents[-1]:
                indents.pop()
            if width > indents[-1]:
                indents.append(width)
        start = max(brackets, 0) + len(indents) - 1
        deepest = max(deepest, start)
        for char in line:
            if char in "([{":
                brackets += 1
                deepest = max(deepest, max(brackets, 0) + len(indents) - 1)
            elif char in ")]}":
                brackets -= 1
        deepest = max(deepest, _unary_run(line))
    return deepest


def cell_over_caps(source: str) -> str | None:
    """Which cap one cell's text is over, in words ("25,000 characters; at most 20,000"), or None."""
    if len(source) > MAX_CELL_CHARS:
        return f"{len(source):,} characters; at most {MAX_CELL_CHARS:,}"
    lines = source.splitlines()
    if len(lines) > MAX_CELL_LINES:
        return f"{len(lines):,} lines; at most {MAX_CELL_LINES:,}"
    escaped = sum(1 for line in lines if _escaped(line))
    if escaped > MAX_ESCAPED_LINES:
        return f"{escaped:,} shell, magic or help lines; at most {MAX_ESCAPED_LINES:,}"
    depth = nesting_depth(source)
    if depth > MAX_DEPTH:
        return f"nested about {depth:,} deep; at most {MAX_DEPTH:,}"
    return None


def cells_over_caps(cells: list[tuple[str, str]]) -> dict[int, str]:
    """For each student cell ("answer" or "added") that will not be read, the finding that says why:
    over a cap of its own, or past :data:`MAX_STUDENT_CHARS` of student text counted from the top.
    cells: (role, source) of every cell of the notebook. The instructor's cells are not capped."""
    found, total = {}, 0
    for index, (role, source) in enumerate(cells):
        if role not in ("answer", "added"):
            continue
        total += len(source)
        why = cell_over_caps(source) or (f"the student's cells reach {total:,} characters in all; "
                                         f"at most {MAX_STUDENT_CHARS:,}" if total > MAX_STUDENT_CHARS else None)
        if why:
            found[index] = f"{OVER_CAPS} ({why}) (cell {index}, line 1)"
    return found
