"""nbgrader's own documentation course, ps1, graded by course-grader as stock nbgrader grades it.

ps1 is read from the installed nbgrader package at test time (nothing of it is in this repository):
docs/source/user_guide/source/ps1 (problem1.ipynb, problem2.ipynb, jupyter.png) and source/header.ipynb; its
students' work from the same guide: submitted/bitdiddle/ps1, submitted/hacker/ps1, and the zip_collect example
downloaded/ps1/archive (a later attempt of hacker's problem1 and the zip's problem2, files named as an LMS
names them), collected here as a third student. Stock nbgrader 0.9.6 autogrades them to 1.5, 3 and 3 of the 13
points (the issue's measurement); the other 10 (written answers, a code answer and a task) wait for manual
grading, except an answer handed in as released, which scores 0. The same test runs stock nbgrader on the same
course and students and requires every gradebook row to be the same.
"""
from __future__ import annotations

import shutil
import zipfile
from pathlib import Path

import pytest

from classroom import grade_rows, stock_course, stock_nbgrader
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


def write_students(guide: Path, submitted: Path) -> None:
    """``submitted/<student>/`` for bitdiddle and hacker (the guide's submissions) and hacker-archive (the
    zip_collect example's files, named as an LMS names them)."""
    for student in ("bitdiddle", "hacker"):
        shutil.copytree(guide / "submitted" / student / "ps1", submitted / student)
    archive = guide / "downloaded" / "ps1" / "archive"
    third = submitted / "hacker-archive"
    third.mkdir(parents=True)
    shutil.copyfile(archive / "ps1_hacker_attempt_2016-01-30-20-30-10_problem1.ipynb",
                    third / "ps1_hacker_attempt_2016-01-30-20-30-10_problem1.ipynb")
    with zipfile.ZipFile(archive / "notebooks.zip") as zipped:
        (third / "ps1_hacker_attempt_2016-01-30-16-30-10_problem2.ipynb").write_bytes(
            zipped.read("ps1_hacker_attempt_2016-01-30-16-30-10_problem2.ipynb"))


@pytest.fixture(scope="module")
def graded(tmp_path_factory) -> tuple[Path, Path]:
    """ps1 graded by course-grader (its folder as an instructor keeps it: ps1/ and header.ipynb) and by stock
    nbgrader (an nbgrader course root with the header configured), the same three students in each."""
    guide, base = user_guide(), tmp_path_factory.mktemp("ps1")
    course = base / "ps1course"
    shutil.copytree(guide / "source" / "ps1", course / "ps1")
    shutil.copyfile(guide / "source" / "header.ipynb", course / "header.ipynb")
    write_students(guide, base / "inbox")
    root = base / "course"
    assert main(["build", "--root", str(root), "--course", str(course)]) == 0
    assert main(["release", "--root", str(root)]) == 0
    assert main(["collect", str(base / "inbox"), "--root", str(root)]) == 0
    assert main(["autograde", "--root", str(root)]) == 0
    stock = stock_course(base / "stock", guide / "source" / "ps1", guide / "source" / "header.ipynb")
    write_students(guide, base / "stock-inbox")
    for folder in sorted((base / "stock-inbox").iterdir()):  # nbgrader's layout: submitted/<student>/ps1/<notebook>
        target = stock / "submitted" / folder.name / "ps1"
        target.mkdir(parents=True)
        for file in folder.iterdir():
            name = file.name if "_attempt_" not in file.name else file.name.rsplit("_", 1)[1]
            shutil.copyfile(file, target / name)
    # the archive's later problem1 has nbgrader's old metadata format: stock autograde refuses it and says to
    # run `nbgrader update` (course-grader reads either format)
    stock_nbgrader(stock, "update", "submitted/hacker-archive")
    stock_nbgrader(stock, "autograde", "ps1", "--create")
    return root, stock


def test_ps1_scores_as_stock_nbgrader_scores_it(graded):
    root, stock = graded
    totals: dict[str, dict[str, float]] = {"ours": {}, "stock": {}}
    for who, rows in (("ours", grade_rows(root, "ps1")), ("stock", grade_rows(stock, "ps1"))):
        for (student, _, _), (score, _) in rows.items():
            totals[who][student] = totals[who].get(student, 0.0) + (score or 0.0)
    assert totals == {"ours": EXPECTED_AUTO, "stock": EXPECTED_AUTO}


def test_every_gradebook_row_is_stock_nbgraders(graded):
    """Automatic score and "needs manual grading" of every grade cell, for every student, as stock nbgrader
    writes them (bitdiddle's code answer sum_of_squares_application, handed in as released, scores 0 with
    nothing to grade by hand)."""
    root, stock = graded
    ours, theirs = grade_rows(root, "ps1"), grade_rows(stock, "ps1")
    assert ours == theirs
    assert theirs[("bitdiddle", "problem1", "sum_of_squares_application")] == (0.0, False)


def test_ps1s_written_answers_code_answer_and_task_wait_for_formgrader(graded):
    """hacker answered every hand-graded cell: all five wait, with no automatic score. Every student's task
    (Part E, answered in a markdown cell added after it) waits too, and its answer reaches formgrader."""
    root, _ = graded
    rows = grade_rows(root, "ps1")
    assert {key[1:] for key, (_, manual) in rows.items() if key[0] == "hacker" and manual} == BY_HAND
    assert all(rows[("hacker", *cell)][0] is None for cell in BY_HAND)
    for student in EXPECTED_AUTO:
        assert rows[(student, "problem1", "cell-938593c4a215c6cc")] == (None, True), student
    graded_nb = (root / "autograded" / "bitdiddle" / "ps1" / "problem1.ipynb").read_text(encoding="utf-8")
    # stored rendered and cleaned (issue 28, item 6), its formula as MathML (issue 31, item 6)
    assert "<msup><mi>x</mi><mi>i</mi></msup>" in graded_nb and "<mfrac>" in graded_nb, \
        "the task's answer, \\sum x^i = \\frac{1}{1-x}, reaches formgrader"


def test_the_gate_passes_ps1_as_brought_in_and_counts_its_points(tmp_path, capsys):
    """`check --allow-asserts`: no 'Total points' header needed, problem2 (only hand-graded answers) passes
    (a), and the points add up to ps1's 13 (problem1: 3 automatic, 3 by hand, a 4-point task; problem2: 3)."""
    guide = user_guide()
    shutil.copytree(guide / "source" / "ps1", tmp_path / "ps1")
    shutil.copyfile(guide / "source" / "header.ipynb", tmp_path / "header.ipynb")
    assert main(["check", str(tmp_path), "--allow-asserts", "--workers", "2"]) == 0
    out = capsys.readouterr().out
    assert "(e) 2 exercises, grade_ids unique, 10 points" in out and "(e) 0 exercises, grade_ids unique, 3 points" in out
    assert "(a) solution scores 0/0; 3 points graded by hand" in out
