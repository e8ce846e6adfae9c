"""Is a function of the student's a copy of one of d2lite's? Decided on canonical syntax trees.

Two functions are copies when their trees agree once every variable and argument is renamed by order
of first use, every string is blanked and docstrings are dropped: renaming, new messages and new
comments do not hide a copy; reordering statements or changing an expression does. Only d2lite
functions of at least COPY_MIN_NODES nodes are compared: a one-line ``X @ w + b`` has too few ways
to be written for equality to mean anything (the similarity report weighs such cases by class).
"""
from __future__ import annotations

import ast
import functools
from pathlib import Path

from .source import Statement

__all__ = ["d2lite_copies", "use_d2lite_forms", "COPY_MIN_NODES"]

COPY_MIN_NODES = 40


def _norm(name: str) -> str:
    return name.replace("_", "").lower()


class _Canon(ast.NodeTransformer):
    """Rename every variable and argument by order of first use; blank strings; drop docstrings."""

    def __init__(self):
        self.names: dict[str, str] = {}

    def _name(self, name: str) -> str:
        return self.names.setdefault(name, f"v{len(self.names)}")

    def visit_Name(self, node):
        return ast.copy_location(ast.Name(self._name(node.id), node.ctx), node)

    def visit_arg(self, node):
        return ast.copy_location(ast.arg(self._name(node.arg)), node)

    def visit_Constant(self, node):
        return ast.Constant("") if isinstance(node.value, str) else node

    def visit_JoinedStr(self, node):
        return ast.Constant("")

    def visit_FunctionDef(self, node):
        body = node.body[1:] if (node.body and isinstance(node.body[0], ast.Expr)
                                 and isinstance(node.body[0].value, ast.Constant)) else node.body
        return ast.FunctionDef(name="f", args=self.visit(node.args), body=[self.visit(b) for b in body] or [ast.Pass()],
                               decorator_list=[], returns=None, type_comment=None)


@functools.lru_cache(maxsize=1024)  # by node: a notebook's tests share its parsed statements
def _canonical(function: ast.FunctionDef) -> tuple[str, int]:
    """(canonical form, node count) of ``function``; each nested function is canonicalised on its own,
    so a notebook costs its functions' sizes times their nesting depth once, not once per test."""
    tree = _Canon().visit(ast.parse(ast.unparse(function)).body[0])
    return ast.dump(tree), sum(1 for _ in ast.walk(tree))


_FORMS: list[tuple[tuple[str, str], ...]] = []  # computed once per process, or handed over by its parent


def use_d2lite_forms(forms) -> None:
    """Take d2lite's canonical forms as already computed (by the grading worker, for the child that reads:
    :mod:`grader.engine.reading.bounds`), instead of computing them again (about 1 s)."""
    _FORMS[:] = [tuple(tuple(pair) for pair in forms)]


def _d2lite_functions() -> tuple[tuple[str, str], ...]:
    """(function name, canonical form) of every sizeable function in the installed d2lite, read from its
    files without importing it (importing d2lite imports torch: seconds in the process that reads)."""
    import importlib.util

    if _FORMS:
        return _FORMS[0]
    found = []
    for path in sorted(Path(importlib.util.find_spec("d2lite").origin).parent.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef):
                form, size = _canonical(node)
                if size >= COPY_MIN_NODES:
                    found.append((node.name, form))
    _FORMS[:] = [tuple(found)]
    return _FORMS[0]


def d2lite_copies(statement: Statement, words: set[str], own: set[str]) -> list[str]:
    """Functions in ``statement`` that copy a sizeable d2lite function whose (normalised) name is in
    ``own`` or contains one of ``words``, as phrases for a reason."""
    problems = []
    for node in ast.walk(statement.node):
        if isinstance(node, ast.FunctionDef):
            form, _ = _canonical(node)
            for name, d2lite_form in _d2lite_functions():
                about = _norm(name) in own or any(w in _norm(name) for w in words)
                if about and form == d2lite_form:
                    problems.append(f"a copy of d2lite's `{name}` (cell {statement.cell}, line {node.lineno})")
    return problems
