"""The grader's one exception type, shared by every stage (it imports nothing of the grader).

A :class:`GraderError` is a problem the instructor can fix; its message says what and how. The stages
subclass it for the cases they raise (``ReferenceFailed``, ``NotGraded``, ``WorkerLost``,
``SemesterError``); the command line prints it without a traceback.
"""
from __future__ import annotations

__all__ = ["GraderError"]


class GraderError(Exception):
    """A problem the instructor has to fix; the message says what and how."""
