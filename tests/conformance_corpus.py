"""A small nbgrader course written the way public nbgrader courses write theirs, and the submissions made from it.

``python tests/conformance_corpus.py`` (re)writes ``tests/fixtures/conformance/course``; tests/test_conformance.py
checks that the committed files are what this module writes. Every notebook is built here with nbformat, so the
course reads as code. The idioms (none of their text is copied) come from public nbgrader courses:

* ``arith``: a solution region indented inside a ``def`` (``### BEGIN SOLUTION``) and one with a single ``#``
  (``# BEGIN SOLUTION``); a test with visible asserts and a hidden block; a test cell that is hidden as a whole; a
  test that prints and ends in an expression (``... == 5``, shown as ``Out``); a test whose check makes numpy
  print a RuntimeWarning on stderr; an unmarked setup cell.
* ``loading``: a data file in a subfolder (``measurements/values.csv``) read by the answer and by the tests;
  markers written ``###BEGIN SOLUTION`` (no space); a solution cell with an instruction comment outside its
  region; ``numpy.testing`` asserts; a 0-point autograded test; a task cell.
* ``essay``: a code answer graded by hand, a markdown answer graded by hand, an assert-only test; the notebook
  is nbformat 4.4, with no cell ids, as older courses' notebooks are.

The course has a header notebook with a code cell (``NAME = ""``, ``COLLABORATORS = ""``), put around every
notebook by nbgrader's IncludeHeaderFooter (course-grader reads it from the same place).
"""
from __future__ import annotations

import copy
import re
import sys
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

FIXTURE = Path(__file__).parent / "fixtures" / "conformance" / "course"
COURSE_ID = "conform-101"
KERNEL = {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
          "language_info": {"name": "python"}}


def meta(grade_id: str, *, solution=False, grade=False, locked=False, points=None, task=False) -> dict:
    nbg = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": 3, "solution": solution,
           "task": task}
    if points is not None:
        nbg["points"] = points
    return {"nbgrader": nbg}


def text(grade_id, source):
    """A locked markdown cell (the exercise's wording)."""
    return new_markdown_cell(source, metadata=meta(grade_id, locked=True), id=grade_id)


def answer(grade_id, source):
    return new_code_cell(source, metadata=meta(grade_id, solution=True), id=grade_id)


def test(grade_id, source, points):
    return new_code_cell(source, metadata=meta(grade_id, grade=True, locked=True, points=points), id=grade_id)


def plain(cell_id, source, code=True):
    """A cell without nbgrader metadata (students may change it)."""
    return (new_code_cell if code else new_markdown_cell)(source, id=cell_id)


def notebook(cells, minor=5):
    nb = new_notebook(cells=cells, metadata=copy.deepcopy(KERNEL))
    nb.nbformat_minor = minor
    if minor < 5:
        for cell in nb.cells:
            cell.pop("id", None)
    return nb


def header():
    return notebook([plain("header-text", "**Conformance 101.** Restart the kernel and run every cell before you "
                           "hand in. Fill in your name and whoever you worked with.", code=False),
                     plain("header-name", 'NAME = ""\nCOLLABORATORS = ""')])


def arith():
    return notebook([
        text("arith-intro", "# Arithmetic warm-up\n\nTwo small functions, each checked by tests you can see and "
                            "tests you cannot."),
        plain("arith-setup", "import math"),
        text("square-text", "**1.** `square(x)` returns `x` times itself."),
        answer("square", 'def square(x):\n    """x times x."""\n    ### BEGIN SOLUTION\n    return x * x\n'
                         '    ### END SOLUTION'),
        test("test_square", 'assert square(3) == 9\nassert square(-2) == 4\n### BEGIN HIDDEN TESTS\n'
                            'assert square(0.5) == 0.25\nassert square(10) == 100\n### END HIDDEN TESTS', 2),
        text("mean-text", "**2.** `mean(xs)` returns the average of a non-empty list."),
        answer("mean", "def mean(xs):\n    # BEGIN SOLUTION\n    return sum(xs) / len(xs)\n    # END SOLUTION"),
        test("test_mean", 'print("checking mean on two lists")\nassert mean([1, 2, 3]) == 2\nmean([4, 6]) == 5', 1),
        test("test_mean_hidden", "### BEGIN HIDDEN TESTS\nassert mean([0.5]) == 0.5\nassert mean([-1, 1]) == 0\n"
                                 "### END HIDDEN TESTS", 2),
        test("test_square_log", "import numpy as np\n# log(0) is -inf: numpy says so with a RuntimeWarning\n"
                                "assert np.isinf(np.log(np.float64(square(0))))", 1),
    ])


