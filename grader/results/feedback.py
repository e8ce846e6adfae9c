"""Feedback: one HTML page per student and notebook, through nbgrader's own ``generate_feedback``.

The autograded notebook keeps the hidden tests (instructors see them in formgrader). Before it
becomes feedback, :class:`HideHiddenTests` removes every hidden test region and replaces each graded
test cell's outputs (tracebacks would quote hidden lines) by the verdict, its one-sentence reason and
the description of every check it did not pass (the reference run's words for each failed key). A
summary at the top names each test cell's exercise (the heading of its exercise in the instructor's
notebook), its points and its status. What was written for the instructor (why an upload was
refused, whom to ask for it again) is not shown: a test without a readable submission says, to the
student, to submit again.

Every output was made by a kernel running the student's code, so a student can display
``<script>``, an ``<img onerror=...>``, an image whose ``width`` metadata breaks out of its tag, SVG
with a script, LaTeX with a ``javascript:`` link or a JavaScript output, which would run in the
browser of whoever opens the page. :class:`SanitizeStudentHTML` rebuilds every output from
:mod:`grader.engine.notebook.allowlist` (known MIME types, cleaned HTML, numeric image sizes, LaTeX as text; the
rest dropped), also for autograded notebooks that stock nbgrader wrote, and cleans every markdown
or raw cell that is not word for word the instructor's (instructor text is left as written: it may
use HTML that a student may not, such as images). Both preprocessors are listed by
:func:`feedback_preprocessors`, which ``nbgrader_config.py`` uses and :func:`feedback` imposes,
whatever an older config file says; so is the page's exporter,
:class:`grader.results.offline_page.OfflineFeedbackPage`: formulas as MathML, no MathJax from a CDN.
"""
from __future__ import annotations

import re
from dataclasses import replace
from html import escape
from pathlib import Path

import nbformat
from nbconvert.preprocessors import Preprocessor
from nbconvert.preprocessors.sanitize import SanitizeHTML
from nbformat.v4 import new_markdown_cell, new_output
from traitlets import Bool

from ..authoring.coursedir import CourseDir
from ..authoring.invocation import command
from ..engine.notebook.allowlist import clean_html, markdown_cell, safe_output
from ..engine.notebook.cells import HIDDEN_BEGIN, cell_points, exercise_titles, is_manual, is_test, nbgrader_meta, strip_hidden
from ..engine.verdict.result import Outcome, TestResult, verdict_line
from ..engine.verdict.statuses import AWAITING
from ..errors import GraderError
from .foreign import STUDENT_NOTE, foreign_notebooks
from .offline_page import OfflineFeedbackPage
from .report_data import Check, hidden_checks
from .vocabulary import NOT_IN_NOTEBOOK, outcome_word

__all__ = ["HideHiddenTests", "SanitizeStudentHTML", "MarkAwaitingGrades", "FitPage", "feedback_preprocessors", "feedback",
           "STUDENT_MISSING", "student_text"]

STUDENT_MISSING = ("No notebook of yours could be read for this assignment, so nothing in it was graded: download "
                   "your notebook from JupyterLab (File > Download) and submit it again.")


class HideHiddenTests(Preprocessor):
    """Hide hidden tests and their tracebacks; show each test's verdict instead."""

    enabled = Bool(True)  # nbconvert skips preprocessors that are not enabled

    def preprocess(self, nb, resources):
        verdicts = _verdicts(resources)
        source, checks = _source(resources), _checks(resources)
        foreign = _foreign(resources)  # none of the assignment's cells in it: said once, not per test
        for cell in nb.cells:
            if HIDDEN_BEGIN in cell.get("source", ""):
                cell.source = strip_hidden(cell.source)
            if is_test(cell):
                test = verdicts.get(nbgrader_meta(cell).get("grade_id"))
                text = ((f"{NOT_IN_NOTEBOOK.upper()} (0/{test.max_points:g}): see the note at the top of this "
                         "page.\n") if foreign else student_text(test, checks.get(test.grade_id, []))) if test \
                    else "(no verdict recorded for this test)\n"
                cell.outputs = [new_output("stream", name="stdout", text=text)]
        if verdicts:
            titles = exercise_titles(source) if source is not None else {}
            nb.cells.insert(0, new_markdown_cell(_summary(list(verdicts.values()), titles, foreign,
                                                          _late_penalty(resources))))
        return nb, resources


