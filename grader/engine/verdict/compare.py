"""Decide, in the grader's own process, whether a student's recorded values match the reference.

A graded test passes when its cell ran without error AND every key the trusted reference run
recorded for that cell was recorded exactly once, with a value of exactly the same type (and for
tensors the same dtype, shape and device type) that is equal, or within the tolerance the
*reference* run gave. The student's kernel only supplies raw JSON; it is decoded here with
:func:`grader.values.decode` (no pickle) and compared with the plain functions below, so no
student object's ``__eq__`` or ``__bool__`` ever runs.

Reasons are written here, from trusted words only: the description the *reference* run gave each
key, what differs (type, dtype, shape, the number of items, values: never the student's shape, length,
counts, or how often a key was recorded), the name of a built-in exception, and
for a failed visible check its message as the released test cell writes it (the kernel's text
only chooses it: :mod:`grader.engine.notebook.failures`). Text that came from the student's kernel
(exception messages, printed output, dict keys, the contents of a malformed record) never goes
into a reason: after a hidden test has run, it could quote hidden code.
"""
from __future__ import annotations

import builtins
import math
import re
from typing import TYPE_CHECKING, Any

from ...values import decode, tensor_device

if TYPE_CHECKING:
    import torch

__all__ = ["Expected", "collect", "compare", "check_records", "failing_keys", "key_problems", "exception_name",
           "test_reason"]

Expected = dict  # key -> {"value": tree, "what": str, "rtol": float, "atol": float[, "points": share]}
NAMED_ITEMS = 16  # a reason names which item of a list differs (4 bits the kernel chooses) only up to this length
BUILTIN_EXCEPTIONS = frozenset(name for name, obj in vars(builtins).items()
                               if isinstance(obj, type) and issubclass(obj, BaseException))


def collect(payloads: list) -> tuple[dict[str, list[dict]], list[str]]:
    """Group raw record payloads by key. Returns (key -> payloads, malformed descriptions)."""
    by_key: dict[str, list[dict]] = {}
    bad: list[str] = []
    for payload in payloads:
        if (type(payload) is not dict or type(payload.get("key")) is not str
                or "value" not in payload):
            bad.append("a malformed record")
            continue
        by_key.setdefault(payload["key"], []).append(payload)
    return by_key, bad


def _label(key: str, ref: dict) -> str:
    what = ref.get("what")
    return f"{what} ({key!r})" if isinstance(what, str) and what.strip() else repr(key)


def _key_problem(key: str, ref: dict, got: list[dict]) -> str:
    """Why the payloads recorded for ``key`` do not match its reference ("" when they do)."""
    if not got:
        return f"the test did not record {_label(key, ref)} (it stopped before reaching it)"
    if len(got) > 1:
        return f"{_label(key, ref)} was recorded more than once instead of once"  # how often: the kernel's choice
    same, why = compare(got[0]["value"], ref["value"], float(ref.get("rtol", 0.0)), float(ref.get("atol", 0.0)))
    return "" if same else f"{_label(key, ref)}: {why}"


def check_records(expected: dict[str, dict], payloads: list) -> tuple[bool, str]:
    """(every expected key recorded once and matching?, the first reason it is not)."""
    by_key, _ = collect(payloads)
    for key, ref in expected.items():
        why = _key_problem(key, ref, by_key.get(key, []))
        if why:
            return False, why
    return True, ""


def failing_keys(expected: dict[str, dict], payloads: list) -> list[str]:
    """Every reference key (the instructor's names, in reference order) that was not recorded once
    with a matching value: what the class report counts per hidden check."""
    by_key, _ = collect(payloads)
    return [key for key, ref in expected.items() if _key_problem(key, ref, by_key.get(key, []))]


def key_problems(expected: dict[str, dict], payloads: list) -> tuple[dict[str, str], set[str]]:
    """(reference key -> why it does not match, "" when it does; the keys recorded at least once)."""
    by_key, _ = collect(payloads)
    return ({key: _key_problem(key, ref, by_key.get(key, [])) for key, ref in expected.items()},
            {key for key in expected if by_key.get(key)})


def exception_name(error: str) -> str:
    """The exception's class name when it is one of Python's built-in exceptions, else "an
    exception" (a student's kernel names its exceptions, so any other name could carry text)."""
    name = (error or "").split(":", 1)[0].strip()
    return name if name in BUILTIN_EXCEPTIONS else "an exception"


