"""Facts the grader establishes from an answer's source, in its own process.

"Do not call torch.cdist", "no Python loop", "do not call d2lite's version" were once checked inside
the student's kernel by hooks that the checked code could remove. Here the grader reads the text
instead (:mod:`grader.engine.reading.source`), so no code of the student's runs while it decides.

A graded test cell declares its exercise's rules in its hidden part, read here and never executed
for a verdict::

    from grader.record import answer_rules, record
    answer_rules(avoid=("cdist", "pdist"), no_loops=True)

What is read (:func:`answer_reading`): the statements the test cell's names reach, starting with the
answer cells' definitions and followed through every cell that binds a name they read (the
instructor's included); and every student statement that changes shared state or cannot be resolved
(:mod:`grader.engine.reading.scope`). Exploration that only reads is not read for rules. Over the
reached statements:

- ``avoid``: no attribute or imported name containing one of these words (case and underscores
  ignored: "softmax" also catches ``torch.special.softmax``, ``_softmax``, ``nn.Softmax``; not an attribute
  of ``self`` that the class's own methods assign, ``self.multi_head_attention = MyAttention(...)``); "pow"
  also rules out ``**`` with an exponent that is not a whole-number literal;
- every exercise: when the reached code names ``d2lite``, no attribute or imported name equal to a
  function the answer defines (d2lite's version of it, by any import path), and no function that is
  a copy of a sizeable d2lite function of that name or an avoided word (names, strings, docstrings
  ignored);
- ``no_modules``: the reached student code names none of these modules;
- ``no_loops``: no ``for``/``while``, comprehension, recursion, ``map``/``filter``/``reduce`` or
  per-element callback (``apply_``) in the reached student code; a loop over a tuple or list written
  out in the code (``for t in (X, Y)``) is not one;
- ``no_host_sync_in_loops``: no ``.item()``, ``.tolist()``, ``.numpy()``, ``.cpu()``, ``float()``,
  ``int()``, ``bool()``, ``print()`` inside a loop of the reached student code;
- code that decides at run time what it calls: in any student cell, what
  :func:`grader.engine.reading.scope.unresolvable` lists (``eval``, ``exec``, ``get_ipython``, ...);
  in the reached code also ``getattr`` with a name that is not a literal, ``sys``, ``inspect``,
  ``types`` and private attributes other than the answer's own (``self._modules``) and plain dunders.

Each construct is found in a statement by :mod:`grader.engine.reading.constructs`; this module decides
which statements are read, under which rules, and says what was found.

Reading is bounded: a student cell over the caps of :mod:`grader.engine.reading.limits` is not parsed,
a ``RecursionError`` or parser error while reading is a finding, and the grading worker reads in a
child process with a time and a memory limit (:mod:`grader.engine.reading.bounds`); each of these flags
the tests it concerns with a finding that says so.

A finding is evidence for a person, not a verdict: the test keeps the points its behaviour earned and
is flagged for review (:func:`grader.engine.grade.reviewed`). Only the findings of
:attr:`Reading.certain` (a direct call of an avoided function in the exercise's own answer cells) may
cost the points, and only in a course that opted in.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

from .constructs import (DYNAMIC_MODULES, DYNAMIC_NAMES, attributes, dynamic_code, host_syncs_in_loops,
                         imported_modules, loops, modules_named, non_integer_powers)
from .copies import d2lite_copies
from .limits import cells_over_caps
from .scope import own_names, shared_state, unresolvable
from .source import Statement, cell_statements, reachable

__all__ = ["Rules", "Reading", "declared_rules", "rule_problems", "answer_reading", "answer_problems",
           "test_cell_readings", "exercises", "test_cell_problems", "source_reason", "review_note", "REVIEW_REASON", "REVIEW_PREFIX",
           "DYNAMIC_NAMES", "DYNAMIC_MODULES"]

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


# --- the verdict --------------------------------------------------------------------------------

def _defined(statements: list[Statement]) -> set[str]:
    return {s.node.name for s in statements if isinstance(s.node, (ast.FunctionDef, ast.ClassDef))}


@dataclass
class Reading:
    """What the grader read in one exercise's answer, for a person to judge.

    problems: every finding, as phrases ("`cdist` (cell 12, line 3: `return torch.cdist(X, Y)`)");
    certain: those that cannot be an honest slip: a direct call of an avoided function written in the
    exercise's own answer cells (a course may opt in to deduct for these alone)."""
    problems: list[str] = field(default_factory=list)
    certain: list[str] = field(default_factory=list)


DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
WHERE = re.compile(r"\(cell (\d+), line (\d+)\)")


