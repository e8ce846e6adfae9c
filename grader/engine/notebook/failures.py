"""Where a failing test cell stopped, and which of its visible messages a student may read.

Both facts are read from what the student's kernel sent (the error output of the part that failed),
which is untrusted text; neither earns or costs a point. They only choose the words of a reason:

- :func:`raised_in_answer`: whether the exception came out of code defined in another cell (the
  student's answer) or out of the test cell's own code (a check, e.g. an ``assert`` or
  ``torch.testing.assert_close``). Read from the traceback's frames; a kernel that forges its
  traceback only changes the wording on its own student's page.
- :func:`visible_message`: the message of a failed visible check, shown only when it is text of the
  released test cell itself. After an earlier test's hidden part has run, the student's code may hold
  hidden inputs, and an error message can quote anything (an f-string in an ``assert`` formats the
  student's return value, whose ``__format__`` the student wrote). So the kernel's message is never
  shown: it only selects one string literal of the cell's visible source, or the text of one of its
  f-strings with the ``{expressions}`` left as written, which the student reads in the released
  notebook anyway.

    raised_in_answer(error_output["traceback"])   # True, False, or None (cannot tell)
    visible_message("AssertionError: scale(x, 2.0) should double", source)  # ("scale(x, 2.0) should double", False)
"""
from __future__ import annotations

import ast
import re

from .cells import split_hidden

__all__ = ["raised_in_answer", "visible_message"]

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
# How IPython names a frame of code run as a cell ("Cell In[3], line 2"; older versions: an
# "<ipython-input-3-...>" or an ipykernel_<pid>/<hash>.py file name)
_CELL_FRAME = re.compile(r"^(?:Cell In\[\d+\]|.*<ipython-input-\d+-|.*ipykernel_\d+/\d+\.py)")
_FRAME = re.compile(r"^(?:Cell In\[\d+\]|File |Input In \[)")


def raised_in_answer(traceback: list) -> bool | None:
    """True when the innermost notebook-cell frame is not the first (the test part itself): the
    exception came out of a function another cell defined (the student's answer), possibly through a
    library it called. False when the only cell frame is the test's (its assert, or a library it
    called, raised). None when the traceback shows no cell frame (missing, cut, or unknown format).

    traceback: the strings of a Jupyter ``error`` output (ANSI colours allowed), one per frame after
    the header lines."""
    frames = [_ANSI.sub("", t).lstrip() for t in traceback if isinstance(t, str)]
    frames = [f for f in frames if _FRAME.match(f) or _CELL_FRAME.match(f)]
    cells = [n for n, f in enumerate(frames) if _CELL_FRAME.match(f)]
    if not cells or cells[0] != 0:
        return None
    return cells[-1] != 0


def _literals(source: str) -> dict[str, bool]:
    """Every string literal of ``source`` (-> False) and every f-string, as its text with the
    ``{expressions}`` as written (-> True); {} when the source is not plain Python."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError):  # magics, or not Python: show nothing
        return {}
    found: dict[str, bool] = {}
    inner = {id(v) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for v in node.values}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in inner:
            found.setdefault(node.value, False)
        elif isinstance(node, ast.JoinedStr):
            found.setdefault("".join(v.value if isinstance(v, ast.Constant) else "{" + ast.unparse(v.value) + "}"
                                     for v in node.values), True)
    return found


def _pattern(node_text: str) -> re.Pattern:
    """A regex matching what an f-string with this text can format to (each ``{...}``: anything)."""
    parts = re.split(r"\{[^{}]*\}", node_text)
    return re.compile("(?s)" + ".*".join(map(re.escape, parts)))


def visible_message(error: str, source: str) -> tuple[str, bool]:
    """The message of ``error`` ("Name: message", from the kernel) as the test cell's visible source
    writes it: (text, is_template). ("", False) when the message is not one of them.

    source: the trusted test cell (its hidden parts are left out here). A template is an f-string's
    text with its ``{expressions}`` unformatted: the student runs the cell to see the values."""
    message = (error or "").partition(":")[2].strip()
    if not message:
        return "", False
    visible = "\n".join(code for code, hidden in split_hidden(source) if not hidden)
    literals = _literals(visible)
    if literals.get(message) is False:
        return message, False
    for text, template in literals.items():
        if template and re.sub(r"\{[^{}]*\}", "", text).strip() and _pattern(text).fullmatch(message):
            return text, True
    return "", False
