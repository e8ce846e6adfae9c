"""Course notebooks as the grader sees them: exercises, points, stubs and truncated copies.

An nbgrader source notebook is a list of cells; some carry ``metadata.nbgrader``. A *solution
cell* holds the student's answer (``solution: true``); a *graded test cell* is locked and worth
``points`` (``grade: true, solution: false``). An *exercise* is a run of solution cells followed
by its graded test cell(s): each test cell belongs to the solution cells since the previous test
cell. Everything here is pure: notebooks in, notebooks or facts out.
"""
from __future__ import annotations

import ast
import copy
import functools
import os
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import nbformat
from nbformat import NotebookNode

__all__ = [
    "Exercise", "read_notebook", "write_notebook", "nbgrader_meta", "is_solution", "is_test", "exercises",
    "exercise_titles", "is_manual", "is_task", "task_points", "CODE_STUB", "TEXT_STUB", "manual_points",
    "header_points", "test_points", "structure_problems", "stub", "cell_points", "is_support_file",
    "support_files_under", "safe_relative_name",
    "strip_hidden", "HIDDEN_NOTE", "HIDDEN_BEGIN", "HIDDEN_END", "SOLUTION_BEGIN", "SOLUTION_END", "MARKERS",
    "without_hidden", "stub_source", "released_answer", "ends_with_expression", "ends_with_a_number", "marker_typos", "asserts_only",
]

HEADER_POINTS = re.compile(r"^\s*\**\s*Total points\s*:\s*\**\s*([0-9]+(?:\.[0-9]+)?)", re.M)
CODE_STUB = "# YOUR CODE HERE\nraise NotImplementedError()"
TEXT_STUB = "YOUR ANSWER HERE"  # nbgrader's release of a markdown answer without solution markers


@dataclass(frozen=True)
class Exercise:
    """One exercise: its solution cells, its graded test cells, and where it ends."""

    solution_ids: tuple[str, ...]
    test_ids: tuple[str, ...]
    points: float
    last_cell: int  # index of the exercise's last graded test cell in the notebook

    @property
    def name(self) -> str:
        return self.test_ids[0] if len(self.test_ids) == 1 else "+".join(self.test_ids)


def read_notebook(path: Path) -> NotebookNode:
    """Read a notebook as nbformat v4 (raises on unreadable JSON)."""
    return nbformat.read(str(path), as_version=4)


def write_notebook(nb: NotebookNode, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path))
    return path


def nbgrader_meta(cell: NotebookNode) -> dict:
    """The cell's nbgrader metadata; {} when it is missing or damaged (student files can be anything)."""
    meta = cell.get("metadata") if isinstance(cell, dict) else None
    nbg = meta.get("nbgrader") if isinstance(meta, dict) else None
    return nbg if isinstance(nbg, dict) else {}


def cell_points(cell: NotebookNode) -> float:
    """A graded cell's points; 0 when they are missing or not a number."""
    try:
        return float(nbgrader_meta(cell).get("points", 0) or 0)
    except (TypeError, ValueError):
        return 0.0


def is_solution(cell: NotebookNode) -> bool:
    return bool(nbgrader_meta(cell).get("solution"))


def is_manual(cell: NotebookNode) -> bool:
    """A manually graded answer: a solution cell that is also graded (markdown or code); the
    student's text is merged like any answer, and the instructor scores it in formgrader."""
    meta = nbgrader_meta(cell)
    return bool(meta.get("grade")) and bool(meta.get("solution"))


def manual_points(nb: NotebookNode) -> float:
    return sum(cell_points(c) for c in nb.cells if is_manual(c))


def task_points(nb: NotebookNode) -> float:
    return sum(cell_points(c) for c in nb.cells if is_task(c))


def is_task(cell: NotebookNode) -> bool:
    """nbgrader's *task*: a locked markdown cell worth points, answered in cells the student adds after it
    and graded by hand (its grade has no automatic score, as in nbgrader's autograde)."""
    meta = nbgrader_meta(cell)
    return bool(meta.get("task")) and not meta.get("grade") and not meta.get("solution")


def is_test(cell: NotebookNode) -> bool:
    meta = nbgrader_meta(cell)
    return bool(meta.get("grade")) and not meta.get("solution") and cell.get("cell_type") == "code"


_RECORD_CALL = re.compile(r"\brecord\s*\(")


def asserts_only(cell: NotebookNode) -> bool:
    """A graded test cell that calls no ``record()`` (stock nbgrader's kind: it asserts, and nbgrader
    scores it full marks when it runs without an error, or the number its last line shows: grader.engine.verdict.output_score). Its verdict rests on the kernel's own word:
    a student's code runs in the same kernel and can make the asserts pass (THREAT_MODEL.md)."""
    return is_test(cell) and not _RECORD_CALL.search(cell.get("source", ""))


