"""Hand-graded answers (nbgrader cells with ``solution: true, grade: true``), end to end.

The fixture notebook has one auto-graded exercise (2 points), a written answer (markdown, 3 points)
and a code answer (1 point), both graded by hand. One module fixture collects and grades a class
of two (ann answers everything; bob writes an answer to the question and hands in the rest as
released, which nbgrader scores 0 without asking anyone); the tests read nbgrader's gradebook with nbgrader's
API, score the answers through formgrader's HTTP API on a real Jupyter server, and read the grade
table, the CSV export and the feedback page. The gate's rules for these cells are pure functions.
"""
from __future__ import annotations

import csv
import json
import os
import re
import sys
import urllib.request
from pathlib import Path

import nbformat
import pytest

from browser_support import running_lab
from classroom import write_inbox, writable_copy
from grader.authoring.assembly import build, release
from grader.authoring.coursedir import CourseDir
from grader.authoring.manual_cells import manual_cell_problems
from grader.engine.notebook import cells as nbs
from grader.engine.grade import LEFT_AS_RELEASED
from grader.engine.notebook.merge import merge
from grader.intake.collect import collect
from grader.results.export import export_csv
from grader.results.feedback import feedback
from grader.results.table import grade_table
from grader.running.batch import autograde

FIXTURE = Path(__file__).parent / "fixtures" / "grader" / "manual" / "01_manual.ipynb"
A = "01_manual"
MODEL_ANSWER = "Changing `xs` in place would surprise a caller"  # the solution of why_new_list
ANN_TEXT = "A new list: the caller's list is left as it was."
BOB_TEXT = "Because lists are mutable."


def _ann() -> nbs.NotebookNode:
    """The solution with ann's own written answer and code example."""
    nb = nbs.read_notebook(FIXTURE)
    for cell in nb.cells:
        gid = nbs.nbgrader_meta(cell).get("grade_id")
        if gid == "why_new_list":
            cell.source = ANN_TEXT
        elif gid == "own_example":
            cell.source = "example = double([1, 2])"
    return nb


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """The fixture course with ann and bob collected and autograded (not mutated by any test)."""
    base = tmp_path_factory.mktemp("manual")
    root = base / "course"
    build(root, FIXTURE.parent)
    release(root)
    bob = nbs.read_notebook(CourseDir(root).released_notebook(A))
    next(c for c in bob.cells if nbs.nbgrader_meta(c).get("grade_id") == "why_new_list").source = BOB_TEXT
    collect(root, write_inbox(base / "inbox", {"ann": _ann(), "bob": bob}, A))
    return root, autograde(root, workers=1)


@pytest.fixture
def course(graded, tmp_path):
    """A copy of the graded course for a test that writes into it."""
    return writable_copy(graded, tmp_path, "course")


