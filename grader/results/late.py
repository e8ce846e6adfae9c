"""Late penalties from the semester file (:mod:`grader.authoring.semester`): how late a submission is and what it
costs, computed without touching the gradebook.

:func:`grader.results.gradebook.apply_semester` writes them into nbgrader's gradebook (due dates, extensions,
penalties), :func:`grader.results.gradebook.sync_semester` with a commit; the grade table and the report read them.
"""
from __future__ import annotations

from datetime import datetime, timezone

from ..authoring.coursedir import CourseDir
from ..authoring.semester import Semester, late_penalty, load_semester, parse_stamp

__all__ = ["as_utc", "lateness", "semester_of", "unknown_students"]


def semester_of(course: CourseDir) -> Semester:
    """The course's semester file, checked against its assignments (SemesterError when wrong)."""
    return load_semester(course.root, course.assignments() or None)


def as_utc(when: datetime | None) -> datetime | None:
    """``when`` in UTC; a naive time (as nbgrader stores it) is taken to be UTC already."""
    return None if when is None else (when.replace(tzinfo=timezone.utc) if when.tzinfo is None
                                      else when.astimezone(timezone.utc))


def lateness(semester: Semester, student: str, assignment: str, stamp: datetime | str | None,
             due: datetime | None, raw: float, max_score: float) -> tuple[float, float]:
    """(seconds late, penalty in points) of one submission; ``due``: the assignment's due date in
    the gradebook (the file's, when it names one, wins; the student's extension wins over both)."""
    own = semester.due_for(student, assignment, as_utc(due))
    when = parse_stamp(stamp) if isinstance(stamp, str) else as_utc(stamp)
    if own is None or when is None:
        return 0.0, 0.0
    seconds = max(0.0, (when - own).total_seconds())
    return seconds, late_penalty(semester, raw, max_score, seconds)


def unknown_students(semester: Semester, known: set[str]) -> list[str]:
    """The students the semester's extensions name that are not in ``known``, sorted (a typo gives no extension)."""
    return sorted({student for student, _ in semester.extensions} - known)
