"""The engine's interface: references, grade, validate, and refusing to run unsandboxed."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import nbformat
import pytest

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "engine"))
from submissions import PLAIN, TENSOR, cell_with_id, grade_all, references, release, submission, write  # noqa: E402,E501

from grader.engine import grade as engine_grade  # noqa: E402
from grader.engine.grade import (Limits, References, ReferenceRunError, SandboxUnavailable,  # noqa: E402
                            grade, run_reference, validate)
from grader.record import MIME_TYPE  # noqa: E402


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("api")
    refs = references([PLAIN, TENSOR], tmp_path_factory)
    wrong_mean = {"mean": "def mean(xs):\n    return sum(xs) / (len(xs) + 1)"}
    jobs = {
        "tensor_solution": (TENSOR, write(submission(TENSOR, solved=True), tmp / "ts.ipynb")),
        "tensor_release": (TENSOR, write(release(TENSOR), tmp / "tr.ipynb")),
        "plain_solution": (PLAIN, write(submission(PLAIN, solved=True), tmp / "ps.ipynb")),
        "plain_release": (PLAIN, write(release(PLAIN), tmp / "pr.ipynb")),
        "plain_wrong_mean": (PLAIN, write(submission(PLAIN, wrong_mean, solved=True),
                                          tmp / "pw.ipynb")),
        "row_mean_transposed": (TENSOR, write(submission(TENSOR, {
            "row_mean": "def row_mean(x):\n    return x.mean(dim=1, keepdim=True)"},
            solved=True), tmp / "tt.ipynb")),
    }
    return tmp, refs, grade_all(jobs, refs, tmp)


def test_solution_scores_full_marks(run):
    _, _, graded = run
    for name in ("tensor_solution", "plain_solution"):
        result = graded[name]
        assert result.score == result.max_score == 4, result.tests
        assert list(result.tests) == [c.metadata["nbgrader"]["grade_id"] for c in
                                      result.notebook.cells if c.metadata.get("nbgrader", {})
                                      .get("grade")]
        assert result.problems == []


def test_release_scores_zero(run):
    _, _, graded = run
    for name in ("tensor_release", "plain_release"):
        assert graded[name].score == 0
        assert {t.status for t in graded[name].tests.values()} == {"error"}
        assert all("NotImplementedError" in t.reason for t in graded[name].tests.values())


def test_a_wrong_answer_fails_only_its_own_test(run):
    result = run[2]["plain_wrong_mean"]
    assert {g: t.status for g, t in result.tests.items()} == {
        "add_test": "passed", "mean_test": "error", "shout_test": "passed"}
    assert result.score == 2


def test_shape_is_checked_exactly(run):
    test = run[2]["row_mean_transposed"].tests["row_mean_test"]
    assert test.status in ("failed", "error") and test.points == 0


def test_graded_notebook_keeps_hidden_tests_and_drops_record_outputs(run):
    result = run[2]["tensor_solution"]
    test = cell_with_id(result.notebook, "square_test")
    assert "BEGIN HIDDEN TESTS" in test.source and test.execution_count is not None
    assert MIME_TYPE not in json.dumps([c.get("outputs", []) for c in result.notebook.cells])
    nbformat.validate(result.notebook)


def test_references_round_trip_and_reject_other_files(run, tmp_path):
    _, refs, _ = run
    loaded = References.load(refs[PLAIN])
    assert set(loaded.cells) == {"add_test", "mean_test", "shout_test"}
    assert loaded.cells["mean_test"]["hidden"]["rtol"] == 1e-9
    loaded.save(tmp_path / "again.json")
    assert References.load(tmp_path / "again.json").cells == loaded.cells
    (tmp_path / "bad.json").write_text('{"cells": []}')
    with pytest.raises(ValueError, match="not a course-grader references file"):
        References.load(tmp_path / "bad.json")


def test_grading_against_stale_references_is_flagged(run, tmp_path):
    tmp, refs, _ = run
    changed = nbformat.read(str(PLAIN), as_version=4)
    changed.cells[0].source += "\n\nEdited."
    source = write(changed, tmp_path / "plain.ipynb")
    result = grade(source, None, References.load(refs[PLAIN]), workdir=tmp_path / "w")
    assert any("changed after the reference run" in p for p in result.problems)


@pytest.mark.parametrize("damage, words", [
    # calls record(), but never runs it (a test without record() is assert-only: tests/test_assert_only.py)
    (lambda c: setattr(c, "source", c.source.replace("record(", "0 and record(")), "recorded no values"),
    (lambda c: setattr(c, "source", "assert False, 'broken test'"), "did not pass"),
])
def test_reference_run_fails_loudly_on_a_broken_test(tmp_path, damage, words):
    nb = nbformat.read(str(PLAIN), as_version=4)
    damage(cell_with_id(nb, "shout_test"))
    source = write(nb, tmp_path / "broken.ipynb")
    with pytest.raises(ReferenceRunError, match=words) as err:
        run_reference(source, workdir=tmp_path / "ref", limits=Limits(cell_timeout_s=30))
    assert "shout_test" in str(err.value)


def test_a_failing_reference_run_names_the_set_up_cell_that_failed_first(tmp_path):
    """The test cell fails with a NameError because an earlier cell never defined the name: the
    message names that earlier cell and its own error, which is what the instructor must fix."""
    nb = nbformat.read(str(PLAIN), as_version=4)
    first = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code")
    nb.cells[first].source = "import no_such_module_in_the_course\n" + nb.cells[first].source
    source = write(nb, tmp_path / "broken_import.ipynb")
    with pytest.raises(ReferenceRunError) as err:
        run_reference(source, workdir=tmp_path / "ref", limits=Limits(cell_timeout_s=30))
    message = str(err.value)
    assert f"the first cell that failed is cell {first + 1}, 'import no_such_module_in_the_course'" in message
    assert "ModuleNotFoundError" in message


def test_a_test_the_solution_fails_refuses_the_assignment_and_says_what_to_do(tmp_path):
    """jhamrick/nbgrader-demo's ps1 checks `result.dtype` against `np.float`, removed in numpy 1.24: stock nbgrader
    grades the assignment and scores that test 0 for every student, without a word. course-grader refuses it
    (a deliberate difference, README): the message names the cell and its error, says what stock would have done,
    and what to do; the submissions wait for the next autograde."""
    nb = nbformat.read(str(PLAIN), as_version=4)
    cell_with_id(nb, "shout_test").source = "import numpy as np\nassert np.zeros(2).dtype == np.float"
    source = write(nb, tmp_path / "removed_alias.ipynb")
    with pytest.raises(ReferenceRunError) as err:
        run_reference(source, workdir=tmp_path / "ref", limits=Limits(cell_timeout_s=30))
    message = str(err.value)
    assert "graded test cell 'shout_test' did not pass with the solution" in message
    assert "AttributeError: module 'numpy' has no attribute 'float'" in message
    assert "Stock nbgrader would score that test 0 for every student" in message
    assert "Fix that cell in the source notebook" in message and "run autograde again" in message


def test_a_test_whose_solution_ends_above_its_points_is_refused(tmp_path):
    """nbgrader takes a test's last number as its score, and stops grading a submission where it is above the
    cell's points: a test whose solution does so would stop every submission."""
    nb = nbformat.read(str(PLAIN), as_version=4)
    cell_with_id(nb, "shout_test").source = "score = 1e6\nscore"
    source = write(nb, tmp_path / "above.ipynb")
    with pytest.raises(ReferenceRunError, match="shout_test.* ends in '1000000.0', above its") as err:
        run_reference(source, workdir=tmp_path / "ref", limits=Limits(cell_timeout_s=30))
    assert "make its last line a score between 0 and the points" in str(err.value)