def _grades(root: Path) -> dict[tuple[str, str], tuple]:
    """(student, cell) -> (auto_score, manual_score, needs_manual_grade), by nbgrader's own API."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        return {(s.student.id, g.name): (g.auto_score, g.manual_score, g.needs_manual_grade)
                for s in gb.assignment_submissions(A) for n in s.notebooks for g in n.grades}


def _csv(root: Path, to: Path) -> dict[str, dict]:
    return {row["student_id"]: row for row in csv.DictReader(export_csv(root, to).open(encoding="utf-8"))}


# -- the engine and the gradebook ------------------------------------------------------------------

def test_autograde_scores_the_test_and_leaves_the_answers_to_the_instructor(graded):
    root, results = graded
    by = {o.student: {t.grade_id: t for t in o.tests} for o in results}
    assert (by["ann"]["test_double"].points, by["ann"]["test_double"].status) == (2.0, "passed")
    for student, gid, most in (("ann", "why_new_list", 3.0), ("ann", "own_example", 1.0), ("bob", "why_new_list", 3.0)):
        t = by[student][gid]
        assert (t.status, t.points, t.max_points) == ("manual", 0.0, most), (student, t)
    grades = _grades(root)  # as nbgrader's autograde leaves a manually graded cell: listed in formgrader
    assert grades[("ann", "test_double")] == (2.0, None, False)
    assert grades[("ann", "why_new_list")] == (None, None, True)
    assert grades[("bob", "why_new_list")] == (None, None, True)


def test_an_answer_left_as_released_scores_0_with_nothing_to_grade_by_hand(graded):
    """nbgrader's rule (its autograde compares the answer's checksum with the release's): an unchanged
    hand-graded answer is scored 0 automatically and formgrader does not list it as needing a grade."""
    root, results = graded
    bob = {t.grade_id: t for o in results if o.student == "bob" for t in o.tests}
    assert (bob["own_example"].status, bob["own_example"].points, bob["own_example"].max_points) == (
        "failed", 0.0, 1.0)
    assert bob["own_example"].reason == LEFT_AS_RELEASED
    assert _grades(root)[("bob", "own_example")] == (0.0, None, False)


def test_the_graded_notebook_holds_the_students_answer_never_the_model_answer(graded):
    root, _ = graded
    ann = (CourseDir(root).autograded("ann", A) / f"{A}.ipynb").read_text(encoding="utf-8")
    bob = (CourseDir(root).autograded("bob", A) / f"{A}.ipynb").read_text(encoding="utf-8")
    assert ANN_TEXT in ann and MODEL_ANSWER not in ann
    assert BOB_TEXT in bob and "raise NotImplementedError()" in bob and MODEL_ANSWER not in bob


def test_merge_stubs_a_missing_written_answer_as_nbgrader_releases_it():
    """No submission: the written answer is nbgrader's stub, not the trusted source's model answer."""
    merged = merge(nbs.read_notebook(FIXTURE), None)
    texts = {merged.roles[i].grade_id: c.source for i, c in enumerate(merged.notebook.cells)
             if merged.roles[i].kind == "answer"}
    assert texts["why_new_list"] == "YOUR ANSWER HERE"
    assert "raise NotImplementedError()" in texts["own_example"] and "double([0.1" not in texts["own_example"]


# -- table, export and feedback while answers await ------------------------------------------------

def _table_cells(table: str) -> dict[str, str]:
    """student -> the text of their one score cell (the table separates columns by 2+ spaces)."""
    return dict(re.split(r"\s{2,}", line.strip())[:2] for line in table.splitlines()[1:3])


def test_table_and_export_give_the_points_so_far_and_those_awaiting(graded, tmp_path):
    """ann passed the 2-point test and awaits 3 + 1 points; bob failed it and awaits 3 (his code
    answer, handed in as released, is 0 with nothing to grade)."""
    root, results = graded
    table = grade_table(root, results)
    assert _table_cells(table) == {"ann": "2 + 4 awaiting", "bob": "0 + 3 awaiting"}, table
    assert "awaiting manual grading" in table and "ann / 01_manual: why_new_list, own_example" in table
    assert "bob / 01_manual: why_new_list\n" in table + "\n"  # own_example: 0, nothing to grade
    exported = _csv(root, tmp_path / "grades.csv")
    for student, so_far, awaiting in (("ann", "2.0", "4.0"), ("bob", "0.0", "3.0")):
        row = exported[student]
        assert (row["raw_score"], row["score"], row["awaiting_manual_grading"]) == (so_far, so_far, awaiting), row
        assert row["max_score"] == "6.0"


def test_export_fills_raw_score_and_score_as_nbgrader_s_own_export_does(graded, tmp_path):
    from nbgrader.api import Gradebook
    from nbgrader.plugins.export import CsvExportPlugin

    root, _ = graded
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        CsvExportPlugin(to=str(tmp_path / "stock.csv")).export(gb)
    stock = {r["student_id"]: r for r in csv.DictReader((tmp_path / "stock.csv").open(encoding="utf-8"))}
    ours = _csv(root, tmp_path / "grades.csv")
    for student in ("ann", "bob"):
        for column in ("raw_score", "score", "max_score"):
            assert float(ours[student][column]) == float(stock[student][column]), (student, column)


def test_feedback_says_awaiting_for_each_ungraded_answer(course):
    root, _ = course
    feedback(root, students=["ann"])
    page = (CourseDir(root).feedback("ann", A) / f"{A}.html").read_text(encoding="utf-8")
    assert "Awaiting manual grading (3 points)" in page and "Awaiting manual grading (1 points)" in page
    assert "4 point(s) of this notebook are awaiting manual grading" in page
    assert "Score: 0.0 / 3.0" not in page and MODEL_ANSWER not in page


def test_the_class_report_leaves_answers_awaiting_out_of_the_scores(course):
    """Both submissions await a hand grade: the score histogram has none of them (an ungraded answer is no 0);
    once ann's answers are scored (as formgrader saves them), hers counts, with the instructor's points."""
    from nbgrader.api import Gradebook

    from grader.results.report import write_report

    root, _ = course
    page = write_report(CourseDir(root)).read_text(encoding="utf-8")
    assert "<td>awaiting manual grading</td><td>2 (left out of the scores below until graded)</td>" in page
    assert "Histogram of the scores of 0 graded submissions" in page
    bob = write_report(CourseDir(root), "bob").read_text(encoding="utf-8")
    assert "awaiting manual grading: why_new_list" in bob
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        gb.find_grade("why_new_list", A, A, "ann").manual_score = 2.5
        gb.find_grade("own_example", A, A, "ann").manual_score = 1.0
        gb.db.commit()
    page = write_report(CourseDir(root)).read_text(encoding="utf-8")
    assert "<td>awaiting manual grading</td><td>1 (left out" in page
    assert "Histogram of the scores of 1 graded submissions of 01_manual, out of 6; median 5.5" in page


# -- formgrader: the instructor's score ------------------------------------------------------------

def _request(server, method: str, path: str, body: dict | None = None):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(server.url + path, data=data, method=method,
                                     headers={"Authorization": f"token {server.token}"})
    with urllib.request.urlopen(request, timeout=30) as reply:
        return json.loads(reply.read() or b"null")


def _score_in_formgrader(root: Path, tmp: Path, scores: dict[tuple[str, str], float]) -> None:
    """Set ``scores[(student, cell)]`` as formgrader's grading page does: PUT /formgrader/api/grade/<id>."""
    env = dict(os.environ, JUPYTER_RUNTIME_DIR=str(tmp / "runtime"), HOME=str(tmp / "home"))
    argv = [sys.executable, "-m", "jupyter", "server", "--no-browser", "--ip=127.0.0.1",
            f"--ServerApp.root_dir={root}", "--allow-root"]  # formgrader serves the course it is started in
    with running_lab(argv, root, tmp / "server.log", env) as server:
        for student in sorted({s for s, _ in scores}):
            notebook = _request(server, "GET", f"/formgrader/api/student_notebook_submissions/{student}/{A}")[0]
            grades = _request(server, "GET", f"/formgrader/api/grades?submission_id={notebook['id']}")
            for grade in grades:
                if (student, grade["name"]) in scores:
                    done = _request(server, "PUT", f"/formgrader/api/grade/{grade['id']}",
                                    {"manual_score": scores[(student, grade["name"])]})
                    assert done["manual_score"] == scores[(student, grade["name"])]


