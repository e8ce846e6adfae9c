"""What a graded submission leaves behind, written by the main process only, in this order:
the autograded notebook and its timestamp, the gradebook rows (one commit), then the marker.

A batch killed at any moment therefore restarts cleanly: a submission without an up-to-date
marker is graded again, and writing its rows again gives the same gradebook.

This is the only module of the grader that changes a row of nbgrader's gradebook (and the only one that commits or
rolls back): grades, comments and review flags (:func:`save_result`, :func:`flag_reviews` for stock ``nbgrader
autograde``), due dates, extensions and late penalties (:func:`apply_semester`, :func:`sync_semester`;
:func:`penalties_applied` applies them for reading only). The assignment, notebook and cell rows are nbgrader's own
``generate_assignment``'s, run by :func:`grader.authoring.assembly.release` only.
"""
from __future__ import annotations

import os
import sys
import warnings
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

from ..authoring.coursedir import TIMESTAMP_FILE, CourseDir
from ..authoring.semester import SEMESTER_FILE, Semester
from ..engine.reading.rules import REVIEW_PREFIX
from ..engine.verdict.references import sha256_of_all
from ..engine.verdict.result import Outcome, TestResult
from .late import as_utc, lateness, semester_of, unknown_students

__all__ = ["save_result", "save_or_report", "outcomes", "apply_semester", "sync_semester",
           "penalties_applied", "flag_reviews"]


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def save_result(course: CourseDir, gb, student: str, assignment: str, result: Outcome, extra: list[str]) -> Outcome:
    """Write the autograded notebook, the gradebook rows (one commit), then the marker; return the outcome saved.

    result: what :func:`grader.running.jobs.run_grade_job` returns (or ``run_notebooks_job``: every notebook of
    the assignment, each test naming its ``notebook``), its student and assignment blank; extra: problems to
    list first."""
    from nbgrader.api import MissingEntry
    from sqlalchemy.exc import SAWarning

    warnings.filterwarnings("ignore", category=SAWarning)  # nbgrader's add_submission autoflush chatter

    target = course.autograded(student, assignment)
    target.mkdir(parents=True, exist_ok=True)
    course.marker(student, assignment).unlink(missing_ok=True)
    stamp = course.timestamp(student, assignment)
    for notebook, text in result.notebooks.items():
        (target / f"{notebook}.ipynb").write_text(text, encoding="utf-8")
    if course.notebooks(assignment) != [assignment]:  # nbgrader's layout: the assignment's files beside the graded
        _copy_files(course.source(assignment), target)  # notebooks, as nbgrader's autograde leaves them
    (target / TIMESTAMP_FILE).write_text(stamp, encoding="utf-8")
    problems = extra + result.problems
    gb.update_or_create_student(student)
    gb.update_or_create_submission(assignment, student, timestamp=stamp)
    _clear_review_comments(gb, {t.notebook or assignment for t in result.tests}, assignment, student)
    for test in result.tests:
        try:
            grade = gb.find_grade(test.grade_id, test.notebook or assignment, assignment, student)
        except MissingEntry:
            problems.append(f"{test.grade_id} is not in the gradebook; release {assignment} again")
            continue
        if test.status == "manual":  # as nbgrader's autograde: no automatic score, listed in
            grade.auto_score = None        # formgrader; a manual_score given there is kept
            grade.needs_manual_grade = True
        else:
            grade.auto_score = test.points
            grade.needs_manual_grade = bool(test.review) and grade.manual_score is None
        _review_comment(gb, test, assignment, student)
    gb.db.commit()
    references = course.reference_files(assignment)
    outcome = replace(result, student=student, assignment=assignment, score=sum(t.points for t in result.tests),
                      max_score=sum(t.max_points for t in result.tests), problems=problems, timestamp=stamp,
                      source_sha256=sha256_of_all(course.source_files(assignment)),
                      references_sha256=sha256_of_all(references) if all(p.is_file() for p in references) else "",
                      seconds=float(result.seconds), notebooks={})
    _write_atomic(course.marker(student, assignment), outcome.to_json())  # ASCII: any text
    return outcome


def _review_comment(gb, test: TestResult, assignment: str, student: str) -> None:
    """A test flagged for review (``test.review``, :func:`grader.engine.grade.reviewed`) keeps its automatic
    score with ``needs_manual_grade``, as nbgrader flags a cell for formgrader; the finding becomes the automatic
    comment of the exercise's answer cell (``review_cell``), which formgrader shows under that cell."""
    from nbgrader.api import MissingEntry

    if not test.review or not test.review_cell:
        return
    try:
        comment = gb.find_comment(test.review_cell, test.notebook or assignment, assignment, student)
    except MissingEntry:
        return
    comment.auto_comment = test.review


def _clear_review_comments(gb, notebooks: set[str], assignment: str, student: str) -> None:
    """Remove the review comments an earlier grading of this submission left (a regraded answer may have none)."""
    from nbgrader.api import MissingEntry

    for notebook in notebooks:
        try:
            submitted = gb.find_submission_notebook(notebook, assignment, student)
        except MissingEntry:
            continue
        for comment in submitted.comments:
            if (comment.auto_comment or "").startswith(REVIEW_PREFIX):
                comment.auto_comment = None


def _copy_files(source: Path, target: Path) -> None:
    """The trusted copies of the assignment's other files (images, data), so formgrader shows what the notebooks
    show (nbgrader's autograde copies the submission's; collect keeps only notebooks)."""
    import shutil

    from ..engine.notebook.cells import support_files_under

    for name in support_files_under(source):
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source / name, target / name)


