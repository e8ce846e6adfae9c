"""Read a student's code as text: which statements an exercise's answer reaches, and what they name.

The grader establishes some facts about an answer from its *source*, in its own process, because a
check inside the student's kernel (a profile hook, a tracer, a patched function) can be removed by
the very code it watches. This module is the reading half: it turns the cells of a merged notebook
into top-level statements, knows which names each statement binds and which global names it uses,
and follows those names from an exercise's answer cells to every statement the answer can reach.
:mod:`grader.engine.reading.rules` judges what it finds.

Cells are read the way IPython would run them (``TransformerManager``: magics become calls), so the
text judged is the text that runs. A cell that does not parse runs nothing and binds nothing. Student
cells over the caps of :mod:`grader.engine.reading.limits` never get here, and the grading worker runs the
reading in a child process with a time and a memory limit (:mod:`grader.engine.reading.bounds`).
"""
from __future__ import annotations

import ast
import re
import symtable
from dataclasses import dataclass, field

__all__ = ["Statement", "cell_statements", "reachable", "python_source"]


@dataclass
class Statement:
    """One top-level statement of a cell.

    cell: index of its cell in the notebook; student: True for answer and added cells (the
    student's text), False for the instructor's cells; node: its syntax tree; binds: global names it
    assigns, defines or imports; uses: global names it reads, at top level or inside its functions.
    """
    cell: int
    student: bool
    node: ast.stmt
    binds: set[str] = field(default_factory=set)
    uses: set[str] = field(default_factory=set)


HELP = re.compile(r"^(\s*)get_ipython\(\)\.run_line_magic\('pinfo2?', '([A-Za-z_][\w.]*)'\)$", re.MULTILINE)
TIMING = re.compile(r"^(\s*)%(timeit|time)\b((?:\s+-[a-z]\s*\d*)*)\s*(.*)$")
# IPython's own autoreload extension, as many students start a notebook: it reloads changed modules
# before a cell runs and binds nothing. Any other extension (%load_ext NAME imports NAME) stays a magic.
AUTORELOAD = re.compile(r"^\s*%(?:(?:load_ext|reload_ext)\s+autoreload|autoreload(?:\s+(?:[0-3]|off|explicit|all|now))?)\s*$")


def python_source(cell_source: str) -> str:
    """The Python IPython runs for a cell's text (``%magic`` lines become ``get_ipython()`` calls).
    ``%matplotlib`` lines, which only choose a plotting backend, and IPython's autoreload lines
    (``%load_ext autoreload``, ``%autoreload 2``) are dropped first; ``%time`` and
    ``%timeit`` (line or cell) become the code they time, which runs in the notebook's namespace; a help
    request (``torch.logsumexp?``, ``??``) becomes the name it looks up, which it only shows."""
    from IPython.core.inputtransformer2 import TransformerManager

    lines = cell_source.splitlines()
    if lines and re.match(r"^%%(timeit|time)\b", lines[0]):  # its own line's rest is set-up code
        lines[0] = re.sub(r"^%%(timeit|time)((?:\s+-[a-z]\s*\d*)*)\s*", "", lines[0])
    kept = []
    for line in lines:
        if line.lstrip().startswith("%matplotlib") or AUTORELOAD.match(line):
            line = ""
        timed = TIMING.match(line)
        kept.append(timed.group(1) + timed.group(4) if timed else line)
    python = TransformerManager().transform_cell("\n".join(kept))
    return HELP.sub(r"\1\2", python)


def _names(table: symtable.SymbolTable) -> tuple[set[str], set[str]]:
    """(global names bound, global names read) in a statement's symbol table, nested scopes included."""
    binds, uses = set(), set()
    for symbol in table.get_symbols():
        if symbol.is_assigned() or symbol.is_imported():
            binds.add(symbol.get_name())
        if symbol.is_referenced():
            uses.add(symbol.get_name())
    for child in table.get_children():
        uses |= _scope_uses(child)
        binds |= _scope_binds(child)
    return binds, uses


def _scope_binds(table: symtable.SymbolTable) -> set[str]:
    """Global names a function assigns through a ``global`` declaration (and the scopes nested in it)."""
    binds = {s.get_name() for s in table.get_symbols() if s.is_declared_global() and s.is_assigned()}
    for child in table.get_children():
        binds |= _scope_binds(child)
    return binds


def _scope_uses(table: symtable.SymbolTable) -> set[str]:
    """Global names read inside a function or class body (and the scopes nested in it)."""
    uses = set()
    for symbol in table.get_symbols():
        is_global = symbol.is_global() or (table.get_type() == "class" and not symbol.is_assigned())
        if is_global and symbol.is_referenced():
            uses.add(symbol.get_name())
        if symbol.is_declared_global() and symbol.is_assigned():
            uses.add(symbol.get_name())
    for child in table.get_children():
        uses |= _scope_uses(child)
    return uses


def cell_statements(source: str, cell: int, student: bool) -> list[Statement] | None:
    """The top-level statements of one code cell, or None when its Python does not parse."""
    try:
        code = python_source(source)
        tree = ast.parse(code)
        texts = [ast.unparse(node) for node in tree.body]  # recurses as deep as the code nests
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    statements = []
    for node, text in zip(tree.body, texts):
        try:
            binds, uses = _names(symtable.symtable(text, f"<cell {cell}>", "exec"))
        except (SyntaxError, ValueError, RecursionError):
            binds, uses = set(), set()
        statements.append(Statement(cell, student, node, binds, uses))
    return statements


def reachable(start: list[Statement], others: list[Statement]) -> list[Statement]:
    """``start`` and every statement of ``others`` that binds a global name they read, transitively.

    start: the statements of the exercise's answer cells; others: the statements of the cells that
    run before the exercise's test (instructor's and student's), in any order."""
    by_name: dict[str, list[Statement]] = {}
    for statement in others:
        for name in statement.binds:
            by_name.setdefault(name, []).append(statement)
    found = list(start)
    seen = {id(s) for s in start}
    pending = [name for s in start for name in s.uses]
    visited: set[str] = set()
    while pending:
        name = pending.pop()
        if name in visited:
            continue
        visited.add(name)
        for statement in by_name.get(name, []):
            if id(statement) not in seen:
                seen.add(id(statement))
                found.append(statement)
                pending.extend(statement.uses)
    return found