def test_a_score_given_in_formgrader_shows_everywhere_and_survives_a_regrade(course, tmp_path):
    root, results = course
    _score_in_formgrader(root, tmp_path, {("ann", "why_new_list"): 2.5, ("ann", "own_example"): 1.0})
    table = grade_table(root, results)
    assert _table_cells(table) == {"ann": "5.5/6", "bob": "0 + 3 awaiting"}, table  # 2 (test) + 2.5 + 1; bob: why_new_list left
    assert "bob / 01_manual: why_new_list" in table and "ann / 01_manual:" not in table
    exported = _csv(root, tmp_path / "grades.csv")
    assert (exported["ann"]["score"], exported["ann"]["awaiting_manual_grading"]) == ("5.5", "0.0")
    assert (exported["bob"]["score"], exported["bob"]["awaiting_manual_grading"]) == ("0.0", "3.0")
    feedback(root, students=["ann"])
    page = (CourseDir(root).feedback("ann", A) / f"{A}.html").read_text(encoding="utf-8")
    assert "Score: 2.5 / 3.0" in page and "awaiting manual grading" not in page.lower()
    assert autograde(root).pending == 0  # nothing new: a hand-graded answer's empty auto score is as saved
    again = autograde(root, students=["ann"], force=True)  # a regrade keeps the instructor's scores
    assert _grades(root)[("ann", "why_new_list")][:2] == (None, 2.5)
    rows = {line.split()[0]: line.split()[1] for line in grade_table(root, again, ["ann"]).splitlines()[1:2]}
    assert rows == {"ann": "5.5/6"}


# -- the gate's rules (pure) -----------------------------------------------------------------------

def _with(grade_id: str, **change) -> nbs.NotebookNode:
    """The fixture with the cell ``grade_id`` changed: ``source=...``, ``points=...``, ``prompt=""``
    (the markdown cell before it emptied)."""
    nb = nbs.read_notebook(FIXTURE)
    index = next(i for i, c in enumerate(nb.cells) if nbs.nbgrader_meta(c).get("grade_id") == grade_id)
    cell = nb.cells[index]
    if "source" in change:
        cell.source = change["source"]
    if "points" in change:
        cell.metadata.nbgrader["points"] = change["points"]
    if "prompt" in change:
        nb.cells[index - 1].source = change["prompt"]
    return nb