def test_refuses_to_run_unsandboxed_unless_asked(monkeypatch, tmp_path, run):
    monkeypatch.setattr(engine_grade, "sandbox_status", lambda: (False, "bwrap is missing"))
    refs = References.load(run[1][PLAIN])
    with pytest.raises(SandboxUnavailable, match="bwrap is missing.*--unsafe"):
        grade(PLAIN, PLAIN, refs, workdir=tmp_path / "a")
    with pytest.raises(SandboxUnavailable):
        run_reference(PLAIN, workdir=tmp_path / "b")
    result = grade(PLAIN, PLAIN, refs, workdir=tmp_path / "c", unsafe=True)
    assert result.score == 4


def test_validate_runs_the_visible_tests_as_they_are(run, tmp_path):
    tmp = run[0]
    solved = validate(tmp / "ps.ipynb", workdir=tmp_path / "v1", limits=Limits(cell_timeout_s=30))
    assert [(t.grade_id, t.status, t.points) for t in solved] == [
        ("add_test", "passed", 1), ("mean_test", "passed", 2), ("shout_test", "passed", 1)]
    wrong = validate(tmp / "pw.ipynb", workdir=tmp_path / "v2", limits=Limits(cell_timeout_s=30))
    assert [t.status for t in wrong] == ["passed", "error", "passed"]
    assert "mean([1, 2, 3]) should be 2.0" in wrong[1].reason
    (tmp_path / "bad.ipynb").write_text("{")
    with pytest.raises(ValueError, match="not valid JSON"):
        validate(tmp_path / "bad.ipynb", workdir=tmp_path / "v3")


