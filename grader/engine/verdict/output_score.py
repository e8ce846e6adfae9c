"""An assert-only test cell's score read from its output, as nbgrader reads it.

nbgrader scores a grade cell with :func:`nbgrader.utils.determine_grade`: 0 for an error; else, when the cell's
result (``Out``, an ``execute_result``) is a number between 0 and the cell's points, that number (partial credit,
``score`` as a test's last line); a negative number, text, or no result: full points; above the points it raises,
and ``nbgrader autograde`` gives up on the whole submission. course-grader calls that function on the cell with
the outputs its kernel run kept, for a test that recorded nothing
(:func:`grader.engine.notebook.cells.asserts_only`) and ran to its end. Two deliberate differences (README, THREAT_MODEL.md):

* stderr output (a library's warning) is left out: nbgrader scores it 0, course-grader keeps the points;
* a result above the cell's points scores the cell's points and is named for the instructor (:func:`too_high`),
  instead of stopping the submission's grading.

The number is the student's kernel's: the points still rest on the kernel's word (the test's ``kernel_word``).
"""
from __future__ import annotations

import logging

from nbformat.v4 import new_code_cell
from nbgrader.utils import determine_grade

__all__ = ["output_points", "result_text", "too_high"]

_QUIET = logging.getLogger("course-grader.output-score")  # nbgrader's warnings for odd results: not shown
_QUIET.addHandler(logging.NullHandler())
_QUIET.propagate = False


def _as_graded(points: float, outputs: list):
    """A grade cell worth ``points`` with ``outputs`` less stderr streams (kept points, see the module docstring)."""
    graded = new_code_cell(metadata={"nbgrader": {"grade": True, "solution": False, "points": points}})
    graded.outputs = [o for o in outputs if not (o.get("output_type") == "stream" and o.get("name") == "stderr")]
    return graded


def result_text(outputs: list) -> str:
    """The text of the cell's result (``Out``), or "" when it has none."""
    found = next((o for o in outputs if o.get("output_type") == "execute_result"), None)
    text = found.get("data", {}).get("text/plain", "") if found else ""
    return "".join(text) if isinstance(text, list) else str(text)


def too_high(points: float, outputs: list) -> bool:
    """True when the result is a number above ``points`` (nbgrader's determine_grade raises)."""
    try:
        determine_grade(_as_graded(points, outputs), _QUIET)
    except ValueError:
        return True
    return False


def output_points(points: float, outputs: list) -> float:
    """The points nbgrader gives a grade cell worth ``points`` for ``outputs`` (its run's outputs, in order),
    between 0 and ``points``; a result above them scores ``points`` (:func:`too_high` says so)."""
    try:
        given, _ = determine_grade(_as_graded(points, outputs), _QUIET)
    except (ValueError, KeyError):  # above the points; a result without text (nbgrader stops on both)
        return float(points)
    return float(given)
