"""The submissions that stalled or crashed the grading worker (issue 28), as one class to grade in one batch.

Measured before the caps, bounds and linear sanitiser: 400 ``!`` lines in a 116 KB notebook took 1,050 s
of a worker; a function nested 98 deep around a 1.8 MB list 700 s and 1.1 GB; 30,000 nested ``<div>``s
in an output 55 s of HTML cleaning, and in a written answer 25 s more; ``- - ... 1`` 500 deep made the
grading raise ``RecursionError``. Each is written here as a multiple of the cap that now stops it, at the
size the original attack had (every one fits the submission's own limits: 64 MB of notebook, 256 kB
of outputs per cell), on top of the fixture's full solution, so that its tests earn their points by
behaviour. ``ann`` hands in the solution alone.

    root = written_course(tmp / "course")          # the fixture course with a written answer (1 point)
    class_ = stalling_class()                      # {student: notebook}
"""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import nbformat

from classroom import FIXTURE
from grader.authoring.assembly import build, release
from grader.engine.notebook import cells as nbs
from grader.engine.notebook.allowlist import MAX_HTML_DEPTH
from grader.engine.reading.limits import MAX_CELL_CHARS, MAX_DEPTH, MAX_ESCAPED_LINES

WRITTEN = "explain"  # the grade_id of the written answer added to the fixture
# 400 `!` lines of 290 characters: 116 KB. The attack was on the reading (IPython rewrites each line), so they sit
# under `if False:`: read as they were, never run (400 shells forked from a kernel that holds torch take a minute
# of the kernel's own time, which its time limit bounds like any student's; tests/test_faults.py).
SHELL_LINES = 8 * MAX_ESCAPED_LINES
NESTED_DEPTH, LIST_CHARS = MAX_DEPTH + 58, 90 * MAX_CELL_CHARS  # 98 deep (Python allows 100) around 1.8 MB
DIVS = 300 * MAX_HTML_DEPTH                                # 30,000 nested <div>s
UNARY = 12 * MAX_DEPTH + 20                                # - - ... 1, 500 deep


def _deep_divs() -> str:
    """30,000 opening ``<div>``s and half as many closed: 240 kB, under a cell's 256 kB of outputs (the output
    of ``divs_output`` is this same text, made by a short line of code)."""
    return "<div>" * DIVS + "x" + "</div>" * (DIVS // 2)


def _nested_list() -> str:
    numbers = ",".join(str(i) for i in range(LIST_CHARS // 5))[:LIST_CHARS].rstrip(",")
    return ("".join("    " * i + f"def g{i}():\n" for i in range(NESTED_DEPTH)) + "    " * NESTED_DEPTH
            + f"return [{numbers}]\n")


def stalling_additions() -> dict[str, tuple[str, str]]:
    """{student: (the cell their addition goes in, the addition)}: code after the answer of ``scale``, or
    the text of the written answer."""
    return {"shell": ("scale", "if False:\n" + "".join(f"    !echo {'a' * 276} {i}\n" for i in range(SHELL_LINES))),
            "nested": ("scale", _nested_list()),
            "divs_output": ("scale", "from IPython.display import HTML, display\n"
                                     f"display(HTML('<div>' * {DIVS} + 'x' + '</div>' * {DIVS // 2}))\n"),
            "divs_written": (WRITTEN, _deep_divs()),
            "unary": ("scale", "y = " + "- " * UNARY + "1\n")}


def solution() -> nbs.NotebookNode:
    """The fixture's solution with a written answer (``WRITTEN``, 1 point graded by hand) at its end."""
    nb = nbs.read_notebook(FIXTURE)
    meta = {"grade": True, "solution": True, "locked": False, "points": 1, "grade_id": WRITTEN, "schema_version": 3}
    nb.cells.append(nbformat.v4.new_markdown_cell("Why does `scale` keep the shape? Scaling multiplies each "
                                                  "element; no element is added or removed.",
                                                  metadata={"nbgrader": meta}))
    return nb


def stalling_class() -> dict[str, nbs.NotebookNode]:
    """ann: the solution; every other student: the solution with one stalling addition."""
    class_ = {"ann": solution()}
    for student, (grade_id, addition) in stalling_additions().items():
        nb = solution()
        cell = next(c for c in nb.cells if nbs.nbgrader_meta(c).get("grade_id") == grade_id)
        cell.source = addition if grade_id == WRITTEN else cell.source + "\n" + addition
        class_[student] = nb
    return class_


def written_course(root: Path) -> Path:
    """The fixture course, with :func:`solution` as its notebook, built and released at ``root``."""
    source = Path(tempfile.mkdtemp(prefix="stalling-source-"))
    try:
        nbs.write_notebook(solution(), source / FIXTURE.name)
        build(root, source)
        release(root)
    finally:
        shutil.rmtree(source, ignore_errors=True)
    return root