def test_the_gate_accepts_the_fixtures_hand_graded_answers():
    nb = nbs.read_notebook(FIXTURE)
    assert manual_cell_problems(nb) == []
    assert nbs.structure_problems(nb) == []  # a solution cell that is graded is allowed; 2 + 3 + 1 = 6
    assert [e.test_ids for e in nbs.exercises(nb)] == [("test_double",)]


@pytest.mark.parametrize("grade_id, change, expected", [
    ("why_new_list", {"points": 0}, "is worth no points"),
    ("why_new_list", {"source": "### BEGIN HIDDEN TESTS\nx\n### END HIDDEN TESTS"}, "hidden-test markers"),
    ("why_new_list", {"prompt": "  "}, "has no question"),
    ("why_new_list", {"source": "YOUR ANSWER HERE"}, "has no model answer"),
    ("why_new_list", {"source": "   "}, "has no model answer"),
    ("own_example", {"source": "### BEGIN SOLUTION\n### END SOLUTION"}, "has no model answer"),
    ("own_example", {"prompt": ""}, "has no question"),
])
def test_the_gate_refuses_a_broken_hand_graded_answer(grade_id, change, expected):
    problems = manual_cell_problems(_with(grade_id, **change))
    assert len(problems) == 1 and grade_id in problems[0] and expected in problems[0], problems


def test_a_code_answer_may_ask_its_question_in_a_comment():
    nb = _with("own_example", prompt="", source="# Give an example call of double.\n### BEGIN SOLUTION\n"
                                                 "example = double([1])\n### END SOLUTION")
    assert manual_cell_problems(nb) == []


def test_the_header_total_counts_hand_graded_points():
    nb = _with("why_new_list", points=4)
    assert any("add up to 7" in p for p in nbs.structure_problems(nb)), nbs.structure_problems(nb)


def test_gate_a_and_b_leave_hand_graded_points_out_and_name_them():
    """(a) graded with the solutions: a hand-graded answer earns 0 there and is not "lost"."""
    from grader.engine.verdict.result import TestResult
    verdicts = [TestResult("test_double", 2.0, 2.0, "passed", "ok"), TestResult("why_new_list", 3.0, 0.0, "manual", "by hand"),
                TestResult("own_example", 1.0, 0.0, "manual", "by hand")]
    from grader.running.gate import _auto_and_by_hand

    auto, note = _auto_and_by_hand(verdicts)
    assert auto == verdicts[:1] and note == "; 4 points graded by hand"


def test_a_saved_hand_graded_answer_is_not_graded_again():
    """autograde regrades a submission whose gradebook no longer holds what its marker says; a
    hand-graded answer is saved with no automatic score, and that is up to date."""
    from grader.running.pending import in_gradebook

    marker = {"student": "ann", "assignment": A, "score": 2.0, "max_score": 5.0, "problems": [], "tests": [
        {"grade_id": "test_double", "max_points": 2.0, "points": 2.0, "status": "passed", "reason": "ok"},
        {"grade_id": "why_new_list", "max_points": 3.0, "points": 0.0, "status": "manual", "reason": "by hand"}]}
    saved = {("ann", A, "test_double"): 2.0, ("ann", A, "why_new_list"): None}
    assert in_gradebook(marker, saved)
    assert not in_gradebook(marker, {("ann", A, "test_double"): 2.0})  # the grade row is missing
    assert not in_gradebook(marker, {**saved, ("ann", A, "why_new_list"): 0.0})  # scored by a machine


@pytest.mark.parametrize("cell_type, source", [
    ("code", "### BEGIN SOLUTION\nexample = double([0.1, 0.2])\n### END SOLUTION"),
    ("code", "def f(x):\n    ### BEGIN SOLUTION\n    return 2 * x\n    ### END SOLUTION\n\nY = f(1)"),
    ("code", "x = 1  # no markers: the whole cell is the answer"),
    ("markdown", "A model answer without markers."),
    ("markdown", "Keep this line.\n### BEGIN SOLUTION\nThe model answer.\n### END SOLUTION\nAnd this one."),
])
def test_the_released_text_of_an_answer_is_nbgraders(cell_type, source):
    """What the untouched check compares with is what nbgrader's ClearSolutions writes into the release."""
    from nbgrader.preprocessors import ClearSolutions

    meta = {"nbgrader": {"solution": True, "grade": True, "grade_id": "x", "points": 1}}
    new_cell = nbformat.v4.new_code_cell if cell_type == "code" else nbformat.v4.new_markdown_cell
    cell = new_cell(source, metadata=meta)
    released, _ = ClearSolutions().preprocess_cell(cell, {"language": "python"}, 0)
    assert nbs.released_answer(source, cell_type) == released.source