VALUES = "name,value\na,1.5\nb,2.5\nc,6\n"


def loading():
    return notebook([
        text("loading-intro", "# Reading a data file\n\nThe file `measurements/values.csv` ships with this "
                              "assignment."),
        plain("loading-setup", "import csv\nfrom numpy.testing import assert_allclose"),
        text("load-text", "**1.** `load_column(path, name)` returns the column `name` of a CSV file as floats."),
        answer("load_column", "def load_column(path, name):\n    ###BEGIN SOLUTION\n    with open(path) as f:\n"
                              "        return [float(row[name]) for row in csv.DictReader(f)]\n    ###END SOLUTION"),
        test("test_load", 'values = load_column("measurements/values.csv", "value")\nassert len(values) == 3\n'
                          "assert_allclose(values, [1.5, 2.5, 6.0])", 2),
        text("total-text", "**2.** Store the sum of the column in `total`."),
        answer("total", "# write your answer below this line\n###BEGIN SOLUTION\n"
                        'total = sum(load_column("measurements/values.csv", "value"))\n###END SOLUTION'),
        test("test_total_free", "# a check you can run; it counts for nothing\nassert isinstance(total, float)", 0),
        test("test_total", "assert_allclose(total, 10.0)\n### BEGIN HIDDEN TESTS\n"
                           'assert total == sum(load_column("measurements/values.csv", "value"))\n'
                           "### END HIDDEN TESTS", 1),
        new_markdown_cell("**3.** Plot the column against its row number, label both axes, and say in a "
                          "sentence what the plot shows. Add cells below for your work.",
                          metadata=meta("plot_task", task=True, locked=True, points=2), id="plot_task"),
    ])


def essay():
    return notebook([
        text("essay-intro", "# Written answers\n\nTwo answers here are read by a person."),
        text("clip-text", "**1.** `clip(x, lo, hi)` limits `x` to the interval `[lo, hi]`."),
        answer("clip", "def clip(x, lo, hi):\n    ### BEGIN SOLUTION\n    return max(lo, min(x, hi))\n"
                       "    ### END SOLUTION"),
        test("test_clip", "assert clip(5, 0, 3) == 3\nassert clip(-1, 0, 3) == 0\nassert clip(2, 0, 3) == 2", 1),
        text("fib-text", "**2.** Write `fib(n)`, the n-th Fibonacci number, without recursion. A person reads "
                         "your code."),
        new_code_cell("def fib(n):\n    ### BEGIN SOLUTION\n    a, b = 0, 1\n    for _ in range(n):\n"
                      "        a, b = b, a + b\n    return a\n    ### END SOLUTION",
                      metadata=meta("fib", solution=True, grade=True, points=2), id="fib"),
        text("why-text", "**3.** Why is the recursive Fibonacci slow? Two sentences."),
        new_markdown_cell("It calls itself twice per step, so the same values are computed again and again: the "
                          "number of calls grows exponentially with n.",
                          metadata=meta("why", solution=True, grade=True, points=3), id="why"),
    ], minor=4)


# A course of its own that sets nbgrader's region markers in its nbgrader_config.py, as nbgrader lets a course do
# (ClearSolutions.begin_solution_delimeter, ClearHiddenTests.begin_test_delimeter, ...): graded by stock nbgrader
# and course-grader in tests/test_conformance.py through scripts/compare_with_stock.py.
CUSTOM_MARKERS = {"ClearSolutions.begin_solution_delimeter": "BEGIN ANSWER",
                  "ClearSolutions.end_solution_delimeter": "END ANSWER",
                  "ClearHiddenTests.begin_test_delimeter": "BEGIN SECRET TESTS",
                  "ClearHiddenTests.end_test_delimeter": "END SECRET TESTS"}


