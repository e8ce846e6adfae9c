"""What a batch has to do: the assignments whose reference values must be computed again, and the
submissions without an up-to-date grade (read from the markers, the sources, the sealed references and
the gradebook). Nothing here runs or writes anything.

    stale, seconds = reference_plan(course, names, key)          # ["02_autograd"], {"01_tensors": 7.2}
    todo = pending_submissions(course, names, students, force, stale, gradebook_scores(gb))
    # [("ann", "02_autograd"), ...]
"""
from __future__ import annotations

from ..authoring.coursedir import CourseDir
from ..engine.verdict.references import References, sha256_of, sha256_of_all
from ..engine.verdict.result import Outcome

__all__ = ["gradebook_scores", "in_gradebook", "pending_submissions", "reference_plan"]


def reference_plan(course: CourseDir, names: list[str], key: bytes) -> tuple[list[str], dict[str, float]]:
    """The assignments whose references file is missing, older than the source, or changed since the
    grader sealed it (their solution must run again), and how long each up-to-date run took."""
    stale, seconds = [], {}
    for assignment in names:
        cached = [_cached(course, assignment, notebook, key) for notebook in course.notebooks(assignment)]
        if cached and all(r is not None for r in cached):
            seconds[assignment] = sum(r.seconds for r in cached)
        else:
            stale.append(assignment)
    return stale, seconds


def _cached(course: CourseDir, assignment: str, notebook: str, key: bytes) -> References | None:
    """The notebook's sealed references when they were computed from its current source, else None."""
    try:
        cached = References.load(course.references(assignment, notebook), key)
    except (OSError, ValueError):
        return None
    return cached if cached.source_sha256 == sha256_of(course.source_notebook(assignment, notebook)) else None


def pending_submissions(course: CourseDir, names: list[str], students: list[str] | None, force: bool, stale: list[str],
             scores: dict[tuple[str, str, str], float | None]):
    """(student, assignment) pairs that have a submission and no up-to-date grade.

    A grade is up to date when its marker names this submission's timestamp, the current source and
    the current (sealed) reference values, and the gradebook holds the marker's points; a submission
    of an assignment whose reference values must be computed again is graded again."""
    todo = []
    sources = {assignment: sha256_of_all(course.source_files(assignment)) for assignment in names}
    references = {assignment: sha256_of_all(course.reference_files(assignment)) for assignment in names
                  if assignment not in stale}
    for student in course.students():
        if students and student not in students:
            continue
        for assignment in names:
            if not course.submission(student, assignment).is_dir():
                continue
            marker = course.read_marker(student, assignment) or {}
            saved = _readable(marker)
            current = (assignment not in stale and saved is not None
                       and saved.timestamp == course.timestamp(student, assignment)
                       and saved.source_sha256 == sources[assignment]
                       and saved.references_sha256 == references[assignment]
                       and in_gradebook(marker, scores))
            if force or not current:
                todo.append((student, assignment))
    return todo


def _readable(marker: dict) -> Outcome | None:
    """The marker's outcome; None for a damaged marker (graded again)."""
    try:
        return Outcome.from_json(marker)
    except (KeyError, TypeError):
        return None


def in_gradebook(marker: dict, scores: dict[tuple[str, str, str], float | None]) -> bool:
    """Whether the gradebook holds every test score the marker says was saved (a hand-graded
    answer's: no automatic score). marker: the marker's parsed JSON; a damaged one (not an
    :class:`grader.engine.verdict.result.Outcome`) is not in the gradebook."""
    try:
        saved = Outcome.from_json(marker)
        keys = [grade_key(saved.student, saved.assignment, t.notebook or saved.assignment, t.grade_id)
                for t in saved.tests]
        return all(scores.get(key, 0.0) is None if t.status == "manual" else scores.get(key) == t.points
                   for key, t in zip(keys, saved.tests))
    except (KeyError, TypeError):
        return False


def grade_key(student: str, assignment: str, notebook: str, grade_id: str) -> tuple[str, ...]:
    """(student, assignment, grade_id) for a notebook named as its assignment; (student, assignment, notebook,
    grade_id) for one of an nbgrader-layout assignment (grade ids are unique only within a notebook)."""
    return (student, assignment, grade_id) if notebook == assignment else (student, assignment, notebook, grade_id)


def gradebook_scores(gb) -> dict[tuple[str, ...], float | None]:
    """:func:`grade_key` -> auto score, every grade in the gradebook."""
    from nbgrader.api import Grade

    return {grade_key(g.student.id, g.assignment.name, g.notebook.name, g.name): g.auto_score
            for g in gb.db.query(Grade).all()}
