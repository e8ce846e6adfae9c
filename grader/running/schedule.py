"""In which order a batch runs its jobs: trusted reference runs first, then the longest submissions.

A submission can only be graded once its assignment's reference values exist, but it need not
wait for the other assignments' reference runs: each assignment's submissions become ready as
soon as its own reference is done (or at once, when the cached one is up to date). Among ready
submissions the most expensive go first (longest-processing-time-first), so the batch does not end
with one worker grading a long notebook while the others sit idle. A submission is expected to
cost about what its reference run took.

    queue = GradingQueue(stale=["02_autograd"], submissions=[("ann", "01_tensors"), ...],
                         seconds={"01_tensors": 4.8})
    job = queue.next()            # ReferenceRun("reference", "02_autograd"), then
                                  # SubmissionRun("grade", student, assignment)
    queue.reference_done("02_autograd", seconds=6.2)   # or reference_failed(...)
"""
from __future__ import annotations

import heapq
from typing import NamedTuple

__all__ = ["GradingQueue", "ReferenceRun", "SubmissionRun", "reference_run", "submission_run"]


class ReferenceRun(NamedTuple):
    """The trusted reference run of an assignment; equal to the tuple ``("reference", assignment)``."""
    kind: str
    assignment: str


class SubmissionRun(NamedTuple):
    """The grading of one student's submission; equal to the tuple ``("grade", student, assignment)``."""
    kind: str
    student: str
    assignment: str


def reference_run(assignment: str) -> ReferenceRun:
    return ReferenceRun("reference", assignment)


def submission_run(student: str, assignment: str) -> SubmissionRun:
    return SubmissionRun("grade", student, assignment)


class GradingQueue:
    """The jobs of one batch, handed out one at a time in the order they should start."""

    def __init__(self, stale: list[str], submissions: list[tuple[str, str]], seconds: dict[str, float]):
        """``stale``: assignments whose reference must run first, in that order; ``submissions``:
        (student, assignment) pairs to grade; ``seconds``: known cost of an assignment's submission."""
        self._references = list(stale)
        self._waiting: dict[str, list[tuple[int, str]]] = {}
        self._ready: list[tuple[float, int, str, str]] = []  # heap of (-seconds, arrival, student, assignment)
        blocked = set(stale)
        for order, (student, assignment) in enumerate(submissions):
            if assignment in blocked:
                self._waiting.setdefault(assignment, []).append((order, student))
            else:
                heapq.heappush(self._ready, (-seconds.get(assignment, 0.0), order, student, assignment))

    def __bool__(self) -> bool:
        """True while some job can still start now."""
        return bool(self._references or self._ready)

    def next(self) -> ReferenceRun | SubmissionRun | None:
        """The next job to start: a :class:`ReferenceRun` or a :class:`SubmissionRun`;
        None when nothing can start until a running reference finishes."""
        if self._references:
            return reference_run(self._references.pop(0))
        if self._ready:
            _, _, student, assignment = heapq.heappop(self._ready)
            return submission_run(student, assignment)
        return None

    def reference_done(self, assignment: str, seconds: float) -> None:
        """The assignment's submissions are ready; each is expected to take about ``seconds``."""
        for order, student in self._waiting.pop(assignment, []):
            heapq.heappush(self._ready, (-seconds, order, student, assignment))

    def reference_failed(self, assignment: str) -> list[str]:
        """Drop the assignment's submissions (they stay ungraded); returns their students."""
        return [student for _, student in self._waiting.pop(assignment, [])]