def test_reason(status: str, part: str, error: str, mismatch: str = "", *, own: bool | None = None,
                message: tuple[str, bool] = ("", False)) -> str:
    """One sentence for the student, from trusted words only (see the module docstring).

    status: "passed", "failed" (``mismatch`` says how), "error" (``part`` is "visible" or "hidden",
    ``error`` the kernel's "Name: message"), "timeout", "crashed", "not run"; ``error`` for the last
    two is the grader's own account of what stopped the kernel.
    own: for an error, whether the student's answer code raised it (True) or the test's own code, a
    check (False); None: unknown (:func:`grader.engine.notebook.failures.raised_in_answer`).
    message: a failed visible check's message as the released test cell writes it, and whether it is
    an f-string's text (:func:`grader.engine.notebook.failures.visible_message`); ("", False): none to show."""
    name = exception_name(error)
    if status == "passed":
        return "All checks passed."
    if status == "failed":
        return f"Wrong result: {mismatch}."
    if status == "timeout":
        return "The test did not finish within the time limit."
    if status == "crashed":
        return f"The test could not finish: {error}."
    if status == "not run":
        return f"The test did not run: {error or 'the kernel had stopped'}."
    if name == "NotImplementedError":
        return "Not answered yet: the code still raises NotImplementedError."
    if part == "hidden" and own:
        return (f"Your code raised {name} on a hidden input: it fails on an input the visible checks do not "
                "try (another shape, dtype or edge case).")
    if part == "hidden" and own is False:
        return (f"A hidden check failed ({name}) on what your code returned for a hidden input (another "
                "shape, dtype or edge case than the visible checks try).")
    if part == "hidden":
        return (f"A hidden check stopped with {name}: the code fails on an input the visible checks do "
                "not try (another shape, dtype or edge case).")
    if own:
        return (f"Your code raised {name} during the visible checks (the error is in your answer, not in a "
                "check); run this test cell in your notebook to see where.")
    text, template = message
    if text and not template:
        return f'A visible check failed ({name}): "{text}".'
    if text:  # the values the f-string puts in are the kernel's to show, not the grader's: left out, and said so
        return (f'A visible check failed ({name}): "{_without_values(text)}" (run this test cell in your '
                "notebook to see the values left out as ...).")
    return (f"A visible check failed ({name}); run this test cell in your notebook to read its "
            "message.")


def _without_values(template: str) -> str:
    """An f-string's text with each ``{expression}`` (format spec included) shown as ``...``: it reads as a
    sentence, and no expression text ("{tuple(D.shape)}") is mistaken for the message."""
    previous = None
    while previous != template:  # innermost first: "{d[{k}]}" and "{x:{width}}" too
        previous, template = template, re.sub(r"\{[^{}]*\}", "...", template)
    return template


def compare(student_tree: Any, reference_tree: Any, rtol: float, atol: float) -> tuple[bool, str]:
    """Compare two encoded values (see grader.values). Returns (equal?, what differs)."""
    try:
        student = decode(student_tree)
    except (ValueError, TypeError, OverflowError, RecursionError):  # its message quotes the tree
        return False, "the recorded value is malformed"
    reference = decode(reference_tree)
    where = tensor_device(student_tree), tensor_device(reference_tree)
    if where[0] != where[1]:
        return False, f"tensor on device {where[0]!r}, expected device {where[1]!r}"
    return _same(student, reference, rtol, atol, "value")


def _same(s: Any, r: Any, rtol: float, atol: float, path: str) -> tuple[bool, str]:
    import torch  # imported by decode() already; here, not at the top, so that what only imports this module
    #               (nbgrader reading a course's nbgrader_config.py, `course-grader release`) does not load torch

    if type(s) is not type(r):
        return False, f"{path} is of another type: expected a {type(r).__name__}"
    if isinstance(r, torch.Tensor):
        return _same_tensor(s, r, rtol, atol, path)
    if type(r) is float:
        if math.isnan(r) or math.isnan(s):
            ok = math.isnan(r) and math.isnan(s)
        elif math.isinf(r) or math.isinf(s):
            ok = s == r
        else:
            ok = abs(s - r) <= atol + rtol * abs(r)
        return ok, "" if ok else f"{path} differs from the expected number"
    if type(r) in (list, tuple):
        if len(s) != len(r):
            return False, f"{path} has another number of items than expected"
        for n, (a, b) in enumerate(zip(s, r)):  # which item differs is the kernel's choice: named in short ones only
            ok, why = _same(a, b, rtol, atol, f"{path}[{n}]" if len(r) <= NAMED_ITEMS else f"an item of {path}")
            if not ok:
                return ok, why
        return True, ""
    if type(r) is dict:
        if set(s) != set(r):  # the student's keys are the student's text: neither named nor counted
            lost = sorted(set(r) - set(s))
            return False, (f"{path} has key(s) it should not have" if not lost else
                           f"{path} lacks {lost[:3]}" + (" and has key(s) it should not have" if set(s) - set(r) else ""))
        for k in r:
            ok, why = _same(s[k], r[k], rtol, atol, f"{path}[{k!r}]")
            if not ok:
                return ok, why
        return True, ""
    ok = s == r  # None, bool, int, str, torch.Size, torch.dtype, torch.device: all plain types
    if type(ok) is not bool:
        return False, f"{path} cannot be compared"
    return ok, "" if ok else f"{path} differs from the expected {type(r).__name__}"


def _same_tensor(s: torch.Tensor, r: torch.Tensor, rtol, atol, path) -> tuple[bool, str]:
    import torch

    if s.dtype != r.dtype:
        return False, f"{path} has another dtype: expected {r.dtype}"
    if s.shape != r.shape:
        return False, f"{path} has the expected dtype but another shape"
    if s.numel() == 0:
        return True, ""
    if s.dtype.is_floating_point or s.dtype.is_complex:
        if rtol == 0 and atol == 0:
            same = (s == r) | (torch.isnan(s) & torch.isnan(r))
        else:
            same = torch.isclose(s, r, rtol=rtol, atol=atol, equal_nan=True)
    else:
        same = s == r
    if not bool(same.all()):
        return False, f"{path} has the expected dtype and shape but other values"
    return True, ""