def custom():
    return notebook([
        text("custom-text", "**1.** `cube(x)` returns `x` to the third power."),
        answer("cube", 'def cube(x):\n    """x cubed."""\n    ## BEGIN ANSWER\n    return x ** 3\n    ## END ANSWER'),
        test("test_cube", "assert cube(2) == 8\n## BEGIN SECRET TESTS\nassert cube(-3) == -27\n"
                          "## END SECRET TESTS", 2),
        new_code_cell("def explain(x):\n    ## BEGIN ANSWER\n    return f'{x} cubed is {x ** 3}'\n    ## END ANSWER",
                      metadata=meta("explain", solution=True, grade=True, points=1), id="explain"),
    ])


def write_custom_course(dest: Path) -> Path:
    """A course folder with the assignment ``custom`` whose markers are the course's own (CUSTOM_MARKERS)."""
    (dest / "custom").mkdir(parents=True)
    nbformat.write(custom(), dest / "custom" / "custom.ipynb")
    settings = "".join(f"c.{key} = {value!r}\n" for key, value in CUSTOM_MARKERS.items())
    (dest / "nbgrader_config.py").write_text(CONFIG + settings, encoding="utf-8")
    return dest


# A course whose tests score themselves, as nbgrader lets a grade cell do: its last line is a number, and nbgrader
# gives that many points (partial credit; a negative number: full points). Graded by stock nbgrader and
# course-grader in tests/test_conformance.py through scripts/compare_with_stock.py.
def partial():
    return notebook([
        text("halves-text", "**1.** `halves(x)` returns half of `x`, as a float."),
        answer("halves", 'def halves(x):\n    """x divided by 2."""\n    ### BEGIN SOLUTION\n    return x / 2\n'
                         '    ### END SOLUTION'),
        test("test_halves_score", '"""Half a point for each input halved right: the last line is the score."""\n'
                                  "score = 0.0\nscore += 0.5 if halves(2) == 1 else 0\n"
                                  "score += 0.5 if halves(3) == 1.5 else 0\nscore", 1),
        test("test_halves_hidden_score", '"""Two points for even inputs, less 1.5 for a wrong odd one."""\n'
                                         "score = 2.0 if halves(4) == 2 else 0.0\n### BEGIN HIDDEN TESTS\n"
                                         "if halves(5) != 2.5:\n    score -= 1.5\n### END HIDDEN TESTS\nscore", 2),
        test("test_halves_negative", '"""A negative last line: nbgrader gives full points."""\nhalves(2) - 2', 1),
        test("test_halves_shown", '"""A value shown before the hidden asserts is no score."""\nhalves(0)\n'
                                  "### BEGIN HIDDEN TESTS\nassert halves(1) == 0.5\n### END HIDDEN TESTS", 1),
    ])


def write_partial_course(dest: Path) -> Path:
    """A course folder with the assignment ``partial``, whose tests end in their score."""
    (dest / "partial").mkdir(parents=True)
    nbformat.write(partial(), dest / "partial" / "partial.ipynb")
    (dest / "nbgrader_config.py").write_text(CONFIG, encoding="utf-8")
    return dest


ASSIGNMENTS = {"arith": {"arith.ipynb": arith}, "loading": {"loading.ipynb": loading},
               "essay": {"essay.ipynb": essay}}
DATA = {"loading": {"measurements/values.csv": VALUES}}
CONFIG = f'c = get_config()  # noqa: F821\nc.CourseDirectory.course_id = "{COURSE_ID}"\n'


