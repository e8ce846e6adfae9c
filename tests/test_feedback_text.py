"""Feedback a student learns from: what the page of ``course-grader feedback`` says, read from its HTML.

One batch (module-scoped, never changed by a test) of the feedback fixture course
(tests/fixtures/grader/feedback: four tiny exercises in plain Python), graded for real in the
sandbox, and its feedback pages:

- kim answered everything wrongly, each in another way: ``clip`` misses two of its three hidden
  checks; ``mean_abs`` fails the visible assert (a literal message); ``halve`` raises ValueError in
  kim's own code; ``double`` fails a visible assert whose message is an f-string. ``clip`` also keeps
  every input it is given (hidden ones included), and ``halve`` and ``double`` put them into the
  messages of later visible checks: a page that showed the kernel's messages would show hidden inputs.
- lea uploaded a file that is no notebook: the instructor is told to ask for it again, lea is not.

The pure functions behind the page (exercise titles, where an exception came from, which visible
message may be shown) are tested below without a kernel.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from classroom import write_corrupt
from grader.authoring.assembly import build, release
from grader.engine.notebook import cells as nbs
from grader.engine.notebook.failures import raised_in_answer, visible_message
from grader.intake.collect import collect
from grader.results.feedback import feedback
from grader.results.table import grade_table
from grader.running.batch import autograde
from page_payloads import page_text, table_rows

SOURCE = Path(__file__).parent / "fixtures" / "grader" / "feedback" / "01_feedback.ipynb"
A = "01_feedback"
KIM = {  # grade_id of an answer cell -> kim's answer
    "clip": "SEEN = []\ndef clip(x, lo, hi):\n    SEEN.append(x)\n    return hi if x > hi else float(round(x))\n",
    "mean_abs": "def mean_abs(xs):\n    return sum(xs) / len(xs)\n",
    "halve": "def halve(x):\n    raise ValueError('kept ' + repr(SEEN))\n",
    "double": "def double(x):\n    return 'kept ' + repr(SEEN)\n",
}
HIDDEN_INPUT = "-7.125"  # clip's first hidden input: what kim's later answers try to show
HIDDEN_SOURCE = ["clip(-7.125", "clip(0.3125", "mean_abs([-0.5", "halve(-2.5)", "double(-1.75)", "HIDDEN TESTS"]
INSTRUCTOR_WORDS = [r"\bask\b", r"at collect", r"re-submit", r"rejected", r"NotJSONError", r"must be submitted again"]


@pytest.fixture(scope="module")
def pages(tmp_path_factory) -> dict[str, str]:
    """student -> the HTML of their feedback page; also "table": the instructor's grade table."""
    base = tmp_path_factory.mktemp("feedback text")
    root = base / "course"
    build(root, SOURCE.parent)
    release(root)
    nb = nbs.read_notebook(SOURCE)
    for cell in nb.cells:
        cell.source = KIM.get(nbs.nbgrader_meta(cell).get("grade_id"), cell.source)
    nbs.write_notebook(nb, base / "inbox" / "kim" / f"{A}.ipynb")
    write_corrupt(base / "inbox", "lea", A)
    nbs.write_notebook(new_notebook(), base / "inbox" / "max" / f"{A}.ipynb")  # valid JSON, no cells
    collect(root, base / "inbox")
    results = autograde(root, workers=1, unsafe=False)
    feedback(root)
    found = {s: (root / "feedback" / s / A / f"{A}.html").read_text(encoding="utf-8") for s in ("kim", "lea", "max")}
    from grader.authoring.coursedir import CourseDir
    from grader.results.report import write_report

    report = write_report(CourseDir(root)).read_text(encoding="utf-8")
    return {**found, "table": grade_table(root, results), "report": report}


def verdict(html: str, grade_id: str) -> str:
    """The text a test cell shows on the page: its verdict line and the list under it ("  - ...")."""
    text = page_text(html)
    cell = text[text.index(f"Grade cell: {grade_id}"):]
    start = re.search(r"^(PASSED|WRONG|PARTLY RIGHT|ERROR IN YOUR CODE|NOT ANSWERED|NOT IN YOUR NOTEBOOK|NO NOTEBOOK RECEIVED|TIME LIMIT|"
                      r"COULD NOT FINISH|NOT RUN) \(", cell, re.M)
    assert start, cell[:2000]
    first, *rest = cell[start.start():].splitlines()
    listed = []
    for line in rest:
        if not line.startswith("  - "):
            break
        listed.append(line)
    return "\n".join([first] + listed)


def test_the_summary_names_each_test_cells_exercise(pages):
    summary = table_rows(pages["kim"])[0]
    assert summary == [["Exercise", "Test", "Points", "Status"],
                       ["Exercise 1: clip a value", "test_clip", "0/3", "wrong"],
                       ["Exercise 2: mean of absolute values", "test_mean_abs", "0/2", "wrong"],
                       ["Exercise 3: halve a number", "test_halve", "0/1", "error in your code"],
                       ["Exercise 4: double", "test_double", "0/1", "wrong"],
                       ["Total", "", "0/7", ""]], summary
    assert [row[-1] for row in table_rows(pages["lea"])[0][1:-1]] == ["no notebook received"] * 4


