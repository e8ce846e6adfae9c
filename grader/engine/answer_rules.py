"""Facts the grader establishes from an answer's source, in its own process.

"Do not call torch.cdist", "no Python loop", "do not call d2lite's version" were once checked inside
the student's kernel by hooks that the checked code could remove. Here the grader reads the text
instead (:mod:`grader.engine.answer_source`), so no code of the student's runs while it decides.

A graded test cell declares its exercise's rules in its hidden part, read here and never executed
for a verdict::

    from grader.record import answer_rules, record
    answer_rules(avoid=("cdist", "pdist"), no_loops=True)

What is judged, over every statement the exercise's answer cells can reach (their own, and those of
earlier cells that bind a global name they read, the instructor's included):

- ``avoid``: no attribute or imported name containing one of these words (case and underscores
  ignored: "softmax" also catches ``torch.special.softmax``, ``_softmax``, ``nn.Softmax``); "pow"
  also rules out ``**`` with an exponent that is not a whole-number literal;
- every exercise: when the reached code names ``d2lite``, no attribute or imported name equal to a
  function the answer defines (d2lite's version of it, by any import path), and no function that is
  a copy of a sizeable d2lite function of that name or an avoided word (names, strings, docstrings
  ignored);
- ``no_modules``: the reached student code names none of these modules;
- ``no_loops``: no ``for``/``while``, comprehension, recursion, ``map``/``filter``/``reduce`` or
  per-element callback (``apply_``) in the reached student code;
- ``no_host_sync_in_loops``: no ``.item()``, ``.tolist()``, ``.numpy()``, ``.cpu()``, ``float()``,
  ``int()``, ``bool()``, ``print()`` inside a loop of the reached student code.

Reading text can be fooled by code that decides at run time what it calls, so every student cell
before the test (reached or not) must do without such code: ``getattr``, ``eval``, ``exec``,
``globals``, ``vars``, ``__import__``, ``importlib``, ``sys``, ``inspect``, ``operator``,
``get_ipython`` or ``InteractiveShell.instance()`` (input transformers; ``IPython.display`` is
fine), magics other than ``%matplotlib``, and attributes that start
with ``_`` (private API, ``__dict__``, ``__globals__``) other than ``__init__`` and ``__name__``.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass

from .answer_copies import d2lite_copies
from .answer_source import Statement, cell_statements, reachable

__all__ = ["Rules", "declared_rules", "rule_problems", "answer_problems", "test_cell_problems", "source_reason",
           "DYNAMIC_NAMES", "DYNAMIC_MODULES"]

DYNAMIC_NAMES = frozenset({"getattr", "setattr", "delattr", "vars", "globals", "locals", "eval", "exec",
                           "compile", "__import__", "__builtins__", "get_ipython", "breakpoint"})
DYNAMIC_MODULES = frozenset({"importlib", "sys", "builtins", "inspect", "operator", "ctypes", "gc", "types",
                             "runpy", "pkgutil", "marshal", "code", "codeop", "pydoc", "dill", "ipykernel",
                             "traitlets"})
# Names that reach the running IPython shell (and so its input transformers) from an allowed module:
# ``IPython.get_ipython``, ``InteractiveShell.instance()``. ``IPython.display`` stays allowed.
SHELL_NAMES = frozenset({"get_ipython", "InteractiveShell", "instance"})
ALLOWED_PRIVATE = frozenset({"__init__", "__name__"})
LOOP_NAMES = frozenset({"map", "filter", "reduce", "starmap", "accumulate", "itertools"})
LOOP_ATTRIBUTES = frozenset({"apply_", "map_", "map2_"})
SYNC_ATTRIBUTES = frozenset({"item", "tolist", "numpy", "cpu"})
SYNC_NAMES = frozenset({"float", "int", "bool", "print"})
LOOPS = (ast.For, ast.AsyncFor, ast.While, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
D2LITE = "d2lite"


@dataclass(frozen=True)
class Rules:
    avoid: tuple[str, ...] = ()
    no_modules: tuple[str, ...] = ()
    no_loops: bool = False
    no_host_sync_in_loops: bool = False


def _norm(name: str) -> str:
    return name.replace("_", "").lower()


def _declaration(source: str) -> ast.Call | None:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    return next((node for node in ast.walk(tree) if isinstance(node, ast.Call)
                 and isinstance(node.func, ast.Name) and node.func.id == "answer_rules"), None)


def rule_problems(source: str) -> list[str]:
    """What is wrong with a test cell's ``answer_rules(...)`` declaration (gate check (f))."""
    call = _declaration(source)
    if call is None:
        return []
    if call.args:
        return ["answer_rules() takes keywords only: avoid=, no_modules=, no_loops=, no_host_sync_in_loops="]
    problems = []
    for keyword in call.keywords:
        if keyword.arg not in Rules.__dataclass_fields__:
            problems.append(f"answer_rules() has no rule {keyword.arg!r}; use one of "
                            f"{', '.join(Rules.__dataclass_fields__)}")
            continue
        try:
            value = ast.literal_eval(keyword.value)
        except ValueError:
            problems.append(f"answer_rules({keyword.arg}=...) must be a literal (a tuple of strings or True)")
            continue
        wants_words = keyword.arg in ("avoid", "no_modules")
        if wants_words and not (isinstance(value, (tuple, list)) and all(isinstance(v, str) and v for v in value)):
            problems.append(f"answer_rules({keyword.arg}=...) must be a tuple of non-empty strings")
        if not wants_words and not isinstance(value, bool):
            problems.append(f"answer_rules({keyword.arg}=...) must be True or False")
    return problems