def write_course(dest: Path) -> Path:
    """The course as an instructor keeps it: one folder per assignment, header.ipynb, nbgrader_config.py."""
    dest.mkdir(parents=True, exist_ok=True)
    nbformat.write(header(), dest / "header.ipynb")
    (dest / "nbgrader_config.py").write_text(CONFIG, encoding="utf-8")
    for assignment, notebooks in ASSIGNMENTS.items():
        for name, make in notebooks.items():
            (dest / assignment).mkdir(exist_ok=True)
            nbformat.write(make(), dest / assignment / name)
        for name, content in DATA.get(assignment, {}).items():
            (dest / assignment / name).parent.mkdir(parents=True, exist_ok=True)
            (dest / assignment / name).write_text(content, encoding="utf-8")
    return dest


# ---- submissions -------------------------------------------------------------------------------------------

MARKER = re.compile(r"^\s*#+\s*(BEGIN|END) SOLUTION\s*$")
WRONG = {"square": "def square(x):\n    return x + x", "load_column": "def load_column(path, name):\n    return []",
         "clip": "def clip(x, lo, hi):\n    return x", "halves": "def halves(x):\n    return x // 2"}
VARIANTS = ("solution", "release", "partly", "noanswer", "notest", "edited", "added", "reordered", "v44",
            "cleared")


def gid(cell) -> str:
    return cell.metadata.get("nbgrader", {}).get("grade_id", "")


def role(cell) -> str:
    nbg = cell.metadata.get("nbgrader", {})
    if nbg.get("solution"):
        return "manual" if nbg.get("grade") else "answer"
    return "test" if nbg.get("grade") and cell.cell_type == "code" else ""


def model_answers(source_nb) -> dict[str, str]:
    """grade_id -> what a student who gets it right writes: the solution without its markers."""
    return {gid(c): "\n".join(line for line in c.source.splitlines() if not MARKER.match(line))
            for c in source_nb.cells if role(c) in ("answer", "manual")}


def ran(nb):
    """As a student hands it in after running it: execution counts and a printed line in each code cell."""
    for count, cell in enumerate((c for c in nb.cells if c.cell_type == "code"), 1):
        cell.execution_count = count
        cell.outputs = [new_output("stream", name="stdout", text="ran\n")]
    return nb


def submission(variant: str, released, source_nb):
    """The released notebook as the student ``variant`` hands it in."""
    nb = copy.deepcopy(released)
    if variant == "release":
        return nb
    answers = model_answers(source_nb)
    for cell in nb.cells:
        if gid(cell) in answers:
            cell.source = answers[gid(cell)]
    first = {r: next((i for i, c in enumerate(nb.cells) if role(c) == r), None) for r in ("answer", "test")}
    if variant == "partly":  # a WRONG answer, else (another course) the first answer left as released
        wrong = next((i for i, c in enumerate(nb.cells) if gid(c) in WRONG), first["answer"])
        if wrong is not None:
            nb.cells[wrong].source = WRONG.get(gid(nb.cells[wrong]), released.cells[wrong].source)
    elif variant == "noanswer" and first["answer"] is not None:
        del nb.cells[first["answer"]]
    elif variant == "notest" and first["test"] is not None:
        del nb.cells[first["test"]]
    elif variant == "edited":
        for cell in nb.cells:
            if cell.cell_type == "code" and cell.source.startswith("NAME = "):
                cell.source = 'NAME = "Edie Ted"\nCOLLABORATORS = "none"'
            elif cell.cell_type == "code" and not cell.metadata.get("nbgrader") and "import" in cell.source:
                cell.source += "\nimport statistics  # the student's own import"
    elif variant == "added":
        at = (first["answer"] if first["answer"] is not None else len(nb.cells) - 1) + 1
        nb.cells[at:at] = [nbformat.v4.new_markdown_cell("My notes: trying it out."),
                           nbformat.v4.new_code_cell("scratch = [1, 2, 3]\nprint(scratch)")]
    elif variant == "reordered" and first["answer"] is not None:
        nb.cells.append(nb.cells.pop(first["answer"]))
    ran(nb)
    if variant == "cleared":
        for cell in nb.cells:
            if cell.cell_type == "code":
                cell.outputs, cell.execution_count = [], None
    if variant == "v44":
        nb.nbformat_minor = 4
        for cell in nb.cells:
            cell.pop("id", None)
    return nb


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else FIXTURE
    print(write_course(target))