def test_a_failed_visible_check_shows_its_message_as_the_test_writes_it(pages):
    assert verdict(pages["kim"], "test_mean_abs").startswith(
        'WRONG (0/2): A visible check failed (AssertionError): "mean_abs([-1.0, 3.0]) should be 2.0".')
    # an f-string's values are the student's (here: hidden inputs): left out, and the sentence still reads
    # (issue 31, item 8: it showed "got {y}", the expression's text, as if it were the message)
    double = verdict(pages["kim"], "test_double")
    assert double.startswith('WRONG (0/1): A visible check failed (AssertionError): "double(2.0) should be 4.0, '
                             'got ..." (run this test cell in your notebook to see the values left out as ...).'), double
    assert "{" not in double and "}" not in double, double


def test_every_failed_check_is_described_and_only_those(pages):
    clip = verdict(pages["kim"], "test_clip")
    assert clip.startswith("WRONG (0/3): Wrong result"), clip
    assert "a value below the range" in clip and "a value inside the range" in clip, clip
    assert "far above" not in pages["kim"], "a check kim passed is listed as failed"
    mean = verdict(pages["kim"], "test_mean_abs")
    assert "two values" in mean and "three values" in mean, mean  # the visible check stopped both


def test_hidden_checks_a_stopped_test_never_reached_read_not_checked(pages):
    """Issue 31 (4): the hidden checks of a test whose visible part stopped it never ran; the page listed them
    as "not passed" and the class report counted them as failed."""
    mean = verdict(pages["kim"], "test_mean_abs").splitlines()
    assert len(mean) == 3 and all(line.startswith("  - not checked (the test stopped before it): ")
                                  for line in mean[1:]), mean
    clip = verdict(pages["kim"], "test_clip")  # ran to its end: what it missed, it missed
    assert "not checked" not in clip and clip.count("  - not passed: ") == 2, clip
    html = pages["report"]
    row = html[html.index("<tr><td><code>test_mean_abs</code>"):]
    row = row[:row.index("</tr>")]
    assert "100 % failed" not in row and "0 % failed" in row, row
    assert "(100 % not checked: their test stopped before it)" in row, row


def test_an_error_of_the_students_code_is_told_apart_from_a_failed_check(pages):
    own, check = verdict(pages["kim"], "test_halve"), verdict(pages["kim"], "test_double")
    assert own.startswith("ERROR IN YOUR CODE (0/1): Your code raised ValueError") and "check failed" not in own, own
    assert check.startswith("WRONG (0/1): A visible check failed") and "Your code raised" not in check, check


def test_no_hidden_input_or_hidden_source_reaches_a_page(pages):
    for student in ("kim", "lea"):
        html = pages[student]
        assert not [t for t in HIDDEN_SOURCE if t in html], student
        assert HIDDEN_INPUT not in html and "kept [" not in html, student


def test_text_meant_for_the_instructor_never_reaches_the_students_page(pages):
    assert re.search(r"ask the student to re-submit", pages["table"]), "the instructor still reads whom to ask"
    lea = page_text(pages["lea"])
    assert "submit it again" in lea and "File > Download" in lea, lea[:3000]
    for student in ("kim", "lea"):
        said = [w for w in INSTRUCTOR_WORDS if re.search(w, page_text(pages[student]), re.I)]
        assert said == [], (student, said)


# -- the pure functions behind the page ----------------------------------------------------------

def _cell(source: str, gid: str, *, test: bool = False, points: int = 1):
    meta = {"grade": test, "grade_id": gid, "locked": test, "schema_version": 3, "solution": not test}
    if test:
        meta["points"] = points
    return new_code_cell(source, metadata={"nbgrader": meta})


def test_exercise_titles_come_from_the_heading_before_the_answer():
    nb = new_notebook(cells=[
        _cell("def a(): ...", "a"), _cell("a()", "test_a", test=True),  # no heading yet: its grade_id
        new_markdown_cell("## Exercise 2 (2 points): `b` and its tests\n\nSome words."),
        new_markdown_cell("A note without a heading."),
        _cell("def b(): ...", "b"), new_markdown_cell("### A hint (not a title)"),
        _cell("b()", "test_b1", test=True), _cell("b(1)", "test_b2", test=True),
        new_markdown_cell("# Exercise 3 — c (1 point)"), _cell("def c(): ...", "c"),
        _cell("c()", "test_c", test=True),
    ])
    assert nbs.exercise_titles(nb) == {"test_a": "test_a", "test_b1": "Exercise 2: `b` and its tests",
                                       "test_b2": "Exercise 2: `b` and its tests", "test_c": "Exercise 3 — c"}