def declared_rules(test_source: str) -> Rules:
    """The rules a (trusted) test cell declares; no declaration gives the rules every exercise has."""
    call = _declaration(test_source)
    if call is None or rule_problems(test_source):
        return Rules()
    values = {k.arg: ast.literal_eval(k.value) for k in call.keywords}
    return Rules(**{k: tuple(v) if isinstance(v, list) else v for k, v in values.items()})


# --- what a statement names ---------------------------------------------------------------------

def _attributes(node: ast.AST) -> list[tuple[str, int]]:
    """(attribute or imported name, line) for every one in ``node``."""
    found = []
    for sub in ast.walk(node):
        if isinstance(sub, ast.Attribute):
            found.append((sub.attr, sub.lineno))
        elif isinstance(sub, (ast.Import, ast.ImportFrom)):
            module = sub.module or "" if isinstance(sub, ast.ImportFrom) else ""
            for part in module.split("."):
                found.append((part, sub.lineno))
            for alias in sub.names:
                found.extend((part, sub.lineno) for part in alias.name.split("."))
    return found


def _modules_named(node: ast.AST) -> list[tuple[str, int]]:
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


def _imported(node: ast.AST) -> set[str]:
    """The top-level module names ``node`` imports (``import sys`` and ``from sys import path`` give sys)."""
    if isinstance(node, ast.Import):
        return {alias.name.split(".")[0] for alias in node.names}
    if isinstance(node, ast.ImportFrom):
        return {(node.module or "").split(".")[0]}
    return set()


def _dynamic(statement: Statement, importable: set[str]) -> list[str]:
    """Code in a student's statement that decides at run time what it calls or reaches.

    importable: the names of DYNAMIC_MODULES that an instructor's cell imported (a student who reads
    them uses the module)."""
    problems = []
    for sub in ast.walk(statement.node):
        if isinstance(sub, (ast.Import, ast.ImportFrom)):
            problems += [f"`import {name}` (cell {statement.cell}, line {sub.lineno})"
                         for name in sorted(_imported(sub) & DYNAMIC_MODULES)]
        elif isinstance(sub, ast.Name) and (sub.id in DYNAMIC_NAMES or sub.id in importable):
            problems.append(f"`{sub.id}` (cell {statement.cell}, line {sub.lineno})")
        elif isinstance(sub, ast.Attribute) and sub.attr.startswith("_") and sub.attr not in ALLOWED_PRIVATE:
            problems.append(f"the private attribute `{sub.attr}` (cell {statement.cell}, line {sub.lineno})")
        elif isinstance(sub, ast.Attribute) and sub.attr in SHELL_NAMES:
            problems.append(f"`{sub.attr}` (cell {statement.cell}, line {sub.lineno})")
        if isinstance(sub, ast.ImportFrom):
            problems += [f"`{alias.name}` (cell {statement.cell}, line {sub.lineno})"
                         for alias in sub.names if alias.name in SHELL_NAMES]
    return problems


def _loops(statement: Statement) -> list[str]:
    problems = []
    recursive = {node.name for node in ast.walk(statement.node) if isinstance(node, ast.FunctionDef)
                 and any(isinstance(s, ast.Name) and s.id == node.name for s in ast.walk(node))}
    for sub in ast.walk(statement.node):
        if isinstance(sub, LOOPS):
            problems.append(f"a loop (`{type(sub).__name__}`, cell {statement.cell}, line {sub.lineno})")
        elif isinstance(sub, ast.Name) and sub.id in LOOP_NAMES:
            problems.append(f"`{sub.id}` (cell {statement.cell}, line {sub.lineno})")
        elif isinstance(sub, ast.Attribute) and sub.attr in LOOP_ATTRIBUTES | LOOP_NAMES:
            problems.append(f"`{sub.attr}` (cell {statement.cell}, line {sub.lineno})")
    problems += [f"recursion (`{name}` calls itself, cell {statement.cell})" for name in sorted(recursive)]
    return problems


