"""The words a student reads for a test's outcome, the same on the feedback page and in ``validate``.

Four words for what the answer did: ``passed``, ``wrong`` (a check found a wrong result, visible or
hidden), ``error in your code`` (the student's own code raised), ``not answered`` (the stub still
raises NotImplementedError, or the answer was left as released); and, beyond the answer, ``partly
right``, ``time limit``, ``could not finish``, ``not run``, ``no notebook received`` and ``graded by
hand``. The grader's statuses (passed, failed, error, ...) and the verdicts stay as they are: this module
only names them for the student.
"""
from __future__ import annotations

from ..engine.verdict.statuses import LEFT_AS_RELEASED

__all__ = ["PASSED", "WRONG", "OWN_ERROR", "NOT_ANSWERED", "NOT_IN_NOTEBOOK", "NOT_ANSWERED_REASON", "outcome_word"]

PASSED, WRONG, OWN_ERROR, NOT_ANSWERED = "passed", "wrong", "error in your code", "not answered"
NOT_IN_NOTEBOOK = "not in your notebook"  # every test of a notebook handed in without the assignment's cells
NOT_ANSWERED_REASON = "Not answered yet: the code still raises NotImplementedError."  # the feedback page's words
OTHER = {"timeout": "time limit", "crashed": "could not finish", "not run": "not run", "missing": "no notebook received",
         "manual": "graded by hand"}


def outcome_word(status: str, reason: str, points: float = 0.0) -> str:
    """The student's word for a test with this grader ``status`` and ``reason`` (its trusted sentence)."""
    if status == "passed":
        return PASSED
    if "NotImplementedError" in reason and reason.startswith(("Not answered", "The test raised NotImplementedError")) \
            or reason == LEFT_AS_RELEASED:
        return NOT_ANSWERED
    if status in OTHER:
        return OTHER[status]
    if points > 0:
        return "partly right"
    if status == "error" and reason.startswith(("Your code raised", "The test raised")) \
            and not reason.startswith("The test raised AssertionError"):
        return OWN_ERROR
    return WRONG
