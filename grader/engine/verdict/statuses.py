"""The words a graded test's verdict is told in: its statuses and the fixed reasons that the table, the
export and the feedback recognise. Imports nothing, so that processes which only read results (the grade
table, the export) need not import the engine's comparisons, nor torch with them."""
from __future__ import annotations

__all__ = ["STATUSES", "AWAITING", "UNDER_REVIEW", "LEFT_AS_RELEASED"]

STATUSES = ("passed", "failed", "error", "timeout", "crashed", "not run", "missing", "manual")
AWAITING = "awaiting manual grading"  # the one wording the table, the export and the feedback use
UNDER_REVIEW = "under review"  # a test flagged for what the grader read in its answer (points kept until decided)
LEFT_AS_RELEASED = "You left this answer as released: 0 points, with nothing to grade by hand."