def _quoted(cells: list[tuple[str, str]], phrase: str) -> str:
    """``phrase`` with its "(cell N, line L)" followed by that line as the student wrote it."""
    def line(match: re.Match) -> str:
        cell, number = int(match.group(1)), int(match.group(2))
        lines = cells[cell][1].splitlines() if cell < len(cells) else []
        text = lines[number - 1].strip() if 0 < number <= len(lines) else ""
        text = text if len(text) <= 80 else text[:77] + "..."
        return f"(cell {cell + 1}, line {number}: `{text}`)" if text else f"(cell {cell + 1}, line {number})"
    return WHERE.sub(line, phrase)


def _tested_names(test_source: str, index: int) -> set[str]:
    """The global names the test cell reads and does not bind itself: the names whose code is graded."""
    statements = cell_statements(test_source, index, False) or []
    bound = {name for s in statements for name in s.binds}
    return {name for s in statements for name in s.uses} - bound


def _direct_calls(statement: Statement, words: set[str]) -> list[str]:
    """Calls in ``statement`` whose function's own name contains an avoided word (``torch.cdist(X, Y)``)."""
    found = []
    for sub in ast.walk(statement.node):
        if isinstance(sub, ast.Call):
            name = sub.func.attr if isinstance(sub.func, ast.Attribute) else getattr(sub.func, "id", "")
            if name and any(w in _norm(name) for w in words):
                found.append(f"`{name}` (cell {statement.cell}, line {sub.lineno})")
    return found


def answer_reading(cells: list[tuple[str, str]], answer_cells: list[int], test_cell: int,
                   rules: Rules, parsed: dict[int, list[Statement] | None] | None = None,
                   unread: dict[int, str] | None = None) -> Reading:
    """What the answer's code does that its exercise's rules rule out, or that the grader cannot read.

    cells: (role, source) for every cell of the merged notebook, role "answer"/"added" (student's),
    "trusted" (instructor's) or "test"; answer_cells: indices of the exercise's answer cells;
    test_cell: index of the test cell being graded (only cells before it count).

    Read: the statements the test's names reach (through the instructor's cells too), starting with the
    answer cells' definitions; and every student statement that changes shared state or cannot be
    resolved (:mod:`grader.engine.reading.scope`). A student cell that cannot be parsed is a finding.

    parsed: cell index -> its statements, filled as cells are read; shared by the readings of one notebook's
    tests (:func:`test_cell_readings`) so that each cell is parsed once (nothing here changes a statement).
    unread: cell index -> finding, for the student cells over the reading caps (default: computed here by
    :func:`grader.engine.reading.limits.cells_over_caps`); they are not parsed, and the finding is reported."""
    unread = cells_over_caps(cells[:test_cell]) if unread is None else unread
    statements: list[Statement] = []
    problems: list[str] = []
    for index, (role, source) in enumerate(cells[:test_cell]):
        if role in ("answer", "added", "trusted"):
            parsed = {} if parsed is None else parsed
            if index in unread:  # over a cap: not parsed (:mod:`grader.engine.reading.limits`)
                problems.append(unread[index])
                continue
            if index not in parsed:
                parsed[index] = cell_statements(source, index, role != "trusted")
            read = parsed[index]
            if read is None and role != "trusted" and source.strip():
                problems.append(f"code the grader cannot read: a cell it could not parse (cell {index}, line 1)")
            statements += read or []
    student = [s for s in statements if s.student]
    importable = {name for s in statements if not s.student for name in imported_modules(s.node)} & DYNAMIC_MODULES
    tested = _tested_names(cells[test_cell][1], test_cell) if test_cell < len(cells) else set()
    start = [s for s in statements if (s.cell in answer_cells and isinstance(s.node, DEFINITIONS))
             or (s.student and s.binds & tested)]
    others = [s for s in statements if not any(s is t for t in start)]
    reached = reachable(start, others) + [s for s in statements if not s.student and s.binds & tested]
    reached = list({id(s): s for s in reached}.values())
    counted = {id(s) for s in reached}
    own_objects = own_names(student)
    modules = {name for s in statements for name in s.binds if isinstance(s.node, (ast.Import, ast.ImportFrom))}
    for statement in student:
        problems += [f"code the grader cannot read: {p}" for p in unresolvable(statement)]
        if id(statement) in counted:
            problems += [f"code the grader cannot read: {p}" for p in dynamic_code(statement, importable)]
        else:
            problems += [f"code that changes what other cells share: {p}"
                         for p in shared_state(statement, own_objects, modules)]
    words = {_norm(w) for w in rules.avoid}
    own = {_norm(name) for name in _defined([s for s in reached if s.cell in answer_cells])}
    names_d2lite = any(name == D2LITE for s in reached for name, _ in modules_named(s.node))
    for statement in reached:  # the instructor's cells are followed for what they reach, never read for rules
        for attribute, line in (attributes(statement.node) if statement.student else ()):
            key = _norm(attribute)
            if any(w in key for w in words) or (names_d2lite and key in own):
                problems.append(f"`{attribute}` (cell {statement.cell}, line {line})")
        if statement.student:
            problems += d2lite_copies(statement, words, own) + (non_integer_powers(statement) if "pow" in words else [])
            problems += [f"the module `{name}` (cell {statement.cell}, line {line})"
                         for name, line in modules_named(statement.node) if name in rules.no_modules]
            problems += loops(statement) if rules.no_loops else []
            problems += host_syncs_in_loops(statement) if rules.no_host_sync_in_loops else []
        elif rules.no_modules:
            problems += [f"the module `{name}` (cell {statement.cell}, line {line})"
                         for name, line in modules_named(statement.node)
                         if name in rules.no_modules and isinstance(statement.node, (ast.Import, ast.ImportFrom))]
    seeds = [s for s in statements if s.binds & tested]  # certain: only in what the tested names themselves reach
    by_tests = {id(s) for s in reachable(seeds, [s for s in statements if not any(s is t for t in seeds)])}
    certain = [p for s in reached if s.student and s.cell in answer_cells and id(s) in by_tests
               for p in _direct_calls(s, words)]
    return Reading([_quoted(cells, p) for p in dict.fromkeys(problems)],
                   [_quoted(cells, p) for p in dict.fromkeys(certain)])