def test_validate_scores_a_test_that_ends_in_a_number_as_nbgrader_does(run, tmp_path):
    """A test whose last line is its score (nbgrader's partial credit) passed the self-check in full."""
    nb = nbformat.read(str(run[0] / "ps.ipynb"), as_version=4)
    cell_with_id(nb, "shout_test").source = "score = 0.25\nscore"
    checked = validate(write(nb, tmp_path / "scored.ipynb"), workdir=tmp_path / "v", limits=Limits(cell_timeout_s=30))
    shout = next(t for t in checked if t.grade_id == "shout_test")
    assert (shout.status, shout.points) == ("failed", 0.25), shout
    assert "last line gives 0.25 of 1 points" in shout.reason


def test_a_workdir_holding_the_source_is_refused(run, tmp_path):
    source = write(nbformat.read(str(PLAIN), as_version=4), tmp_path / "course" / "plain.ipynb")
    refs = References.load(run[1][PLAIN])
    with pytest.raises(ValueError, match="contains the source notebook"):
        grade(source, source, refs, workdir=tmp_path)
    with pytest.raises(ValueError, match="scratch folder"):
        run_reference(source, workdir=tmp_path / "course")


def test_cells_after_the_last_graded_cell_are_not_run_while_grading(tmp_path):
    """They decide no points, so grading stops after the last graded test and the student's own cells right after it
    (a deliberate difference: stock runs them, THREAT_MODEL.md). The trusted cell after them ends the kernel when it
    runs, as it does in the reference run (which runs every cell and says so); the graded copy shows a note in its
    place."""
    from grader.engine.isolation.notebook_run import NOT_RUN_NOTE

    nb = nbformat.read(str(PLAIN), as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell("import os\nos._exit(3)  # a demonstration that ends the kernel"))
    source = write(nb, tmp_path / "trailing.ipynb")
    refs = run_reference(source, workdir=tmp_path / "ref", limits=Limits(cell_timeout_s=30))
    assert refs.problems == ["cell 12: the kernel exited (exit status 3); later cells were not run"]
    assert References.from_dict(refs.to_dict()).problems == refs.problems  # kept in the references file
    student = submission(source, solved=True)
    student.cells.insert(-1, nbformat.v4.new_code_cell("print('my own check')"))
    result = grade(source, write(student, tmp_path / "student.ipynb"), refs, workdir=tmp_path / "work",
                   limits=Limits(cell_timeout_s=30))
    assert result.score == result.max_score == 4, result.tests
    assert result.problems == []  # the kernel was not ended
    mine, last = result.notebook.cells[-2], result.notebook.cells[-1]
    assert mine.execution_count is not None  # it ran (its output is scrubbed: it follows a hidden test)
    assert last.outputs == [nbformat.v4.new_output("stream", name="stderr", text=NOT_RUN_NOTE)]
    assert last.execution_count is None


def test_grading_runs_up_to_the_last_test_and_the_students_cells_after_it_unless_a_person_grades_later_cells():
    from grader.engine.notebook.merge import Merged, Role, last_graded_cell

    def merged(*kinds, task_at=None):
        cells = [nbformat.v4.new_code_cell("") for _ in kinds]
        if task_at is not None:
            cells[task_at] = nbformat.v4.new_markdown_cell("", metadata={"nbgrader": {"task": True, "grade_id": "t"}})
        return Merged(nbformat.v4.new_notebook(cells=cells), [Role(k) for k in kinds], [])

    assert last_graded_cell(merged("trusted", "answer", "test", "trusted", "trusted")) == 2
    assert last_graded_cell(merged("answer", "test", "added", "added", "trusted", "added")) == 3
    assert last_graded_cell(merged("trusted", "answer", "test", "trusted", "trusted", task_at=0)) == 2
    # a task or a hand-graded answer after the last test: a person may need every later cell's output
    assert last_graded_cell(merged("answer", "test", "trusted", "added", "trusted", task_at=2)) is None
    assert last_graded_cell(merged("answer", "test", "answer", "trusted")) is None
    assert last_graded_cell(merged("trusted", "added")) is None  # nothing graded: every cell runs