def _syncs_in_loops(statement: Statement) -> list[str]:
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


def _powers(statement: Statement) -> list[str]:
    """``x ** e`` where ``e`` is not an integer literal (``x ** 0.5`` is a square root)."""
    found = []
    for sub in ast.walk(statement.node):
        if isinstance(sub, (ast.BinOp, ast.AugAssign)) and isinstance(sub.op, ast.Pow):
            exponent = sub.right if isinstance(sub, ast.BinOp) else sub.value
            if not (isinstance(exponent, ast.Constant) and type(exponent.value) is int):
                found.append(f"`**` with an exponent that is not a whole number (cell {statement.cell}, line {sub.lineno})")
    return found


# --- the verdict --------------------------------------------------------------------------------

def _defined(statements: list[Statement]) -> set[str]:
    return {s.node.name for s in statements if isinstance(s.node, (ast.FunctionDef, ast.ClassDef))}


def answer_problems(cells: list[tuple[str, str]], answer_cells: list[int], test_cell: int,
                    rules: Rules) -> list[str]:
    """Why the answer breaks its exercise's rules, as phrases ("`cdist` (cell 12, line 3)"); [] if none.

    cells: (role, source) for every cell of the merged notebook, role "answer"/"added" (student's),
    "trusted" (instructor's) or "test"; answer_cells: indices of the exercise's answer cells;
    test_cell: index of the test cell being graded (only cells before it count)."""
    statements: list[Statement] = []
    for index, (role, source) in enumerate(cells[:test_cell]):
        if role in ("answer", "added", "trusted"):
            statements += cell_statements(source, index, role != "trusted") or []
    importable = {name for s in statements if not s.student for name in _imported(s.node)} & DYNAMIC_MODULES
    problems = [f"code the grader cannot read: {p}" for s in statements if s.student for p in _dynamic(s, importable)]
    start = [s for s in statements if s.cell in answer_cells]
    reached = reachable(start, [s for s in statements if s.cell not in answer_cells])
    words = {_norm(w) for w in rules.avoid}
    own = {_norm(name) for name in _defined(start)}
    names_d2lite = any(name == D2LITE for s in reached for name, _ in _modules_named(s.node))
    for statement in reached:
        for attribute, line in _attributes(statement.node):
            key = _norm(attribute)
            if any(w in key for w in words) or (names_d2lite and key in own):
                problems.append(f"`{attribute}` (cell {statement.cell}, line {line})")
        if statement.student:
            problems += d2lite_copies(statement, words, own) + (_powers(statement) if "pow" in words else [])
            problems += [f"the module `{name}` (cell {statement.cell}, line {line})"
                         for name, line in _modules_named(statement.node) if name in rules.no_modules]
            problems += _loops(statement) if rules.no_loops else []
            problems += _syncs_in_loops(statement) if rules.no_host_sync_in_loops else []
        elif rules.no_modules:
            problems += [f"the module `{name}` (cell {statement.cell}, line {line})"
                         for name, line in _modules_named(statement.node)
                         if name in rules.no_modules and isinstance(statement.node, (ast.Import, ast.ImportFrom))]
    return list(dict.fromkeys(problems))


def test_cell_problems(cells: list[tuple[str, str]]) -> dict[int, list[str]]:
    """answer_problems for every test cell of a notebook given as (role, source) pairs (roles as in
    :func:`answer_problems`, "markdown" for the rest); an exercise's answer cells are those since the
    previous exercise's tests."""
    found, answers, after_test = {}, [], False
    for index, (kind, source) in enumerate(cells):
        if kind == "answer":
            answers = [] if after_test else answers
            answers.append(index)
            after_test = False
        elif kind == "test":
            after_test = True
            found[index] = answer_problems(cells, answers, index, declared_rules(source))
    return found


def source_reason(problems: list[str]) -> str:
    """One sentence for the student about what the grader read in their answer."""
    listed = "; ".join(problems[:3]) + ("; and more" if len(problems) > 3 else "")
    return (f"The grader read your code: it uses {listed}, which this exercise's contract rules out; "
            "write it without them.")
