"""The constructs an exercise's rules look for, found in one statement of a student's answer.

Each function reads one parsed statement (:class:`grader.engine.reading.source.Statement`) and returns
what it found as phrases that say where ("`map` (cell 3, line 2)"), or the names it holds with their
lines; :mod:`grader.engine.reading.rules` decides which statements are read and which rules apply.

- :func:`attributes`, :func:`modules_named`, :func:`imported_modules`: the names a statement uses
  (for ``avoid``, ``no_modules`` and d2lite's own functions);
- :func:`dynamic_code`: code that decides at run time what it calls (``getattr`` with a computed
  name, ``sys``/``inspect``/``types``, private attributes that are not the answer's own);
- :func:`loops`, :func:`host_syncs_in_loops`, :func:`non_integer_powers`: ``no_loops``,
  ``no_host_sync_in_loops`` and the ``**`` that "pow" rules out.
"""
from __future__ import annotations

import ast

from .scope import OPENING_DUNDERS, UNRESOLVABLE_MODULES, UNRESOLVABLE_NAMES, _selves
from .source import Statement

__all__ = ["DYNAMIC_NAMES", "DYNAMIC_MODULES", "LOOPS", "attributes", "modules_named", "imported_modules",
           "dynamic_code", "loops", "host_syncs_in_loops", "non_integer_powers"]

DYNAMIC_NAMES = UNRESOLVABLE_NAMES
DYNAMIC_MODULES = UNRESOLVABLE_MODULES | {"sys", "inspect", "types", "pydoc"}  # in the reached code
ALLOWED_PRIVATE = frozenset({"__init__", "__name__", "__class__", "__qualname__", "__version__", "__doc__",
                             "__module__", "__len__", "__call__", "__repr__", "__str__"})
