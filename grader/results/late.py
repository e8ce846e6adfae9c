"""Late penalties in nbgrader's gradebook, from the semester file (:mod:`grader.authoring.semester`).

:func:`apply_semester` writes, with no kernel run, what nbgrader's own tools read:
``Assignment.duedate`` (the file's due date, naive UTC as nbgrader stores it),
``SubmittedAssignment.extension`` (the student's own due date minus the assignment's) and each
``SubmittedNotebook.late_submission_penalty`` (None when there is none, as nbgrader's
``AssignLatePenalties`` leaves it). nbgrader's ``score`` stays the raw score; its export, formgrader
and :mod:`grader.results.export` subtract the penalty. Run by ``release``, after each ``autograde``
and before each ``export``, so a changed semester file changes penalties and regrades nothing.
"""
from __future__ import annotations

import sys
from datetime import datetime, timezone

from ..authoring.coursedir import CourseDir
from ..authoring.semester import SEMESTER_FILE, Semester, late_penalty, load_semester, parse_stamp

__all__ = ["apply_semester", "lateness", "semester_of", "sync", "unknown_students"]


def semester_of(course: CourseDir) -> Semester:
    """The course's semester file, checked against its assignments (SemesterError when wrong)."""
    return load_semester(course.root, course.assignments() or None)


def _utc(when: datetime | None) -> datetime | None:
    return None if when is None else (when.replace(tzinfo=timezone.utc) if when.tzinfo is None
                                      else when.astimezone(timezone.utc))


def lateness(semester: Semester, student: str, assignment: str, stamp: datetime | str | None,
             due: datetime | None, raw: float, max_score: float) -> tuple[float, float]:
    """(seconds late, penalty in points) of one submission; ``due``: the assignment's due date in
    the gradebook (the file's, when it names one, wins; the student's extension wins over both)."""
    own = semester.due_for(student, assignment, _utc(due))
    when = parse_stamp(stamp) if isinstance(stamp, str) else _utc(stamp)
    if own is None or when is None:
        return 0.0, 0.0
    seconds = max(0.0, (when - own).total_seconds())
    return seconds, late_penalty(semester, raw, max_score, seconds)


def apply_semester(gb, semester: Semester) -> int:
    """Write due dates, extensions and penalties into the open nbgrader Gradebook ``gb`` (one commit);
    return how many submissions are penalised. Assignments not yet in the gradebook are skipped
    (``release`` adds them, then calls this again)."""
    penalised = 0
    for assignment in gb.assignments:
        if assignment.name in semester.due:
            assignment.duedate = semester.due[assignment.name].replace(tzinfo=None)
        due = _utc(assignment.duedate)
        for submission in assignment.submissions:
            student = submission.student.id
            own = semester.due_for(student, assignment.name, due)
            submission.extension = own - due if own and due and own != due else None
            total = 0.0
            for notebook in submission.notebooks:
                _, penalty = lateness(semester, student, assignment.name, submission.timestamp, due,
                                      notebook.score, notebook.max_score)
                notebook.late_submission_penalty = penalty or None
                total += penalty
            penalised += total > 0
    gb.db.commit()
    return penalised


def sync(course: CourseDir) -> Semester:
    """Load the semester file and write it into the course's gradebook; return it. Without a file the
    gradebook is left as it is (penalties that nbgrader's own autograde wrote stay); a file without
    a [late] table clears every penalty."""
    from nbgrader.api import Gradebook

    from ..authoring.config import load_config, nbgrader_api

    semester = semester_of(course)
    known = set(course.students())
    if course.gradebook.is_file() and (course.root / SEMESTER_FILE).is_file():
        api = nbgrader_api(course.root.resolve())  # also puts alembic on PATH, which Gradebook may run
        with Gradebook(api.coursedir.db_url, load_config(course.root.resolve()).CourseDirectory.course_id) as gb:
            apply_semester(gb, semester)
            known |= {student.id for student in gb.students}
    for student in unknown_students(semester, known):
        print(f"course-grader: warning: {SEMESTER_FILE} gives [extensions.{student}], but no student {student!r} "
              "has submitted or is in the gradebook: check the id (it must match the submission's folder name)",
              file=sys.stderr)
    return semester


def unknown_students(semester: Semester, known: set[str]) -> list[str]:
    """The students the semester's extensions name that are not in ``known``, sorted (a typo gives no extension)."""
    return sorted({student for student, _ in semester.extensions} - known)
