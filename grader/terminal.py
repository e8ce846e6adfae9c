"""Text from a submission made safe to print on the instructor's terminal (shared by every stage).

Student ids, file names and reasons reach the command line's output; :func:`printable` writes their
control characters as escapes, so that no submission can move the cursor, retitle the window or
clear the screen. It imports nothing of the grader.
"""
from __future__ import annotations

import re

__all__ = ["printable"]

# C0 and C1 controls (escape sequences, new lines), bidirectional overrides, lone surrogates
CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def printable(value) -> str:
    """``str(value)`` for one line of a terminal: controls, bidi overrides and lone surrogates are
    written as escapes (``\\x1b``, ``\\u202e``), so a student's text cannot move the cursor,
    retitle the window or clear the screen."""
    return CONTROL.sub(lambda m: f"\\x{ord(m[0]):02x}" if ord(m[0]) < 0x100 else f"\\u{ord(m[0]):04x}",
                       str(value))