def exercises(nb: NotebookNode) -> list[Exercise]:
    """The notebook's exercises, in order. Consecutive test cells share one exercise."""
    found: list[Exercise] = []
    solutions: list[str] = []
    tests: list[str] = []
    points = 0.0
    last = -1
    for index, cell in enumerate(nb.cells):
        if is_manual(cell):
            continue  # graded by hand, not part of an auto-graded exercise
        if is_solution(cell):
            if tests:
                found.append(Exercise(tuple(solutions), tuple(tests), points, last))
                solutions, tests, points = [], [], 0.0
            solutions.append(nbgrader_meta(cell).get("grade_id", f"cell-{index}"))
        elif is_test(cell):
            tests.append(nbgrader_meta(cell).get("grade_id", f"cell-{index}"))
            points += cell_points(cell)
            last = index
    if tests:
        found.append(Exercise(tuple(solutions), tuple(tests), points, last))
    return found


_HEADING = re.compile(r"^ {0,3}#{1,6}\s+(.+?)\s*#*\s*$", re.M)
_POINTS_NOTE = re.compile(r"\s*\(\s*[0-9]+(?:\.[0-9]+)?\s+points?\s*\)", re.I)


def exercise_titles(nb: NotebookNode) -> dict[str, str]:
    """Each graded test cell's grade_id -> the title of its exercise: the last markdown heading before
    the exercise's first solution cell, without its "(N points)" ("### Exercise 3 (2 points): pairwise
    distances" -> "Exercise 3: pairwise distances"); the grade_id when no heading comes before."""
    titles: dict[str, str] = {}
    heading = title = ""
    after_test = True
    for cell in nb.cells:
        if cell.get("cell_type") == "markdown":
            found = _HEADING.findall(cell.get("source", ""))
            heading = _POINTS_NOTE.sub("", found[-1]).strip() if found else heading
        elif is_solution(cell) and after_test:
            title, after_test = heading, False
        elif is_test(cell):
            gid = nbgrader_meta(cell).get("grade_id", "")
            titles[gid] = (title or heading or gid).replace(" :", ":")
            after_test = True
    return titles


def is_support_file(path: Path) -> bool:
    """Whether ``path`` can ship with an assignment: a plain file (no link), not a notebook, not hidden."""
    path = Path(path)
    return path.is_file() and not path.is_symlink() and path.suffix != ".ipynb" and not path.name.startswith(".")


SKIPPED_FOLDERS = ("__pycache__",)  # besides hidden ones (.ipynb_checkpoints, .git)


def support_files_under(folder: Path) -> list[str]:
    """The files that ship with the notebooks of ``folder``: every support file
    (:func:`is_support_file`) in it and in its sub-folders (``mini-dataset/cat.png``), as sorted
    POSIX paths relative to ``folder``. No link is followed, hidden and ``__pycache__`` folders are
    skipped: each kernel gets these files in the same places beside its notebook."""
    folder = Path(folder)
    found = []
    for root, dirs, files in os.walk(folder):  # os.walk follows no folder link by default
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIPPED_FOLDERS)
        for name in files:
            path = Path(root) / name
            if is_support_file(path):
                found.append(path.relative_to(folder).as_posix())
    return sorted(found)


def safe_relative_name(name: str) -> PurePosixPath:
    """``name`` as a relative path that stays inside the folder it is written to; ValueError for
    an absolute path, ``..``, or an empty name (a job's support file names travel over the network)."""
    path = PurePosixPath(name)
    if not name or path.is_absolute() or any(part in ("..", "") for part in path.parts) or "\\" in name:
        raise ValueError(f"not a relative file name inside the assignment: {name!r}")
    return path


def header_points(nb: NotebookNode) -> float | None:
    """The ``Total points: N`` the first (markdown) cell announces, or None."""
    if not nb.cells or nb.cells[0].cell_type != "markdown":
        return None
    match = HEADER_POINTS.search(nb.cells[0].source)
    return float(match.group(1)) if match else None


def test_points(nb: NotebookNode) -> float:
    return sum(cell_points(c) for c in nb.cells if is_test(c))


# nbgrader's region markers and what the course adds. Regions are found, cut and stubbed by nbgrader's own
# ClearSolutions and ClearHiddenTests (below): a marker is any line that contains the words, however it is
# commented ("### BEGIN SOLUTION", "# BEGIN SOLUTION" and "###BEGIN SOLUTION" all open a region).
SOLUTION_BEGIN, SOLUTION_END = "BEGIN SOLUTION", "END SOLUTION"
HIDDEN_BEGIN, HIDDEN_END = "BEGIN HIDDEN TESTS", "END HIDDEN TESTS"
MARKERS = (SOLUTION_BEGIN, SOLUTION_END, HIDDEN_BEGIN, HIDDEN_END)
HIDDEN_NOTE = "# (hidden tests are not shown)"
RECORD_IMPORT = "from grader.record import record"
RAISE_STUB = "raise NotImplementedError()"