def save_or_report(course: CourseDir, gb, student: str, assignment: str, result: Outcome, extra: list[str],
                   failed: Outcome) -> Outcome | None:
    """:func:`save_result`; when that fails, undo its gradebook changes and return an outcome that
    says so (zero points, not saved: the next run grades the submission again). None when saved.

    failed: a zero result for this assignment (every test an error): the tests of that outcome."""
    try:
        save_result(course, gb, student, assignment, result, extra)
        return None
    except Exception as error:  # noqa: BLE001 - one submission's failure must not stop the batch
        gb.db.rollback()
        why = f"its result could not be saved ({type(error).__name__}: {error}); run autograde again"
        return Outcome(student, assignment, 0.0, sum(t.max_points for t in failed.tests), failed.tests,
                       extra + [why])


def outcomes(course: CourseDir, names: list[str] | None = None, students: list[str] | None = None) -> list[Outcome]:
    """The recorded outcome of every graded submission (from the markers)."""
    found = []
    for student in course.graded_students():
        if students and student not in students:
            continue
        for assignment in names or course.graded_assignments(student):
            outcome = course.outcome(student, assignment)
            if outcome is not None:
                found.append(outcome)
    return found


# -- due dates, extensions, late penalties (the semester file, grader.authoring.semester) ----------------------

def apply_semester(gb, semester: Semester) -> int:
    """Write due dates, extensions and penalties into the open nbgrader Gradebook ``gb``, without a commit (the
    caller commits, or rolls back); return how many submissions are penalised. Assignments not yet in the
    gradebook are skipped (``release`` adds them, then syncs again).

    What nbgrader's own tools read, with no kernel run: ``Assignment.duedate`` (the file's due date, naive UTC as
    nbgrader stores it), ``SubmittedAssignment.extension`` (the student's own due date minus the assignment's) and
    each ``SubmittedNotebook.late_submission_penalty`` (None when there is none, as nbgrader's
    ``AssignLatePenalties`` leaves it). nbgrader's ``score`` stays the raw score; its export, formgrader and
    :mod:`grader.results.export` subtract the penalty."""
    penalised = 0
    for assignment in gb.assignments:
        if assignment.name in semester.due:
            assignment.duedate = semester.due[assignment.name].replace(tzinfo=None)
        due = as_utc(assignment.duedate)
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
    return penalised


@contextmanager
def _course_gradebook(course: CourseDir):
    """The course's nbgrader Gradebook, open."""
    from nbgrader.api import Gradebook

    from ..authoring.config import load_config, nbgrader_api

    root = course.root.resolve()
    api = nbgrader_api(root)  # also puts alembic on PATH, which Gradebook may run
    with Gradebook(api.coursedir.db_url, load_config(root).CourseDirectory.course_id) as gb:
        yield gb


def _warn_unknown_students(semester: Semester, known: set[str]) -> None:
    for student in unknown_students(semester, known):
        print(f"course-grader: warning: {SEMESTER_FILE} gives [extensions.{student}], but no student {student!r} "
              "has submitted or is in the gradebook: check the id (it must match the submission's folder name)",
              file=sys.stderr)


def sync_semester(course: CourseDir) -> Semester:
    """Load the semester file and write it into the course's gradebook (one commit); return it. Without a file the
    gradebook is left as it is (penalties that nbgrader's own autograde wrote stay); a file without a [late] table
    clears every penalty. Run by ``release``, after each ``autograde`` and before ``feedback``, so a changed
    semester file changes penalties and regrades nothing."""
    semester = semester_of(course)
    known = set(course.students())
    if course.gradebook.is_file() and (course.root / SEMESTER_FILE).is_file():
        with _course_gradebook(course) as gb:
            apply_semester(gb, semester)
            gb.db.commit()
            known |= {student.id for student in gb.students}
    _warn_unknown_students(semester, known)
    return semester


@contextmanager
def penalties_applied(course: CourseDir):
    """The course's gradebook, open, with the semester file as it is now applied (:func:`apply_semester`) but never
    committed: the rows read as :func:`sync_semester` would leave them, and are rolled back on leaving, so the file
    is unchanged (what ``export`` reads). The same warning as :func:`sync_semester` for unknown students."""
    semester = semester_of(course)
    known = set(course.students())
    with _course_gradebook(course) as gb:
        try:
            if (course.root / SEMESTER_FILE).is_file():
                apply_semester(gb, semester)
                gb.db.flush()
                gb.db.expire_all()  # read back from the open transaction, as a commit would make them read
                known |= {student.id for student in gb.students}
            _warn_unknown_students(semester, known)
            yield gb
        finally:
            gb.db.rollback()


# -- review flags of stock nbgrader autograde (grader.stock.FlagReviews) -------------------------------------

def flag_reviews(gb, where: tuple[str, str, str], reviews: dict[str, tuple[str, str]]) -> None:
    """After nbgrader's SaveAutoGrades, in the open Gradebook ``gb`` (one commit): each test of ``reviews``
    (test grade_id -> (its answer cell's grade_id or "", the review note)) keeps its automatic score and needs a
    manual grade; the note becomes the answer cell's automatic comment unless that holds a comment of nbgrader's
    own (as :func:`save_result` writes findings). ``where``: (notebook, assignment, student)."""
    from nbgrader.api import MissingEntry

    for grade_id, (exercise, note) in reviews.items():
        grade = gb.find_grade(grade_id, *where)
        grade.needs_manual_grade = grade.manual_score is None
        try:
            comment = gb.find_comment(exercise, *where) if exercise else None
        except MissingEntry:
            comment = None
        if comment is not None and (not comment.auto_comment or comment.auto_comment.startswith(REVIEW_PREFIX)):
            comment.auto_comment = note
    gb.db.commit()
