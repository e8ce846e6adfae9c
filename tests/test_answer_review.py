"""What the grader reads in a student's source asks a person; it never takes points silently (issue 28).

Honest corpus: answers and exploration cells that ordinary students write, in the course's own
notebooks (the solution with one cell replaced or added). Each must read clean: no finding for any
test of the notebook, so every test keeps the points its behaviour earns and nobody is asked to look.

Attacks: the ways around a rule that reading only the answer cell misses (the answer moved to an
added cell, a builtin stored as an attribute by another cell, a star-import, a tested name rebound
through ``global``). Each must be found for its exercise's test, so that the test is flagged for review
(:func:`grader.engine.grade.reviewed`): it keeps the points its behaviour earned until a person
decides, and a course that opted in deducts only for a certain finding.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import nbformat
import pytest

from grader.engine.reading.rules import REVIEW_REASON, Reading
from grader.engine.grade import TestResult, reviewed, source_readings, verdict_line
from grader.engine.notebook.merge import merge, read_submission

COURSE = Path(__file__).resolve().parent.parent / "course"


def _gid(cell) -> str:
    return cell.metadata.get("nbgrader", {}).get("grade_id", "")


def readings(notebook: str, folder: Path, replace: dict[str, str] = {}, after: dict[str, list[str]] = {}) -> dict:
    """{test grade_id: Reading} of the course notebook's solution with answers replaced (by grade_id) and
    student cells added after the cell of a grade_id ("" : after the first cell), merged as the grader does."""
    trusted = nbformat.read(str(COURSE / notebook), as_version=4)
    submission = nbformat.read(str(COURSE / notebook), as_version=4)
    cells = []
    for n, cell in enumerate(submission.cells):
        if _gid(cell) in replace:
            cell.source = replace[_gid(cell)]
        cells.append(cell)
        for source in after.get(_gid(cell) if _gid(cell) or n else "", []) if (_gid(cell) or n == 0) else []:
            cells.append(nbformat.v4.new_code_cell(source))
    submission.cells = cells
    nbformat.write(submission, str(folder / notebook))
    read, _ = read_submission(folder / notebook)
    merged = merge(trusted, read)
    return {merged.roles[i].grade_id: reading for i, (_, reading) in source_readings(merged).items()}


def flagged(found: dict) -> dict[str, list[str]]:
    return {gid: reading.problems for gid, reading in found.items() if reading.problems}


PAIRWISE_CHECKED = '''def pairwise_distances(X, Y):
    """X: (n, d), Y: (m, d). Returns (n, m) with D[i, j] = ||X[i] - Y[j]||_2."""
    if any(t.dim() != 2 for t in (X, Y)):
        raise ValueError("X and Y must be matrices")
    diff = X[:, None, :] - Y[None, :, :]
    return (diff ** 2).sum(dim=-1).sqrt()
'''
SOFTMAX = '''def softmax(X, dim):
    shifted = X - X.max(dim=dim, keepdim=True).values
    e = torch.exp(shifted)
    return e / e.sum(dim=dim, keepdim=True)
'''
EXPLORATION = {
    "sys.version": "import sys\nprint(sys.version)\n",
    "torch.__version__": "print(torch.__version__)\n",
    "getattr over dtype names": 'for name in ("float16", "float32", "float64"):\n'
                                "    print(name, torch.finfo(getattr(torch, name)).eps)\n",
    "a class with self._calls": "class Counter:\n    def __init__(self):\n        self._calls = 0\n\n"
                                "    def __call__(self, x):\n        self._calls += 1\n        return x\n\n"
                                "counter = Counter()\ncounter(1)\n",
    "%timeit after the answer": "%timeit softmax(torch.randn(64, 10), 1)\n",
    "%%timeit cell": "%%timeit Z = torch.randn(64, 10)\nsoftmax(Z, 1)\n",
    "a list kept across cells": "losses = []\nlosses.append(1.0)\n",
}


@pytest.mark.parametrize("name", list(EXPLORATION))
def test_an_exploration_cell_that_changes_nothing_shared_costs_nothing_and_flags_nothing(name, tmp_path):
    assert flagged(readings("01_tensors.ipynb", tmp_path, after={"softmax": [EXPLORATION[name]]})) == {}


def test_a_self_check_at_the_end_of_the_answer_cell_is_not_the_answer(tmp_path):
    answer = SOFTMAX + "\nZ = torch.randn(4, 5)\ntorch.allclose(softmax(Z, 1), torch.softmax(Z, dim=1))\n"
    assert flagged(readings("01_tensors.ipynb", tmp_path, replace={"softmax": answer})) == {}


def test_validating_the_inputs_over_a_written_out_tuple_is_not_a_loop(tmp_path):
    assert flagged(readings("01_tensors.ipynb", tmp_path, replace={"pairwise_distances": PAIRWISE_CHECKED})) == {}


def test_mysequential_as_d2l_writes_it_and_a_summary_naming_classes_read_clean(tmp_path):
    d2l = ('class MySequential(nn.Module):\n    def __init__(self, *args):\n        super().__init__()\n'
           '        for idx, module in enumerate(args):\n            self._modules[str(idx)] = module\n\n'
           '    def forward(self, X):\n        for block in self._modules.values():\n            X = block(X)\n'
           '        return X\n')
    source = nbformat.read(str(COURSE / "03_modules.ipynb"), as_version=4)
    summary = next(c.source for c in source.cells if _gid(c) == "summary_solution")
    summary = summary.replace("type(module).__name__", "module.__class__.__name__")
    assert "module.__class__.__name__" in summary
    found = readings("03_modules.ipynb", tmp_path, replace={"mysequential_solution": d2l, "summary_solution": summary})
    assert flagged(found) == {}


# --- attacks: each is found for its exercise's test -------------------------------------------------

def test_the_answer_moved_to_an_added_cell_is_read_where_the_tested_name_is_bound(tmp_path):
    stub = "def softmax(X, dim):\n    raise NotImplementedError()\n"
    moved = "def softmax(X, dim):\n    return torch.softmax(X, dim)\n"
    found = readings("01_tensors.ipynb", tmp_path, replace={"softmax": stub}, after={"softmax": [moved]})
    assert any("`softmax`" in p for p in found["test_softmax"].problems), found["test_softmax"]
    assert found["test_softmax"].certain == []  # not in the exercise's own answer cell: a person decides


def test_a_builtin_stored_as_an_attribute_by_another_cell_is_found(tmp_path):
    found = readings("01_tensors.ipynb", tmp_path, after={"": ["torch.Tensor.cd_ = torch.cdist\n"]},
                     replace={"pairwise_distances": "def pairwise_distances(X, Y):\n    return X.cd_(Y)\n"})
    problems = found["test_pairwise_distances"].problems
    assert any("torch.Tensor.cd_" in p for p in problems), problems


def test_a_star_import_then_the_bare_builtin_is_found(tmp_path):
    found = readings("01_tensors.ipynb", tmp_path, after={"": ["from torch.functional import *\n"]},
                     replace={"pairwise_distances": "def pairwise_distances(X, Y):\n    return cdist(X, Y)\n"})
    problems = found["test_pairwise_distances"].problems
    assert any("star-import" in p for p in problems), problems


def test_a_tested_name_rebound_through_global_after_the_answer_is_found(tmp_path):
    rebind = "def switch():\n    global softmax\n    softmax = torch.softmax\n\nswitch()\n"
    found = readings("01_tensors.ipynb", tmp_path, after={"softmax": [rebind]})
    assert any("`softmax`" in p for p in found["test_softmax"].problems), found["test_softmax"]


def test_the_shell_and_unreadable_cells_are_flagged_not_skipped(tmp_path):
    for cell in ("!pip list\n", "exec('x = 1')\n", "def broken(:\n    pass\n"):
        found = readings("01_tensors.ipynb", tmp_path, after={"": [cell]})
        assert found["test_softmax"].problems, cell


def test_a_direct_call_of_the_avoided_function_in_the_answer_is_certain(tmp_path):
    found = readings("01_tensors.ipynb", tmp_path,
                     replace={"pairwise_distances": "def pairwise_distances(X, Y):\n    return torch.cdist(X, Y)\n"})
    certain = found["test_pairwise_distances"].certain
    assert certain and "cdist" in certain[0] and "return torch.cdist(X, Y)" in certain[0], certain


# --- what a finding does to the test --------------------------------------------------------------

PASSED = TestResult("test_pairwise_distances", 6.0, 6.0, "passed", "All checks passed.")
FINDING = Reading(["`cdist` (cell 97, line 2: `return torch.cdist(X, Y)`)"],
                  ["`cdist` (cell 97, line 2: `return torch.cdist(X, Y)`)"])


def test_a_finding_keeps_the_behaviour_points_and_flags_the_test_for_a_person():
    test = reviewed(PASSED, Reading(FINDING.problems), "pairwise_distances")
    assert (test.points, test.status) == (6.0, "passed")
    assert test.review_cell == "pairwise_distances"
    assert "exercise `pairwise_distances`" in test.review and "return torch.cdist(X, Y)" in test.review
    assert test.reason.endswith(REVIEW_REASON)
    assert verdict_line(test).startswith("PASSED (6/6), UNDER REVIEW: ")


def test_a_certain_finding_is_deducted_only_where_the_course_opted_in():
    assert reviewed(PASSED, FINDING, "pairwise_distances").points == 6.0
    deducted = reviewed(PASSED, FINDING, "pairwise_distances", deduct_certain=True)
    assert (deducted.points, deducted.status, deducted.review) == (0.0, "failed", "")
    assert deducted.reason.startswith("The grader read your code")
    kept = reviewed(PASSED, Reading(FINDING.problems), "pairwise_distances", deduct_certain=True)
    assert kept.points == 6.0 and kept.review  # not certain: a person decides, even there


# --- where a flagged test shows: gradebook (formgrader), grade table, export --------------------------

def _flagged_course(root: Path, monkeypatch):
    """A course of one assignment ``a1`` (a test cell and its answer cell) with ann's submission saved by
    :func:`grader.results.gradebook.save_result`, her test flagged for review."""
    from nbgrader.api import Gradebook

    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")  # nbgrader runs alembic

    from grader.authoring.coursedir import CourseDir
    from grader.engine.verdict.result import Outcome
    from grader.results.gradebook import save_result

    course = CourseDir(root)
    course.source("a1").mkdir(parents=True)
    nbformat.write(nbformat.v4.new_notebook(), str(course.source_notebook("a1")))
    (course.root / "submitted" / "ann" / "a1").mkdir(parents=True)
    (course.root / "submitted" / "ann" / "a1" / "timestamp.txt").write_text("2026-11-27 03:00:00.000000 UTC")
    test = reviewed(PASSED, Reading(FINDING.problems), "pairwise_distances")
    result = Outcome("", "", 0, 0, [test], [], notebooks={"a1": nbformat.writes(nbformat.v4.new_notebook())})
    with Gradebook(f"sqlite:///{course.gradebook}") as gb:
        gb.add_assignment("a1")
        gb.add_notebook("a1", "a1")
        gb.add_grade_cell("test_pairwise_distances", "a1", "a1", max_score=6.0, cell_type="code")
        gb.add_solution_cell("pairwise_distances", "a1", "a1")
        gb.add_student("ann")
        gb.add_submission("a1", "ann")
        save_result(course, gb, "ann", "a1", result, [])
    return course


def test_a_flagged_test_keeps_its_score_and_needs_a_manual_grade_in_the_gradebook(tmp_path, monkeypatch):
    from nbgrader.api import Gradebook

    course = _flagged_course(tmp_path / "course", monkeypatch)
    with Gradebook(f"sqlite:///{course.gradebook}") as gb:
        grade = gb.find_grade("test_pairwise_distances", "a1", "a1", "ann")
        comment = gb.find_comment("pairwise_distances", "a1", "a1", "ann")
        assert (grade.auto_score, grade.manual_score, grade.needs_manual_grade) == (6.0, None, True)
        assert "return torch.cdist(X, Y)" in comment.auto_comment  # formgrader shows it under the answer cell
        assert gb.find_submission("a1", "ann").needs_manual_grade  # formgrader lists the submission as flagged
    from grader.engine.verdict.result import Outcome
    from grader.results.gradebook import save_result

    cleared = Outcome("", "", 0, 0, [PASSED], [], notebooks={"a1": nbformat.writes(nbformat.v4.new_notebook())})
    with Gradebook(f"sqlite:///{course.gradebook}") as gb:  # graded again, without a finding: no flag, no comment
        save_result(course, gb, "ann", "a1", cleared, [])
        assert not gb.find_grade("test_pairwise_distances", "a1", "a1", "ann").needs_manual_grade
        assert gb.find_comment("pairwise_distances", "a1", "a1", "ann").auto_comment is None


def test_the_table_and_the_export_say_which_grades_await_review_until_a_person_decides(tmp_path, monkeypatch):
    import csv

    from nbgrader.api import Gradebook

    from grader.results.export import SafeCsvExport
    from grader.results.gradebook import outcomes
    from grader.results.table import grade_table

    course = _flagged_course(tmp_path / "course", monkeypatch)
    table = grade_table(course, outcomes(course))
    assert "6/6 review" in table and "under review" in table and "return torch.cdist(X, Y)" in table, table
    with Gradebook(f"sqlite:///{course.gradebook}") as gb:
        SafeCsvExport(to=str(tmp_path / "grades.csv")).export(gb)
    row = next(csv.DictReader((tmp_path / "grades.csv").open()))
    assert (row["score"], row["under_review"]) == ("6.0", "6.0"), row
    with Gradebook(f"sqlite:///{course.gradebook}") as gb:  # the instructor confirms it: 0 in formgrader
        grade = gb.find_grade("test_pairwise_distances", "a1", "a1", "ann")
        grade.manual_score, grade.needs_manual_grade = 0.0, False
        gb.db.commit()
    table = grade_table(course, outcomes(course))
    assert "0/6" in table and "under review" not in table, table


def test_the_students_page_says_the_answer_is_being_looked_at_without_the_rule():
    from grader.results.feedback import student_text

    page = student_text(reviewed(PASSED, Reading(FINDING.problems), "pairwise_distances"), [])
    assert "(6/6), UNDER REVIEW: " in page and REVIEW_REASON in page, page
    assert "cdist" not in page  # the rule is the hidden part's: the finding is for the instructor


def test_a_helper_in_the_answer_cell_that_the_tests_never_reach_is_not_certain(tmp_path):
    answer = PAIRWISE_CHECKED + "\n\ndef compare(X, Y):\n    return torch.cdist(X, Y)\n"
    reading = readings("01_tensors.ipynb", tmp_path, replace={"pairwise_distances": answer})["test_pairwise_distances"]
    assert reading.problems and reading.certain == []  # read (it is the answer cell's), but a person decides


@pytest.mark.parametrize("cell", [
    "T = torch.Tensor\nT.cd_ = torch.cdist\n",                     # an alias is not the student's own object
    "from os import environ\nenviron['CUDA_VISIBLE_DEVICES'] = ''\n",
    "import sys\nsys.modules['d2lite'] = None\n",
    "def init(m):\n    m.weight = None\n\ntorch.nn.Linear.reset_parameters = init\n",
    "with open('d2lite.py', 'w') as f:\n    f.write('x = 1')\n",
    "from unittest import mock\nmock.patch('torch.cdist').start()\n",
])
def test_an_unused_cell_that_changes_shared_state_is_read(cell):
    from grader.engine.reading.rules import Rules, answer_problems

    cells = [("trusted", "import torch"), ("added", cell), ("answer", SOFTMAX), ("test", "softmax(X, 1)")]
    assert any("changes what other cells share" in p for p in answer_problems(cells, [2], 3, Rules())), cell