@functools.lru_cache(maxsize=4)
def _clear_solutions(code_stub: str):
    from nbgrader.preprocessors import ClearSolutions
    return ClearSolutions(code_stub={"python": code_stub}, text_stub=TEXT_STUB)


@functools.lru_cache(maxsize=1)
def _clear_hidden_tests():
    from nbgrader.preprocessors import ClearHiddenTests
    return ClearHiddenTests()


def _nbgrader_replaced(source: str, cell_type: str, code_stub: str) -> str:
    """``source`` after nbgrader's ClearSolutions replaced its solution regions with ``code_stub`` (or the
    text stub); a region nbgrader refuses (no end marker, nested) stubs the whole cell, so no solution leaks."""
    cell = (nbformat.v4.new_code_cell if cell_type == "code" else nbformat.v4.new_markdown_cell)(source)
    try:
        _clear_solutions(code_stub)._replace_solution_region(cell, "python")
    except RuntimeError:
        return code_stub if cell_type == "code" else TEXT_STUB
    return cell.source


def without_hidden(source: str) -> str:
    """The source as nbgrader releases a test cell: hidden-test regions, markers included, removed (by
    nbgrader's ClearHiddenTests; a region without its end marker removes everything after its begin)."""
    cell = nbformat.v4.new_code_cell(source)
    try:
        _clear_hidden_tests()._remove_hidden_test_region(cell)
    except RuntimeError:  # everything from the first begin marker on is hidden
        lines = source.split("\n")
        return "\n".join(lines[:next(i for i, line in enumerate(lines) if HIDDEN_BEGIN in line)])
    return cell.source


def stub_source(source: str) -> str:
    """The source with each solution region replaced by a raise, indented as its begin marker (nbgrader's
    ClearSolutions with that stub); a source without markers is returned as it is."""
    return _nbgrader_replaced(source, "code", RAISE_STUB)


def released_answer(source: str, cell_type: str) -> str:
    """A solution cell's text as nbgrader's release (ClearSolutions, default stubs) writes it: each line
    holding the begin marker becomes the stub, indented as that line, through the end marker's line; a cell
    without markers becomes the stub whole. A submitted answer equal to this was handed in untouched."""
    if SOLUTION_BEGIN not in source:
        return CODE_STUB if cell_type == "code" else TEXT_STUB
    return _nbgrader_replaced(source, cell_type, CODE_STUB)


def split_hidden(source: str) -> list[tuple[str, bool]]:
    """A test cell's source cut at its hidden-test markers: [(code, hidden?), ...] in order, marker
    lines left out, empty pieces dropped. The grader runs each piece as its own execution, so it
    knows whether a failure happened in a visible or a hidden check."""
    pieces: list[tuple[list[str], bool]] = [([], False)]
    for line in source.splitlines():
        if HIDDEN_BEGIN in line or HIDDEN_END in line:
            pieces.append(([], HIDDEN_BEGIN in line))
        else:
            pieces[-1][0].append(line)
    return [("\n".join(lines), hidden) for lines, hidden in pieces if "\n".join(lines).strip()]


def strip_hidden(source: str) -> str:
    """The source with each hidden-test region replaced by one note line."""
    lines, inside = [], False
    for line in source.splitlines():
        if HIDDEN_BEGIN in line:
            inside = True
            lines.append(line[: len(line) - len(line.lstrip())] + HIDDEN_NOTE)
        elif HIDDEN_END in line:
            inside = False
        elif not inside:
            lines.append(line)
    return "\n".join(lines)


_NEAR_MARKER = re.compile(r"^\s*#.*(\b(begin|end|start|stop)[\s_-]*(hidden|solution)|"
                          r"\b(hidden[\s_-]*tests?|solution)[\s_-]*(begin|end|start|stop)\b)", re.I)


def marker_typos(nb: NotebookNode) -> list[str]:
    """Comment lines of nbgrader cells that look like a region marker but are none to nbgrader, which finds a
    marker by its exact words (``BEGIN HIDDEN TESTS``; ``### BEGIN HIDDEN TEST`` or ``# begin hidden tests`` is
    an ordinary comment): the tests under such a line are released to students as they are."""
    found = []
    for cell in nb.cells:
        if not nbgrader_meta(cell):
            continue
        for line in cell.source.splitlines():
            if _NEAR_MARKER.match(line) and not any(marker in line for marker in MARKERS):
                found.append(f"{nbgrader_meta(cell).get('grade_id', '?')}: {line.strip()[:80]!r}")
    return found


