"""Feedback: one HTML page per student and notebook, through nbgrader's own ``generate_feedback``.

The autograded notebook keeps the hidden tests (instructors see them in formgrader). Before it
becomes feedback, :class:`HideHiddenTests` (registered in ``nbgrader_config.py``) removes every
hidden test region and replaces each graded test cell's outputs (tracebacks would quote hidden
lines) by the verdict and its one-sentence reason.
"""
from __future__ import annotations

from pathlib import Path

from nbconvert.preprocessors import Preprocessor
from nbformat.v4 import new_output
from traitlets import Bool

from .assembly import GraderError
from .course import HIDDEN_BEGIN, is_test, nbgrader_meta, strip_hidden
from .execute import TestResult, verdict_line
from .invocation import command
from .coursedir import CourseDir

__all__ = ["HideHiddenTests", "feedback"]


class HideHiddenTests(Preprocessor):
    """Hide hidden tests and their tracebacks; show each test's verdict instead."""

    enabled = Bool(True)  # nbconvert skips preprocessors that are not enabled

    def preprocess(self, nb, resources):
        verdicts = _verdicts(resources)
        for cell in nb.cells:
            if HIDDEN_BEGIN in cell.get("source", ""):
                cell.source = strip_hidden(cell.source)
            if is_test(cell):
                test = verdicts.get(nbgrader_meta(cell).get("grade_id"))
                text = verdict_line(TestResult(**test)) if test else "(no verdict recorded for this test)\n"
                cell.outputs = [new_output("stream", name="stdout", text=text)]
        return nb, resources


def _verdicts(resources) -> dict[str, dict]:
    """grade_id -> verdict, from the autograde marker next to the autograded notebook."""
    info = resources.get("nbgrader", {})
    db_url = info.get("db_url", "")
    root = Path(db_url[len("sqlite:///"):]).parent if db_url.startswith("sqlite:///") else Path.cwd()
    marker = CourseDir(root).read_marker(info.get("student", ""), info.get("assignment", "")) or {}
    try:
        return {t["grade_id"]: t for t in marker["tests"]}
    except (KeyError, TypeError):
        return {}


def feedback(root: Path, assignments: list[str] | None = None, students: list[str] | None = None) -> list[Path]:
    """Generate feedback HTML for the graded submissions; return the files written."""
    from .batch import outcomes
    from .config import nbgrader_api

    root = root.resolve()
    api = nbgrader_api(root)
    done = outcomes(root, assignments, students)
    if not done:
        raise GraderError(f"nothing graded yet in {root}; run `{command('autograde')}` first")
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
