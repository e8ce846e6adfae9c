"""A course in nbgrader's layout graded by course-grader and by stock nbgrader: the same automatic scores.

The course (tests/fixtures/grader/nbcourse): assignment week1 = sequences.ipynb (harmonic 2 pts, running_max
1 pt, a written answer 2 pts by hand) + integrals.ipynb (a test that the image ships 1 pt, trapezoid 2 pts, a
code answer 1 pt by hand, a task 2 pts by hand) + trapezoids.png, a header notebook. Tests are nbgrader's
kind: plain asserts. Three students, their notebooks made from the release:
  ada  everything right                                -> 2 + 1 | 1 + 2 = 6 automatic points
  ben  harmonic wrong, running_max right, the written answer left as released, no integrals
                                                       -> 0 + 1 | 0 + 0 = 1
  cy   running_max left as released, the rest right    -> 2 + 0 | 1 + 2 = 5
Stock nbgrader grades a plain nbgrader course (the fixture folder under source/, the header configured as
IncludeHeaderFooter) with the same submissions; both gradebooks must give these scores, and leave the hand-graded
answers and the task to formgrader (no automatic score, needs manual grading), except an answer handed in
as released, which both score 0 with nothing to grade by hand (nbgrader compares the answer's checksum with the
release's).
"""
from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest

from classroom import grade_rows, stock_course, stock_nbgrader
from grader.authoring.coursedir import CourseDir
from grader.cli import main
from grader.engine.notebook import cells as nbs

NBCOURSE = Path(__file__).parent / "fixtures" / "grader" / "nbcourse"
EXPECTED = {  # (student, notebook, test cell) -> automatic points, worked out from the answers above
    ("ada", "sequences", "test_harmonic"): 2.0, ("ada", "sequences", "test_running_max"): 1.0,
    ("ada", "integrals", "test_figure"): 1.0, ("ada", "integrals", "test_trapezoid"): 2.0,
    ("ben", "sequences", "test_harmonic"): 0.0, ("ben", "sequences", "test_running_max"): 1.0,
    ("ben", "integrals", "test_figure"): 0.0, ("ben", "integrals", "test_trapezoid"): 0.0,
    ("cy", "sequences", "test_harmonic"): 2.0, ("cy", "sequences", "test_running_max"): 0.0,
    ("cy", "integrals", "test_figure"): 1.0, ("cy", "integrals", "test_trapezoid"): 2.0,
}
BY_HAND = {("sequences", "explain_divergence"), ("integrals", "midpoint"), ("integrals", "error_task")}


def solutions(notebook: str) -> dict[str, str]:
    """grade_id -> source of each solution cell of the fixture's ``notebook``."""
    nb = nbs.read_notebook(NBCOURSE / "week1" / f"{notebook}.ipynb")
    return {nbs.nbgrader_meta(c)["grade_id"]: c.source for c in nb.cells if nbs.is_solution(c)}


def answered(released: Path, answers: dict[str, str]) -> nbs.NotebookNode:
    """The released notebook with the solution cells in ``answers`` filled in."""
    nb = nbs.read_notebook(released)
    for cell in nb.cells:
        gid = nbs.nbgrader_meta(cell).get("grade_id")
        if gid in answers:
            cell.source = answers[gid]
    return nb


SECRET = "5eed" * 16  # as `nbgrader submit` writes a submission_secret.txt (hex digits)
WHEN = "2026-11-20 10:00:00.000000 UTC"


def write_class(released: Path, submitted: Path, exchange: bool = False) -> None:
    """``submitted/<student>/week1/`` for ada, ben and cy (nbgrader's layout), each with a timestamp; with
    ``exchange``, ``submitted`` is an exchange's inbound folder: ``<student>+week1+<timestamp>/`` with a secret."""
    right = {**solutions("sequences"), **solutions("integrals")}
    work = {
        "ada": {"sequences": right, "integrals": right},
        "ben": {"sequences": {**{k: v for k, v in right.items() if k != "explain_divergence"},
                              "harmonic": "def harmonic(n):\n    return float(n)\n"}},
        "cy": {"sequences": {k: v for k, v in right.items() if k != "running_max"},
               "integrals": right},
    }
    for student, notebooks in work.items():
        folder = submitted / (f"{student}+week1+{WHEN}" if exchange else f"{student}/week1")
        folder.mkdir(parents=True)
        if exchange:
            (folder / "submission_secret.txt").write_text(SECRET)
        for notebook, answers in notebooks.items():
            nbs.write_notebook(answered(released / f"{notebook}.ipynb", answers), folder / f"{notebook}.ipynb")
        (folder / "timestamp.txt").write_text(WHEN)


def gradebook_rows(root: Path) -> dict[tuple[str, str, str], tuple[float | None, bool]]:
    return grade_rows(root, "week1")


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """The course graded by course-grader (root) and by stock nbgrader (stock); neither is changed by a test."""
    base = tmp_path_factory.mktemp("nbcourse")
    root = base / "course"
    assert main(["build", "--root", str(root), "--course", str(NBCOURSE)]) == 0
    assert main(["release", "--root", str(root)]) == 0
    write_class(CourseDir(root).release("week1"), base / "exchange" / "inbound", exchange=True)
    assert main(["collect", str(base / "exchange"), "--no-check-owner", "--root", str(root)]) == 0
    assert main(["autograde", "--root", str(root)]) == 0
    stock = stock_course(base / "stock", NBCOURSE / "week1", NBCOURSE / "header.ipynb", "numerics-101")
    write_class(stock / "release" / "week1", stock / "submitted")
    stock_nbgrader(stock, "autograde", "week1", "--create")
    return root, stock


