"""Hand-graded answers: their scores from nbgrader's gradebook, where formgrader writes them.

A submission's marker holds what autograde decided: each test's points, and for a hand-graded
answer the status ``"manual"`` (0 points, neither earned nor lost). The instructor's scores live in
the gradebook (``Grade.manual_score``, plus ``extra_credit``); a manual score also overrides the
automatic score of a test cell, as in nbgrader (``Grade.score``). :func:`final_score` joins the two:

    scores = manual_scores(course)                   # {(student, assignment): {grade_id: score}}
    final_score(outcome.score, outcome.tests, scores.get(key, {}))        # None while an answer awaits manual grading
"""
from __future__ import annotations

from ..authoring.coursedir import CourseDir
from ..engine.verdict.result import TestResult
from ..engine.verdict.statuses import AWAITING, UNDER_REVIEW

__all__ = ["AWAITING", "UNDER_REVIEW", "manual_scores", "final_score", "score_so_far", "awaiting", "under_review",
           "score_key"]


def manual_scores(course: CourseDir) -> dict[tuple[str, str], dict[str, float]]:
    """(student, assignment) -> {grade_id: manual score + extra credit} for every grade (of a test, an answer or
    an nbgrader task) that an instructor scored by hand, by one query; {} when there is no gradebook. Each score is
    also filed under ``notebook/grade_id`` (:func:`score_key`: an assignment of several notebooks)."""
    if not course.gradebook.is_file():
        return {}
    from nbgrader.api import (Assignment, BaseCell, Grade, Gradebook, Notebook, SubmittedAssignment,
                              SubmittedNotebook)

    with Gradebook(f"sqlite:///{course.gradebook}") as gb:
        rows = (gb.db.query(SubmittedAssignment.student_id, Assignment.name, Notebook.name, BaseCell.name,
                            Grade.manual_score, Grade.extra_credit)
                .join(SubmittedNotebook, Grade.notebook_id == SubmittedNotebook.id)
                .join(Notebook, SubmittedNotebook.notebook_id == Notebook.id)
                .join(SubmittedAssignment, SubmittedNotebook.assignment_id == SubmittedAssignment.id)
                .join(Assignment, SubmittedAssignment.assignment_id == Assignment.id)
                .join(BaseCell, Grade.cell_id == BaseCell.id)
                .filter(Grade.manual_score.isnot(None)).all())
    found: dict[tuple[str, str], dict[str, float]] = {}
    for student, assignment, notebook, grade_id, score, extra in rows:
        scores = found.setdefault((student, assignment), {})
        scores[grade_id] = scores[f"{notebook}/{grade_id}"] = float(score) + float(extra or 0.0)
    return found


def score_key(test: TestResult) -> str:
    """Where :func:`manual_scores` files a test's score: its grade_id; ``notebook/grade_id`` for a test of an
    assignment of several notebooks (its marker names the notebook; grade ids are unique per notebook)."""
    return f"{test.notebook}/{test.grade_id}" if test.notebook else test.grade_id


def awaiting(tests: list[TestResult], scored: dict[str, float]) -> list[str]:
    """The grade_ids of hand-graded answers not graded yet."""
    return [t.grade_id for t in tests if t.status == "manual" and score_key(t) not in scored]


def under_review(tests: list[TestResult], scored: dict[str, float]) -> list[str]:
    """The grade_ids of tests flagged for what the grader read in their answer (``review``) that no instructor
    has decided yet: they count with the points their behaviour earned until a manual score replaces them
    (a lower one confirms the finding, the same one clears it)."""
    return [t.grade_id for t in tests if t.review and score_key(t) not in scored]


def score_so_far(score: float, tests: list[TestResult], scored: dict[str, float]) -> tuple[float, float]:
    """(points so far, points awaiting): autograde's ``score`` with the instructor's scores in place
    of the points autograde gave those cells, and the points of the hand-graded answers not graded yet."""
    so_far = score + sum(scored[score_key(t)] - t.points for t in tests if score_key(t) in scored)
    left = sum(t.max_points for t in tests if t.status == "manual" and score_key(t) not in scored)
    return so_far, float(left)


def final_score(score: float, tests: list[TestResult], scored: dict[str, float]) -> float | None:
    """:func:`score_so_far`'s points; None while any answer awaits manual grading."""
    return None if awaiting(tests, scored) else score_so_far(score, tests, scored)[0]