def student_text(test: TestResult, checks: list[Check]) -> str:
    """A graded test cell's output on the student's page: its verdict line, in words for the student,
    then each check it did not pass as the reference run describes it.

    test: a marker's test; checks: its reference keys. A missing submission's reason was written for the
    instructor: the student reads :data:`STUDENT_MISSING` instead."""
    shown = replace(test, reason=STUDENT_MISSING) if test.status == "missing" else test
    text = verdict_line(shown)
    if test.status != "manual":  # the verdict in the student's words (passed, wrong, not answered, ...)
        word = outcome_word(test.status, test.reason, test.points)
        text = word.upper() + text[text.index(" ("):]
    if test.status == "passed":
        return text
    described = {c.key: (f"{c.what} ({c.key!r})" if c.what.strip() else repr(c.key)) for c in checks}
    unchecked = set(test.unchecked_keys or [])  # the test stopped before them: not a wrong answer
    keys = test.failed_keys or []
    failed = [described.get(key, repr(key)) for key in keys if key not in unchecked]
    skipped = [described.get(key, repr(key)) for key in keys if key in unchecked]
    return (text + "".join(f"  - not passed: {label}\n" for label in failed)
            + "".join(f"  - not checked (the test stopped before it): {label}\n" for label in skipped))


def _foreign(resources) -> bool:
    """Whether this page's notebook, as handed in, holds none of its assignment's cells."""
    info = resources.get("nbgrader", {})
    assignment = info.get("assignment", "")
    return bool(foreign_notebooks(CourseDir(_course_root(resources)), info.get("student", ""), assignment,
                                  [info.get("notebook") or assignment]))


def _late_penalty(resources) -> float:
    """The late penalty of this page's notebook in nbgrader's gradebook (what nbgrader's own header subtracts)."""
    from nbgrader.api import Gradebook, MissingEntry

    info = resources.get("nbgrader", {})
    try:
        with Gradebook(info["db_url"]) as gb:
            found = gb.find_submission_notebook(info.get("notebook") or info["assignment"], info["assignment"],
                                                info["student"])
            return float(found.late_submission_penalty or 0.0)
    except (KeyError, MissingEntry):
        return 0.0


def _summary(tests: list[TestResult], titles: dict[str, str], foreign: bool = False, penalty: float = 0.0) -> str:
    """The page's first cell: one row per graded test cell (exercise, points, status), as HTML."""
    def title(gid: str) -> str:
        return re.sub(r"`([^`]+)`", r"<code>\1</code>", escape(titles.get(gid) or gid))

    rows = "".join(f"<tr><td>{title(t.grade_id)}</td><td><code>{escape(t.grade_id)}</code></td>"
                   f"<td>{t.points:g}/{t.max_points:g}</td>"
                   f"<td>{escape(NOT_IN_NOTEBOOK if foreign else outcome_word(t.status, t.reason, t.points))}</td></tr>"
                   for t in tests)
    earned, top = sum(t.points for t in tests), sum(t.max_points for t in tests)
    late = f" ({earned:g} less {penalty:g} for the late submission)" if penalty else ""  # one total: nbgrader's
    total = (f"<tr><td><strong>Total</strong></td><td></td><td><strong>{round(earned - penalty, 6):g}/"
             f"{top:g}</strong>{late}</td><td></td></tr>")
    missing = f"<p>{escape(STUDENT_MISSING)}</p>" if all(t.status == "missing" for t in tests) else \
        f"<p><strong>{escape(STUDENT_NOTE)}</strong></p>" if foreign else ""
    return ("<h2>Summary</h2>" + missing + "<table><thead><tr><th>Exercise</th><th>Test</th><th>Points</th>"
            "<th>Status</th></tr></thead><tbody>" + rows + total + "</tbody></table>")