def test_every_course_notebooks_test_has_an_exercise_title():
    course = Path(__file__).resolve().parents[1] / "course"
    for path in sorted(course.glob("*.ipynb")):
        nb = nbs.read_notebook(path)
        titles = nbs.exercise_titles(nb)
        tests = [nbs.nbgrader_meta(c)["grade_id"] for c in nb.cells if nbs.is_test(c)]
        assert sorted(titles) == sorted(tests) and all(titles[t].startswith("Exercise ") for t in tests), (path, titles)
        assert not [t for t in titles.values() if re.search(r"\d+ points?\b", t)], (path, titles)


def _frame(where: str, line: str) -> str:
    """A traceback entry as IPython writes it (with its colours)."""
    return f"\x1b[36m{where}\x1b[39m\n\x1b[32m----> \x1b[39m\x1b[32m1\x1b[39m {line}\n"


HEAD = ["\x1b[31m---------------------------------------------------------------------------\x1b[39m",
        "\x1b[31mValueError\x1b[39m                                Traceback (most recent call last)"]
TEST_FRAME = _frame("Cell\x1b[39m\x1b[36m \x1b[39m\x1b[32mIn[9]\x1b[39m\x1b[32m, line 3", "assert f(1) == 2")
ANSWER_FRAME = _frame("Cell\x1b[39m\x1b[36m \x1b[39m\x1b[32mIn[4]\x1b[39m\x1b[32m, line 2\x1b[39m, in f(x)", "raise X")
LIBRARY_FRAME = _frame("File \x1b[39m\x1b[32m/venv/lib/python3.11/site-packages/torch/functional.py:42", "raise")
TAIL = ["\x1b[31mValueError\x1b[39m: whatever the kernel says"]


@pytest.mark.parametrize("frames, own", [
    ([TEST_FRAME], False),                                # the test's own assert
    ([TEST_FRAME, LIBRARY_FRAME], False),                 # a library the test called (assert_close)
    ([TEST_FRAME, ANSWER_FRAME], True),                   # the answer's function raised
    ([TEST_FRAME, ANSWER_FRAME, LIBRARY_FRAME], True),    # ... in a library it called
    ([], None),                                           # no frames (cut): cannot tell
    ([LIBRARY_FRAME], None),                              # no cell first: not a traceback we know
])
def test_where_an_exception_came_from_is_read_from_the_frames(frames, own):
    assert raised_in_answer(HEAD + frames + TAIL) is own


VISIBLE_SOURCE = '''"""f doubles."""
assert f(1) == 2, "f(1) should be 2"
y = f(2)
assert y == 4, f"f(2) should be 4, got {y!r}"
### BEGIN HIDDEN TESTS
record("hidden", f(-7.125), "a negative input")
### END HIDDEN TESTS
print("All checks passed.")
'''


@pytest.mark.parametrize("error, shown", [
    ("AssertionError: f(1) should be 2", ("f(1) should be 2", False)),
    ("AssertionError: f(2) should be 4, got 'anything the student returned'", ("f(2) should be 4, got {y}", True)),
    ("AssertionError: a negative input", ("", False)),         # a literal of the hidden part only
    ("AssertionError: f(-7.125) gave 3", ("", False)),         # text of the kernel's own
    ("AssertionError: ", ("", False)),
    ("AssertionError: All checks passed.", ("All checks passed.", False)),  # visible text after the hidden part
])
def test_a_visible_message_is_shown_only_as_the_visible_source_writes_it(error, shown):
    assert visible_message(error, VISIBLE_SOURCE) == shown


def test_a_test_cell_that_is_not_plain_python_shows_no_message():
    assert visible_message("AssertionError: f(1) should be 2", "%time x = 1\n" + VISIBLE_SOURCE) == ("", False)


def test_a_notebook_without_any_of_the_assignments_cells_is_said_once(pages):
    """Issue 31 (3): an empty notebook (valid JSON, no cells) read as four "not answered" tests, to the
    student and to the instructor; each is told once that it holds none of the assignment's cells."""
    text = page_text(pages["max"])
    assert text.count("holds none of this assignment's cells") == 1, text[:3000]
    assert "submit that notebook again" in text and "not answered" not in text.lower(), text[:3000]
    assert [row[-1] for row in table_rows(pages["max"])[0][1:-1]] == ["not in your notebook"] * 4
    assert verdict(pages["max"], "test_clip") == "NOT IN YOUR NOTEBOOK (0/3): see the note at the top of this page."
    table = pages["table"]
    said = [line.strip() for line in table.splitlines() if line.strip().startswith(f"max / {A}")]
    assert said == [f"max / {A}: {A}.ipynb holds none of the assignment's cells (an empty notebook, or another file "
                    "handed in), so every test reads as not answered; ask the student to submit the assignment's "
                    "own notebook"], table