def ends_with_expression(source: str) -> bool:
    """True when the last statement of a code cell is an expression whose value IPython would show
    as ``Out[n]`` (a ``print(...)`` call shows nothing); False for code that does not parse."""
    try:
        body = ast.parse(source).body
    except SyntaxError:
        return False
    if not body or not isinstance(body[-1], ast.Expr):
        return False
    value = body[-1].value
    is_print = isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "print"
    is_docstring_only = len(body) == 1 and isinstance(value, ast.Constant) and isinstance(value.value, str)
    return not (is_print or is_docstring_only)


def ends_with_a_number(source: str) -> bool:
    """:func:`ends_with_expression`, less the endings whose value is never a number, which stock nbgrader's
    ``determine_grade`` would read as partial credit: a comparison or ``not`` (``True``/``False``, or an array
    of them, does not parse as a float) and a call of an ``assert...`` function (``assert_allclose``, nose's
    ``assert_equal``: they return None, so nothing is shown)."""
    if not ends_with_expression(source):
        return False
    value = ast.parse(source).body[-1].value
    if isinstance(value, (ast.Compare, ast.BoolOp)) or (isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.Not)):
        return False
    func = value.func if isinstance(value, ast.Call) else None
    name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
    return not name.startswith("assert")


def structure_problems(nb: NotebookNode, header_required: bool = True) -> list[str]:
    """Gate (e) and the exercise layout: ids unique, points add up, every exercise well formed. The header's
    ``Total points: N`` and a point for every test are this course's conventions: without ``header_required``
    (a course brought in from nbgrader) a notebook may leave the header out and have 0-point tests (a check
    the student runs for nothing, as nbgrader allows), but a header it has must add up; and an assert-only test
    may end in its score, which both graders read as nbgrader does (grader.engine.verdict.output_score)."""
    problems = []
    seen: dict[str, int] = {}
    for index, cell in enumerate(nb.cells):
        meta = nbgrader_meta(cell)
        if not any(meta.get(flag) for flag in ("grade", "solution", "locked", "task")):
            continue  # an nbgrader cell of no kind (`nbgrader update` writes them): nbgrader wants no grade_id there
        grade_id = meta.get("grade_id")
        if not grade_id:
            problems.append(f"cell {index} has nbgrader metadata but no grade_id")
        elif grade_id in seen:
            problems.append(f"grade_id {grade_id!r} is used by cells {seen[grade_id]} and {index}")
        else:
            seen[grade_id] = index
        if is_test(cell) and not cell_points(cell) > 0 and header_required:
            problems.append(f"graded test cell {grade_id!r} is worth no points")
        scored_by_output = asserts_only(cell) and not header_required  # an nbgrader course's partial credit
        if is_test(cell) and not scored_by_output and (ends_with_a_number(cell.source)
                                                       or ends_with_a_number(strip_hidden(cell.source))):
            problems.append(f"graded test cell {grade_id!r} ends with an expression: its value is shown "
                            "as the cell's output, and stock nbgrader takes a number there as the cell's "
                            "score (partial credit); end the cell with a statement, e.g. a print()")
    announced = header_points(nb)
    total = test_points(nb) + manual_points(nb) + task_points(nb)
    if announced is None and header_required:
        problems.append("the first cell is not markdown with a line 'Total points: N'")
    elif announced is not None and abs(announced - total) > 1e-9:
        cells = ("the test cells and hand-graded answers" if manual_points(nb) + task_points(nb) else
                 "the test cells")
        problems.append(f"the header says 'Total points: {announced:g}' but {cells} add up to {total:g}")
    for exercise in exercises(nb):
        if not exercise.solution_ids:
            problems.append(f"test cell(s) {', '.join(exercise.test_ids)} follow no solution cell")
    trailing = [nbgrader_meta(c).get("grade_id") for i, c in enumerate(nb.cells)
                if is_solution(c) and not is_manual(c) and i > max((e.last_cell for e in exercises(nb)), default=-1)]
    if trailing:
        problems.append(f"solution cell(s) {', '.join(map(str, trailing))} have no graded test after them")
    return problems


def stub(nb: NotebookNode, solution_ids: set[str] | None = None) -> NotebookNode:
    """A copy with the given solution cells (all when None) stubbed as nbgrader's release does."""
    from nbgrader.preprocessors import ClearSolutions

    out = copy.deepcopy(nb)
    clear = ClearSolutions()
    resources = {"language": "python"}
    for index, cell in enumerate(out.cells):
        if is_solution(cell) and (solution_ids is None or nbgrader_meta(cell).get("grade_id") in solution_ids):
            clear.preprocess_cell(cell, resources, index)
    return out