LOOP_NAMES = frozenset({"map", "filter", "reduce", "starmap", "accumulate", "itertools"})
LOOP_ATTRIBUTES = frozenset({"apply_", "map_", "map2_"})
SYNC_ATTRIBUTES = frozenset({"item", "tolist", "numpy", "cpu"})
SYNC_NAMES = frozenset({"float", "int", "bool", "print"})
LOOPS = (ast.For, ast.AsyncFor, ast.While, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _own_attributes(node: ast.AST) -> set[int]:
    """ids of the ``self.name`` nodes in the methods of a class in ``node`` whose ``name`` the class's own
    methods assign (``self.multi_head_attention = ...``): the student's own attribute, named as they like."""
    found = set()
    for cls in (n for n in ast.walk(node) if isinstance(n, ast.ClassDef)):
        uses = []
        for method in (n for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
            if method.args.args:
                first = method.args.args[0].arg
                uses += [n for n in ast.walk(method) if isinstance(n, ast.Attribute)
                         and isinstance(n.value, ast.Name) and n.value.id == first]
        assigned = {n.attr for n in uses if isinstance(n.ctx, ast.Store)}
        found |= {id(n) for n in uses if n.attr in assigned}
    return found


def attributes(node: ast.AST) -> list[tuple[str, int]]:
    """(attribute or imported name, line) for every one in ``node``, but for the student's own attributes
    (:func:`_own_attributes`)."""
    found = []
    own = _own_attributes(node)
    for sub in ast.walk(node):
        if isinstance(sub, ast.Attribute) and id(sub) not in own:
            found.append((sub.attr, sub.lineno))
        elif isinstance(sub, (ast.Import, ast.ImportFrom)):
            module = sub.module or "" if isinstance(sub, ast.ImportFrom) else ""
            for part in module.split("."):
                found.append((part, sub.lineno))
            for alias in sub.names:
                found.extend((part, sub.lineno) for part in alias.name.split("."))
    return found


def modules_named(node: ast.AST) -> list[tuple[str, int]]:
    """(name, line) for every plain name read and every module imported in ``node``."""
    found = []
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            found.append((sub.id, sub.lineno))
        elif isinstance(sub, ast.Import):
            found.extend((alias.name.split(".")[0], sub.lineno) for alias in sub.names)
        elif isinstance(sub, ast.ImportFrom):
            found.append(((sub.module or "").split(".")[0], sub.lineno))
    return found


def imported_modules(node: ast.AST) -> set[str]:
    """The top-level module names ``node`` imports (``import sys`` and ``from sys import path`` give sys)."""
    if isinstance(node, ast.Import):
        return {alias.name.split(".")[0] for alias in node.names}
    if isinstance(node, ast.ImportFrom):
        return {(node.module or "").split(".")[0]}
    return set()


def dynamic_code(statement: Statement, importable: set[str]) -> list[str]:
    """Code in a statement the tested names reach that decides at run time what it calls: beyond
    :func:`grader.engine.reading.scope.unresolvable` (judged in every student cell), here also ``getattr``
    with a name that is not a string literal, modules that reach frames and namespaces (``sys``,
    ``inspect``, ``types``) and private attributes other than the answer's own (``self._modules``) and
    plain dunders (``__class__``, ``__name__``, ``__version__``).

    importable: the names of DYNAMIC_MODULES that an instructor's cell imported (a student who reads
    them uses the module)."""
    problems = []
    selves = _selves(statement.node)
    for sub in ast.walk(statement.node):
        if isinstance(sub, (ast.Import, ast.ImportFrom)):
            problems += [f"`import {name}` (cell {statement.cell}, line {sub.lineno})"
                         for name in sorted(imported_modules(sub) & DYNAMIC_MODULES)]
        elif isinstance(sub, ast.Name) and sub.id in importable:
            problems.append(f"`{sub.id}` (cell {statement.cell}, line {sub.lineno})")
        elif isinstance(sub, ast.Attribute) and sub.attr.startswith("_") and sub.attr not in ALLOWED_PRIVATE and not (
                isinstance(sub.value, ast.Name) and id(sub.value) in selves and sub.attr not in OPENING_DUNDERS):
            problems.append(f"the private attribute `{sub.attr}` (cell {statement.cell}, line {sub.lineno})")
        elif isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and sub.func.id in ("getattr", "hasattr"):
            name = sub.args[1] if len(sub.args) > 1 else None
            if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
                problems.append(f"`getattr` with a name the grader cannot read (cell {statement.cell}, line {sub.lineno})")
    return problems


def over_literal(loop: ast.AST) -> bool:
    """A loop over a tuple or list written out in the code (``for t in (X, Y)``): it checks or handles the
    few objects named there, it does not loop over a tensor's elements."""
    iters = [loop.iter] if isinstance(loop, (ast.For, ast.AsyncFor)) else [
        g.iter for g in getattr(loop, "generators", [])]
    return bool(iters) and all(isinstance(i, (ast.Tuple, ast.List)) and not any(isinstance(e, ast.Starred) for e in i.elts)
                               for i in iters)


def loops(statement: Statement) -> list[str]:
    problems = []
    recursive = {node.name for node in ast.walk(statement.node) if isinstance(node, ast.FunctionDef)
                 and any(isinstance(s, ast.Name) and s.id == node.name for s in ast.walk(node))}
    for sub in ast.walk(statement.node):
        if isinstance(sub, LOOPS) and not over_literal(sub):
            problems.append(f"a loop (`{type(sub).__name__}`, cell {statement.cell}, line {sub.lineno})")
        elif isinstance(sub, ast.Name) and sub.id in LOOP_NAMES:
            problems.append(f"`{sub.id}` (cell {statement.cell}, line {sub.lineno})")
        elif isinstance(sub, ast.Attribute) and sub.attr in LOOP_ATTRIBUTES | LOOP_NAMES:
            problems.append(f"`{sub.attr}` (cell {statement.cell}, line {sub.lineno})")
    problems += [f"recursion (`{name}` calls itself, cell {statement.cell})" for name in sorted(recursive)]
    return problems


def host_syncs_in_loops(statement: Statement) -> list[str]:
    problems = []
    for loop in (n for n in ast.walk(statement.node) if isinstance(n, LOOPS)):
        for sub in ast.walk(loop):
            if not isinstance(sub, ast.Call):
                continue
            func = sub.func
            name = func.attr if isinstance(func, ast.Attribute) and func.attr in SYNC_ATTRIBUTES else (
                func.id if isinstance(func, ast.Name) and func.id in SYNC_NAMES else None)
            if name:
                problems.append(f"`{name}()` inside a loop (cell {statement.cell}, line {sub.lineno})")
    return sorted(set(problems))


def non_integer_powers(statement: Statement) -> list[str]:
    """``x ** e`` where ``e`` is not an integer literal (``x ** 0.5`` is a square root)."""
    found = []
    for sub in ast.walk(statement.node):
        if isinstance(sub, (ast.BinOp, ast.AugAssign)) and isinstance(sub.op, ast.Pow):
            exponent = sub.right if isinstance(sub, ast.BinOp) else sub.value
            if not (isinstance(exponent, ast.Constant) and type(exponent.value) is int):
                found.append(f"`**` with an exponent that is not a whole number (cell {statement.cell}, line {sub.lineno})")
    return found
