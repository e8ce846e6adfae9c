"""nbgrader's own documentation course, ps1, graded by course-grader as stock nbgrader grades it.

ps1 is read from the installed nbgrader package at test time (nothing of it is in this repository):
docs/source/user_guide/source/ps1 (problem1.ipynb, problem2.ipynb, jupyter.png) and source/header.ipynb; its
students' work from the same guide: submitted/bitdiddle/ps1, submitted/hacker/ps1, and the zip_collect example
downloaded/ps1/archive (a later attempt of hacker's problem1 and the zip's problem2, files named as an LMS
names them), collected here as a third student. Stock nbgrader 0.9.6 autogrades them to 1.5, 3 and 3 of the 13
points; the other 10 (written answers, a code answer and a task) wait for manual grading.
"""
from __future__ import annotations

import shutil
import zipfile
from pathlib import Path

import pytest

from grader.cli import main

EXPECTED_AUTO = {"bitdiddle": 1.5, "hacker": 3.0, "hacker-archive": 3.0}  # stock nbgrader 0.9.6's scores
BY_HAND = {("problem1", "sum_of_squares_equation"), ("problem1", "sum_of_squares_application"),
           ("problem1", "cell-938593c4a215c6cc"), ("problem2", "part-a"), ("problem2", "part-b")}


def user_guide() -> Path:
    import nbgrader

    guide = Path(nbgrader.__file__).parent / "docs" / "source" / "user_guide"
    if not (guide / "source" / "ps1").is_dir():
        pytest.fail(f"nbgrader's documentation course is not at {guide / 'source' / 'ps1'}: this test needs "
                    "nbgrader as pinned in constraints.txt (its wheel ships docs/source/user_guide)")
    return guide


@pytest.fixture(scope="module")
def graded(tmp_path_factory) -> Path:
    guide, base = user_guide(), tmp_path_factory.mktemp("ps1")
    course = base / "ps1course"
    shutil.copytree(guide / "source" / "ps1", course / "ps1")
    shutil.copyfile(guide / "source" / "header.ipynb", course / "header.ipynb")
    inbox = base / "inbox"
    for student in ("bitdiddle", "hacker"):
        shutil.copytree(guide / "submitted" / student / "ps1", inbox / student)
    archive = guide / "downloaded" / "ps1" / "archive"
    third = inbox / "hacker-archive"
    third.mkdir()
    shutil.copyfile(archive / "ps1_hacker_attempt_2016-01-30-20-30-10_problem1.ipynb",
                    third / "ps1_hacker_attempt_2016-01-30-20-30-10_problem1.ipynb")
    with zipfile.ZipFile(archive / "notebooks.zip") as zipped:
        (third / "ps1_hacker_attempt_2016-01-30-16-30-10_problem2.ipynb").write_bytes(
            zipped.read("ps1_hacker_attempt_2016-01-30-16-30-10_problem2.ipynb"))
    root = base / "course"
    assert main(["build", "--root", str(root), "--course", str(course)]) == 0
    assert main(["release", "--root", str(root)]) == 0
    assert main(["collect", str(inbox), "--root", str(root)]) == 0
    assert main(["autograde", "--root", str(root)]) == 0
    return root


def grades(root: Path) -> dict[tuple[str, str, str], tuple[float | None, bool]]:
    """(student, notebook, cell) -> (auto score, needs manual grade), read with nbgrader's own API."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        return {(s.student.id, nb.name, g.name): (g.auto_score, bool(g.needs_manual_grade))
                for s in gb.assignment_submissions("ps1") for nb in s.notebooks for g in nb.grades}


def test_ps1_scores_as_stock_nbgrader_scores_it(graded):
    rows = grades(graded)
    auto = {}
    for (student, _, _), (score, _) in rows.items():
        auto[student] = auto.get(student, 0.0) + (score or 0.0)
    assert auto == EXPECTED_AUTO


def test_ps1s_written_answers_code_answer_and_task_wait_for_formgrader(graded):
    """hacker answered every hand-graded cell: all five wait, with no automatic score, as in stock nbgrader.
    Every student's task (Part E, answered in a markdown cell added after it) waits too. (bitdiddle left the
    code answer as released: stock nbgrader scores such an answer 0 without asking; course-grader leaves it
    awaiting like any hand-graded answer.)"""
    rows = grades(graded)
    assert {key[1:] for key, (_, manual) in rows.items() if key[0] == "hacker" and manual} == BY_HAND
    assert all(rows[("hacker", *cell)][0] is None for cell in BY_HAND)
    for student in EXPECTED_AUTO:
        assert rows[(student, "problem1", "cell-938593c4a215c6cc")] == (None, True), student
    graded_nb = (graded / "autograded" / "bitdiddle" / "ps1" / "problem1.ipynb").read_text(encoding="utf-8")
    assert "\\\\sum x^i = \\\\frac{1}{1-x}" in graded_nb, "the task's answer reaches formgrader"
