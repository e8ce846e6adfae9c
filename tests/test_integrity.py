"""What the grader reads back is checked, never trusted: reference values carry a seal made with
the course's own key, and a grade counts as done only while the gradebook holds what its marker
says. Whatever changed them (a tool, a hand, a bug) leads to recomputing, not to wrong grades."""
from __future__ import annotations

import json

import pytest

from classroom import A, cell_scores, graded_class, writable_copy
from grader.authoring.coursedir import CourseDir
from grader.running.batch import autograde


def scores(results) -> dict[str, float]:
    return {o.student: o.score for o in results}


@pytest.fixture
def graded(tmp_path):
    """A copy of the shared graded class (class_of's class collected and graded by two workers, once per
    session): each test changes its own copy."""
    root, results = writable_copy(graded_class(), tmp_path)
    return root, scores(results)


def marker_times(course: CourseDir) -> dict[str, int]:
    return {s: course.marker(s, A).stat().st_mtime_ns for s in course.students()}


def test_reference_values_changed_after_grading_are_computed_again_and_every_grade_redone(graded):
    root, before = graded
    course = CourseDir(root)
    path = course.references(A)
    data = json.loads(path.read_text())
    hidden = data["cells"]["test_scale"]["hidden"]
    hidden["value"] = data["cells"]["test_mean_of"]["hidden"]["value"]  # a wrong expected value
    path.write_text(json.dumps(data))
    times = marker_times(course)
    after = scores(autograde(root, workers=2))
    assert after == before  # computed again from the solution, not used as changed
    assert json.loads(path.read_text())["cells"]["test_scale"]["hidden"]["value"] != hidden["value"]
    assert all(course.marker(s, A).stat().st_mtime_ns != t for s, t in times.items())


def test_a_gradebook_that_lost_a_score_gets_it_back_and_only_that_submission_is_graded_again(graded):
    from nbgrader.api import Gradebook

    root, before = graded
    course = CourseDir(root)
    times = marker_times(course)
    with Gradebook(f"sqlite:///{course.gradebook}", "d2lite") as gb:
        grade = gb.find_grade("test_scale", A, A, "ann")
        grade.auto_score = 0.0
        gb.db.commit()
    assert scores(autograde(root, workers=1)) == before
    changed = {s for s, t in marker_times(course).items() if times[s] != t}
    assert changed == {"ann"}
    assert cell_scores(root)[("ann", "test_scale")] == 2.0  # the cell's points
