"""Authoring rules for hand-graded answers (gate check "m"), read from the source notebook alone.

A hand-graded answer is an nbgrader cell with ``solution: true, grade: true, points: N``, markdown
(a written answer) or code. The grader merges the student's text and never scores it; the
instructor does, in formgrader. Its rules:

- it is worth points (N > 0);
- it holds no hidden-test markers (nothing in it is tested, and a hidden region would be released);
- the student sees a question: a markdown cell with text just before it, or for a code answer
  released text other than nbgrader's stub (a comment with the question);
- its model answer (the solution, what formgrader shows beside the student's) is not empty and is
  not nbgrader's stub (``YOUR ANSWER HERE`` for markdown, ``# YOUR CODE HERE`` for code).

That nbgrader's release replaces the model answer by its stub is checked by gate (d) on the
release itself.

A course brought in from nbgrader (gate ``--allow-asserts``) keeps nbgrader's rules: an answer may be worth 0
points, and one without a model answer (an open question, nbgrader needs none) is a warning
(:func:`manual_cell_warnings`), not a failure.
"""
from __future__ import annotations

import nbformat

from ..engine.notebook import cells as nbs
from ..engine.notebook.variants import solution_lines

__all__ = ["manual_cell_problems", "manual_cell_warnings"]

CODE_STUB_LINES = {*nbs.CODE_STUB.splitlines(), "raise NotImplementedError"}


def _model_answer(cell) -> str:
    """The solution text: inside the solution markers when there are any, else the whole cell."""
    holder = nbformat.v4.new_notebook()  # cells set after: new_notebook's check wants cell ids (nbformat 4.5)
    holder.cells = [cell]
    return "\n".join(solution_lines(holder)).strip()


def _released_prompt(cell) -> str:
    """What a code answer shows the student besides nbgrader's stub (its own question), if anything."""
    if nbs.SOLUTION_BEGIN not in cell.source:
        return ""
    kept = nbs.stub_source(cell.source).splitlines()
    return "\n".join(line for line in kept if line.strip() and line.strip() not in CODE_STUB_LINES).strip()


def _is_stub(text: str) -> bool:
    lines = {line.strip() for line in text.splitlines() if line.strip()}
    return not lines or lines <= CODE_STUB_LINES | {nbs.TEXT_STUB}


def _without_model_answer(nb) -> list[str]:
    return [f"hand-graded answer {nbs.nbgrader_meta(cell).get('grade_id', f'cell-{index}')!r} has no model "
            "answer: write it as the cell's text (nbgrader releases the stub in its place; formgrader shows it "
            "to the grader)"
            for index, cell in enumerate(nb.cells) if nbs.is_manual(cell) and _is_stub(_model_answer(cell))]


def manual_cell_warnings(nb) -> list[str]:
    """For a course brought in from nbgrader: the answers without a model answer, which nbgrader allows
    (formgrader then shows the grader nothing beside the student's answer)."""
    return _without_model_answer(nb)


def manual_cell_problems(nb, zero_points_ok: bool = False) -> list[str]:
    """One sentence per broken rule (see the module's docstring); [] when every answer is fine. With
    ``zero_points_ok`` (a course brought in from nbgrader, which allows both) an answer may be worth 0 points
    and may have no model answer (:func:`manual_cell_warnings` names those)."""
    problems = []
    for index, cell in enumerate(nb.cells):
        if not nbs.is_manual(cell):
            continue
        gid = nbs.nbgrader_meta(cell).get("grade_id", f"cell-{index}")
        where = f"hand-graded answer {gid!r}"
        if cell.cell_type not in ("markdown", "code"):
            problems.append(f"{where} is a {cell.cell_type} cell; make it markdown (written) or code")
        if not nbs.cell_points(cell) > 0 and not zero_points_ok:
            problems.append(f"{where} is worth no points; give it points: N > 0")
        if nbs.HIDDEN_BEGIN in cell.source or nbs.HIDDEN_END in cell.source:
            problems.append(f"{where} holds hidden-test markers; a hand-graded answer is not tested: remove them")
        before = nb.cells[index - 1] if index else None
        asked = (before is not None and before.cell_type == "markdown" and not nbs.is_solution(before)
                 and before.source.strip())
        if not asked and not (cell.cell_type == "code" and _released_prompt(cell)):
            problems.append(f"{where} has no question: put a markdown cell with the question just before it")
    return problems + ([] if zero_points_ok else _without_model_answer(nb))