def answer_problems(cells: list[tuple[str, str]], answer_cells: list[int], test_cell: int,
                    rules: Rules) -> list[str]:
    """:func:`answer_reading`'s findings, as phrases; [] if none."""
    return answer_reading(cells, answer_cells, test_cell, rules).problems


def exercises(cells: list[tuple[str, str]]) -> dict[int, list[int]]:
    """For every test cell (by index) of a notebook given as (role, source) pairs, its exercise's answer
    cells: those since the previous exercise's tests. Read from the roles alone, nothing parsed."""
    found, answers, after_test = {}, [], False
    for index, (kind, _) in enumerate(cells):
        if kind == "answer":
            answers = [] if after_test else answers
            answers.append(index)
            after_test = False
        elif kind == "test":
            after_test = True
            found[index] = list(answers)
    return found


UNREADABLE = "code the grader cannot read: source that made its reader fail ({error}) (cell {cell}, line 1)"


def test_cell_readings(cells: list[tuple[str, str]]) -> dict[int, tuple[list[int], Reading]]:
    """For every test cell of a notebook given as (role, source) pairs (roles as in :func:`answer_reading`,
    "markdown" for the rest): its exercise's answer cells (:func:`exercises`) and what the grader read in
    them. Student cells over the caps of :mod:`grader.engine.reading.limits` are not parsed; a reading that
    fails all the same (``RecursionError`` in a rule, a parser's error) is a finding for that test, never
    an error of the grading. Time and memory are bounded by the caller (:mod:`grader.engine.reading.bounds`)."""
    found, parsed, unread = {}, {}, cells_over_caps(cells)
    for index, answers in exercises(cells).items():
        try:
            reading = answer_reading(cells, answers, index, declared_rules(cells[index][1]), parsed, unread)
        except (RecursionError, MemoryError, SyntaxError, ValueError) as error:  # parser and depth errors
            reading = Reading([_quoted(cells, UNREADABLE.format(error=type(error).__name__,
                                                                cell=(answers or [index])[0]))])
        found[index] = (answers, reading)
    return found


def test_cell_problems(cells: list[tuple[str, str]]) -> dict[int, list[str]]:
    """:func:`test_cell_readings`' findings for every test cell."""
    return {index: reading.problems for index, (_, reading) in test_cell_readings(cells).items()}


def source_reason(problems: list[str]) -> str:
    """One sentence for the student about what the grader read in their answer."""
    listed = "; ".join(problems[:3]) + ("; and more" if len(problems) > 3 else "")
    return (f"The grader read your code: it uses {listed}, which this exercise's contract rules out; "
            "write it without them.")


REVIEW_REASON = ("Under review: your instructor will read this answer before its points are final (the grader "
                 "noticed something in its code that a person should look at; nothing has been taken off).")


REVIEW_PREFIX = "course-grader review of exercise "


def review_note(exercise: str, reading: Reading) -> str:
    """What the instructor reads in formgrader and in the grade table about a flagged test."""
    listed = "; ".join(reading.problems[:5]) + (f"; and {len(reading.problems) - 5} more"
                                                if len(reading.problems) > 5 else "")
    return (f"{REVIEW_PREFIX}`{exercise}`: the grader read {listed}. The test kept the points "
            "its behaviour earned. Confirm the finding by giving a lower manual score, or clear it by giving "
            "the points it kept.")

