"""How a graded test cell reports what it computed.

    ### BEGIN HIDDEN TESTS
    from grader.record import record
    record("distances", pairwise_distances(X, Y), "distances between two clouds of points", atol=1e-6)
    ### END HIDDEN TESTS

Outside grading this does nothing but return ``value``. While the grader executes a
notebook (it sets ``COURSE_GRADER_RECORD=1`` in the kernel's environment), or stock
``nbgrader autograde`` does (``NBGRADER_EXECUTION=autograde``; :mod:`grader.stock` compares), it
publishes the value as a display output of MIME type :data:`MIME_TYPE`. The grader compares each value with
the one the same test cell recorded when it ran the instructor's solution, in its own process,
using the tolerances of *that* trusted run: what a student's kernel says about tolerances, or
about having passed, is never used. See ``grader/THREAT_MODEL.md``.
"""
from __future__ import annotations

import os
from typing import TypeVar

from d2lite import unattended

from .values import encode

MIME_TYPE = "application/vnd.course-grader.record+json"
ENV_FLAG = unattended.COURSE_GRADER_RECORD

T = TypeVar("T")


def record(key: str, value: T, what: str = "", *, rtol: float = 0.0, atol: float = 0.0,
           points: float | None = None) -> T:
    """Report ``value`` under ``key`` for grading, and return it unchanged.

    key: a name unique within the test cell.
    value: a tensor, number, string, shape, dtype, device, or a list/tuple/dict of them. It is
        encoded (copied) at once: changing the object afterwards changes nothing.
    what: the property this value checks, in words a student understands ("patches of a float64
        batch"); a failed check is reported with the words the *reference* run recorded. Never
        name hidden inputs or expected values.
    rtol, atol: how far a student's value may be from the solution's: |s - r| <= atol + rtol*|r|
        elementwise for floating tensors and floats; 0 means exact. Shapes, dtypes and types
        always have to match exactly.
    points: this key's share of the test cell's points (partial credit, :mod:`grader.engine.notebook.shares`):
        give it to every record() call of the cell or to none; the shares add up to the cell's
        points. None: the cell is all or nothing. As with tolerances, only the share the
        reference run recorded counts.
    """
    if not isinstance(key, str) or not key:
        raise ValueError("record() needs a non-empty string key")
    if not isinstance(what, str):
        raise ValueError("record() takes the description `what` as a string")
    if rtol < 0 or atol < 0:
        raise ValueError("record() tolerances must be >= 0")
    if points is not None and (type(points) not in (int, float) or not points >= 0):
        raise ValueError(f"record() takes points= as a number >= 0 (this key's share of the cell's points), "
                         f"not {points!r}")
    if os.environ.get(ENV_FLAG) == "1" or os.environ.get(unattended.NBGRADER_EXECUTION) == "autograde":
        payload = {"key": key, "value": encode(value), "what": what, "rtol": float(rtol), "atol": float(atol)}
        if points is not None:
            payload["points"] = float(points)
        from IPython.display import display

        display({MIME_TYPE: payload}, raw=True)
    return value


def answer_rules(*, avoid: tuple[str, ...] = (), no_modules: tuple[str, ...] = (), no_loops: bool = False,
                 no_host_sync_in_loops: bool = False) -> None:
    """Declare what the grader checks in the source of this exercise's answer; does nothing here.

    The grader reads this call from the instructor's test cell and judges the answer's text in its
    own process (:mod:`grader.engine.reading.rules` says what each rule means); running it in a kernel
    changes nothing, so no student code can turn a rule off.
    avoid: words no attribute or imported name of the answer may contain ("cdist");
    no_modules: modules the answer may not use; no_loops: no Python loop, comprehension or
    recursion; no_host_sync_in_loops: no ``.item()``/``float()``/``print()``… inside a loop.
    """