def test_every_notebook_is_graded_as_stock_nbgrader_grades_it(graded):
    root, stock = graded
    ours, theirs = gradebook_rows(root), gradebook_rows(stock)
    auto = {key: (ours.get(key, (None,))[0] or 0.0) for key in EXPECTED}
    assert auto == EXPECTED
    assert {key: (theirs.get(key, (None,))[0] or 0.0) for key in EXPECTED} == EXPECTED


def test_every_gradebook_row_is_stock_nbgraders(graded):
    """Every grade stock nbgrader writes (automatic score, needs manual grading), ours writes the same: the
    answers ben left as released score 0 with nothing to grade by hand, as nbgrader's checksum rule has it."""
    root, stock = graded
    ours, theirs = gradebook_rows(root), gradebook_rows(stock)
    assert {key: ours.get(key) for key in theirs} == theirs
    assert theirs[("ben", "sequences", "explain_divergence")] == (0.0, False)


def test_hand_graded_answers_and_the_task_are_left_to_formgrader(graded):
    root, stock = graded
    for rows in (gradebook_rows(root), gradebook_rows(stock)):
        for student in ("ada", "cy"):
            for notebook, cell in BY_HAND:
                assert rows[(student, notebook, cell)] == (None, True), (student, notebook, cell)


def test_the_graded_notebooks_and_one_row_per_student_and_assignment(graded, tmp_path):
    root, _ = graded
    assert sorted(p.name for p in (root / "autograded" / "ada" / "week1").glob("*.ipynb")) == \
        ["integrals.ipynb", "sequences.ipynb"]
    assert (root / "autograded" / "ada" / "week1" / "trapezoids.png").is_file(), "formgrader shows the figure"
    assert (root / "references" / "week1" / "sequences.json").is_file()
    from grader.results.table import grade_table
    from grader.running.batch import outcomes

    assert "ben / week1: sequences/test_harmonic: " in grade_table(root, outcomes(root)), "a failed test names its notebook"
    assert main(["export", "--root", str(root), "--to", str(tmp_path / "grades.csv")]) == 0
    with open(tmp_path / "grades.csv", newline="", encoding="utf-8") as file:
        rows = list(csv.DictReader(file))
    assert sorted((r["assignment"], r["student_id"]) for r in rows) == [("week1", s) for s in ("ada", "ben", "cy")]
    assert {r["student_id"]: float(r["awaiting_manual_grading"]) for r in rows} == {"ada": 5.0, "ben": 0.0, "cy": 5.0}


def test_feedback_has_a_page_per_notebook_and_each_is_released(graded, tmp_path):
    from grader.results.feedback_release import released_path

    root = shutil.copytree(graded[0], tmp_path / "course")  # the module's course stays as graded
    assert main(["feedback", "--root", str(root)]) == 0
    folder = root / "feedback" / "cy" / "week1"
    assert sorted(p.name for p in folder.glob("*.html")) == ["integrals.html", "sequences.html"]
    assert "running_max([]) == []" not in (folder / "sequences.html").read_text(encoding="utf-8"), \
        "a hidden test reached the student's page"
    assert main(["release-feedback", "--root", str(root)]) == 0
    for name in ("integrals", "sequences"):
        page = released_path(CourseDir(root).exchange, "numerics-101", SECRET, name)
        assert page.read_bytes() == (folder / f"{name}.html").read_bytes(), name


def test_scores_given_in_formgrader_make_the_final_score_task_included(graded, tmp_path):
    """As formgrader saves them: a manual score on each hand-graded cell of cy, the task's included."""
    from nbgrader.api import Gradebook

    from grader.results.table import grade_table
    from grader.running.batch import outcomes

    root = shutil.copytree(graded[0], tmp_path / "course")
    given = {("sequences", "explain_divergence"): 1.5, ("integrals", "midpoint"): 1.0, ("integrals", "error_task"): 2.0}
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        for (notebook, cell), score in given.items():
            gb.find_grade(cell, notebook, "week1", "cy").manual_score = score
        gb.db.commit()
    rows = {line.split()[0]: line for line in grade_table(root, outcomes(root)).splitlines()[1:4]}
    assert rows["cy"].split()[1] == "9.5/11", rows  # 5 automatic + 4.5 by hand, of 6 + 5
    assert rows["ada"].endswith(" + 5 awaiting"), rows  # her two written answers, 5 points, not yet scored


def test_the_gate_on_a_course_brought_in_finds_its_free_point(capsys):
    """`check --allow-asserts` takes the course as nbgrader wrote it (no 'Total points' header) and still finds
    what a release would give away: integrals' test_figure checks the shipped image, so it earns its point
    with no answer at all."""
    assert main(["check", str(NBCOURSE), "--allow-asserts", "--workers", "2"]) == 1
    out = capsys.readouterr().out
    assert "PASS  " in out and "sequences.ipynb" in out.split("PASS  ", 1)[1].splitlines()[0]
    assert "FAIL (b) test_figure earns 1" in out
    assert "test_figure still earns points with no answer before it" in out