class SanitizeStudentHTML(SanitizeHTML):
    """Every output rebuilt from the allowlist; every text cell the instructor did not write cleaned.

    Markdown is rendered before it is cleaned: a link ``[x](javascript:...)`` is plain text to an
    HTML cleaner, and only becomes a link (which the cleaner then removes) once rendered.
    """

    enabled = Bool(True)

    def preprocess(self, nb, resources):
        self._trusted = _instructor_text(resources)
        return super().preprocess(nb, resources)

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type in ("markdown", "raw") and cell.source in self._trusted:
            return cell, resources
        cell.pop("attachments", None)  # a student's images would become data: URIs
        if cell.cell_type == "markdown":
            cell.source = self._markdown(cell.source)
            return cell, resources
        if cell.cell_type == "code" and type(cell.get("execution_count")) is not int:
            cell.execution_count = None  # the page prints it as it is
        return super().preprocess_cell(cell, resources, index)

    def sanitize_code_outputs(self, outputs):
        return [kept for kept in map(safe_output, outputs) if kept is not None]

    def sanitize_html_tags(self, html_str):
        return clean_html(html_str)

    def _markdown(self, text: str) -> str:
        return markdown_cell(text)  # the page's template renders it again: it must come out unchanged


class MarkAwaitingGrades(Preprocessor):
    """After nbgrader's GetGrades: each hand-graded answer the instructor has not scored yet says
    "awaiting manual grading" instead of a score (nbgrader's page would show 0 for it), and a note
    at the top says how many of the notebook's points await. Scored answers keep nbgrader's score."""

    enabled = Bool(True)

    def preprocess(self, nb, resources):
        from nbgrader.api import Gradebook, MissingEntry

        info = resources.get("nbgrader", {})
        waiting = 0.0
        if not info.get("db_url") or not any(is_manual(cell) for cell in nb.cells):
            return nb, resources
        with Gradebook(info["db_url"]) as gb:
            for cell in nb.cells:
                if not is_manual(cell):
                    continue
                try:
                    grade = gb.find_grade(nbgrader_meta(cell).get("grade_id"), info["notebook"],
                                          info["assignment"], info["student"])
                except MissingEntry:
                    continue
                if grade.manual_score is None and grade.auto_score is None:
                    waiting += cell_points(cell)
                    _mark_awaiting(cell)
        if waiting:
            nb.cells.insert(0, nbformat.v4.new_markdown_cell(
                f"**{waiting:g} point(s) of this notebook are {AWAITING}**: the score below counts "
                "only what is graded so far; it changes once your instructor has graded your written answers."))
        return nb, resources


def _mark_awaiting(cell) -> None:
    """The cell shows the awaiting line, and nbgrader's page no longer prints a score of 0 for it."""
    line = f"{AWAITING.capitalize()} ({cell_points(cell):g} points)."
    cell.metadata.nbgrader["grade"] = False  # the page's template prints "Score" only for graded cells
    if cell.cell_type == "code":
        cell.outputs = list(cell.get("outputs", [])) + [new_output("stream", name="stdout", text=line + "\n")]
    else:
        cell.source = f"{cell.source}\n\n<p><strong>{line}</strong></p>"


# The page fits any window: a verdict or printed line wraps instead of being cut at the box's edge, a figure
# shrinks to the page's width (keeping its proportions), a wide table scrolls inside its cell.
FIT_CSS = """
div.output_area pre, div.output_subarea pre, div.output_text pre, div.text_cell_render pre {
  white-space: pre-wrap !important; overflow-wrap: anywhere !important; word-break: break-word; }
div.output_area, div.output_subarea, div.inner_cell, div.text_cell_render { min-width: 0; max-width: 100%; }
div.output_area img, div.output_subarea img, div.text_cell_render img {
  max-width: 100% !important; height: auto !important; }
div.output_subarea table, div.text_cell_render table { display: block; max-width: 100%; overflow-x: auto; }
div#notebook-container { max-width: 100%; box-sizing: border-box; }
"""


class FitPage(Preprocessor):
    """Adds :data:`FIT_CSS` to the page's inlined styles (after nbconvert's own, from CSSHTMLHeaderPreprocessor)."""

    enabled = Bool(True)

    def preprocess(self, nb, resources):
        resources.setdefault("inlining", {}).setdefault("css", []).append(FIT_CSS)
        return nb, resources


def feedback_preprocessors() -> list:
    """What nbgrader's generate_feedback runs, in order: hide hidden tests, sanitize, grades, the
    answers awaiting manual grading, CSS."""
    from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
    from nbgrader.preprocessors import GetGrades

    return [HideHiddenTests, SanitizeStudentHTML, GetGrades, MarkAwaitingGrades, CSSHTMLHeaderPreprocessor, FitPage]


def _course_root(resources) -> Path:
    """The course directory: where nbgrader's gradebook lies."""
    db_url = resources.get("nbgrader", {}).get("db_url", "")
    return Path(db_url[len("sqlite:///"):]).parent if db_url.startswith("sqlite:///") else Path.cwd()


def _source(resources):
    """The instructor's source notebook of this feedback page, or None if it cannot be read."""
    info = resources.get("nbgrader", {})
    path = CourseDir(_course_root(resources)).source(info.get("assignment", "")) / f"{info.get('notebook', '')}.ipynb"
    try:
        return nbformat.read(str(path), as_version=4)
    except Exception:  # noqa: BLE001 - unknown source: no titles, and every cell is the student's
        return None


def _instructor_text(resources) -> set[str]:
    """The markdown and raw cells of the instructor's source notebook (none if it cannot be read)."""
    source = _source(resources)
    return set() if source is None else {cell.source for cell in source.cells if cell.cell_type in ("markdown", "raw")}


def _checks(resources) -> dict[str, list[Check]]:
    """grade_id -> its reference keys and their descriptions ({} without reference values)."""
    info = resources.get("nbgrader", {})
    return hidden_checks(CourseDir(_course_root(resources)), info.get("assignment", ""), info.get("notebook") or None)


def _verdicts(resources) -> dict[str, TestResult]:
    """grade_id -> verdict, from the autograde marker next to the autograded notebook."""
    info = resources.get("nbgrader", {})
    marker = CourseDir(_course_root(resources)).read_marker(info.get("student", ""), info.get("assignment", "")) or {}
    try:  # an assignment of several notebooks: this notebook's tests only (grade ids are unique per notebook)
        return {t.grade_id: t for t in Outcome.from_json(marker).tests
                if (t.notebook or info.get("assignment")) == info.get("notebook", info.get("assignment"))}
    except (KeyError, TypeError, AttributeError):
        return {}


def feedback(root: Path, assignments: list[str] | None = None, students: list[str] | None = None) -> list[Path]:
    """Generate feedback HTML for the graded submissions; return the files written."""
    from traitlets.config import Config

    from ..authoring.config import nbgrader_api
    from .gradebook import outcomes, sync_semester

    root = root.resolve()
    sync_semester(CourseDir(root))  # penalties from the semester file as it is now: nbgrader's page shows them
    imposed = Config()
    imposed.GenerateFeedback.preprocessors = feedback_preprocessors()  # even if nbgrader_config.py is older
    imposed.GenerateFeedback.exporter_class = OfflineFeedbackPage  # maths as MathML, no MathJax from a CDN
    api = nbgrader_api(root, imposed)
    done = outcomes(CourseDir(root), assignments, students)
    if not done:
        raise GraderError(f"nothing graded yet in {root}; run `{command('autograde', root)}` first")
    written = []
    pairs = sorted({(o.assignment, o.student if students else None) for o in done}, key=str)
    for assignment, student in pairs:  # one nbgrader run per assignment unless students were chosen
        result = api.generate_feedback(assignment, student, force=True)
        if not result.get("success"):
            raise GraderError(f"nbgrader could not write feedback for {assignment} ({student or 'all students'}):\n"
                              + ((result.get("error") or "") + (result.get("log") or ""))[-2000:])
    for outcome in done:
        written += sorted(CourseDir(root).feedback(outcome.student, outcome.assignment).glob("*.html"))
    return written
