"""Conformance: a course written in public nbgrader courses' idioms, graded by stock nbgrader and by course-grader.

The corpus (tests/conformance_corpus.py, written to tests/fixtures/conformance/course) has three assignments;
every student below hands in every assignment, each made from stock nbgrader's release of it:

  solution   the model answers, run (outputs and execution counts)     release    the release unchanged
  partly     one autograded answer wrong                               noanswer   the first answer cell deleted
  notest     the first test cell deleted                                edited     NAME filled in, an unmarked cell changed
  added      a markdown and a code cell added after the first answer   reordered  the first answer cell moved to the end
  v44        nbformat 4.4, no cell ids                                  cleared    the model answers, outputs cleared

Stock nbgrader 0.9.6 grades them in an nbgrader course folder (``nbgrader autograde --create``, a real gradebook);
course-grader builds the same course folder, collects the same notebooks from an exchange and autogrades them.
One module fixture grades everything once with each; the tests compare the two gradebooks row by row: automatic
score, manual score, max score and "needs manual grading" of every grade cell of every submission. Where they
differ on purpose, DELIBERATE names the row, both values and the reason (README); anything else is a finding.
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

import nbformat
import pytest

from classroom import stock_nbgrader
from conformance_corpus import ASSIGNMENTS, COURSE_ID, FIXTURE, VARIANTS, write_course
from grader.cli import main

sys.path.insert(0, str(Path(__file__).parents[1] / "scripts"))  # scripts/compare_with_stock.py

Row = tuple  # (auto score, manual score, max score, needs manual grade)

# Rows where course-grader differs from stock nbgrader on purpose: (student, assignment, notebook, grade cell)
# -> (stock's row, course-grader's row, why). Each reason is written down in README or grader/THREAT_MODEL.md.
STDERR = ("a test whose check makes numpy print a RuntimeWarning (log(0)) on stderr: stock nbgrader scores any "
          "stderr output as a failure, course-grader keeps the points the check earned (README, autograde: 'A "
          "correct answer that prints a warning on stderr keeps its points')")
TEST_RESTORED = ("the student deleted this test cell: stock nbgrader cannot run it and leaves it to a person "
                 "(no automatic score, needs manual grading); course-grader runs the instructor's test cell, "
                 "hidden tests included (THREAT_MODEL.md 1: 'Test cells edited or deleted in the submission are "
                 "replaced by the originals')")
ORDER_RESTORED = ("the student moved the answer cell below its test: stock nbgrader runs the cells as handed in, "
                  "so the test meets an undefined name and scores 0; course-grader puts answers back in the "
                  "course's order by grade_id (THREAT_MODEL.md, damaged submissions: 'reordered answers are put "
                  "back by grade_id')")
LOG_ROW = ((0.0, None, 1.0, False), (1.0, None, 1.0, False))
DELIBERATE: dict[tuple[str, str, str, str], tuple[Row, Row, str]] = {
    **{(student, "arith", "arith", "test_square_log"): (*LOG_ROW, STDERR)
       for student in ("solution", "partly", "notest", "edited", "added", "v44", "cleared")},
    ("reordered", "arith", "arith", "test_square_log"): (*LOG_ROW, ORDER_RESTORED + "; and " + STDERR),
    ("notest", "arith", "arith", "test_square"): ((None, None, 2.0, True), (2.0, None, 2.0, False), TEST_RESTORED),
    ("notest", "loading", "loading", "test_load"): ((None, None, 2.0, True), (2.0, None, 2.0, False), TEST_RESTORED),
    ("notest", "essay", "essay", "test_clip"): ((None, None, 1.0, True), (1.0, None, 1.0, False), TEST_RESTORED),
    ("reordered", "arith", "arith", "test_square"): ((0.0, None, 2.0, False), (2.0, None, 2.0, False), ORDER_RESTORED),
    ("reordered", "loading", "loading", "test_load"): ((0.0, None, 2.0, False), (2.0, None, 2.0, False),
                                                       ORDER_RESTORED),
    ("reordered", "loading", "loading", "test_total"): ((0.0, None, 1.0, False), (1.0, None, 1.0, False),
                                                        ORDER_RESTORED),
    ("reordered", "essay", "essay", "test_clip"): ((0.0, None, 1.0, False), (1.0, None, 1.0, False), ORDER_RESTORED),
}


def stock_release(root: Path) -> Path:
    """An nbgrader course root with every assignment of the corpus under source/, the header configured as
    IncludeHeaderFooter, released by stock nbgrader."""
    corpus = write_course(root.parent / "corpus-for-stock")
    for assignment in ASSIGNMENTS:
        shutil.copytree(corpus / assignment, root / "source" / assignment)
    shutil.copyfile(corpus / "header.ipynb", root / "source" / "header.ipynb")
    (root / "nbgrader_config.py").write_text(
        f"c = get_config()\nc.CourseDirectory.course_id = {COURSE_ID!r}\n"
        "c.IncludeHeaderFooter.header = 'source/header.ipynb'\n", encoding="utf-8")
    for assignment in ASSIGNMENTS:
        stock_nbgrader(root, "generate_assignment", assignment, "--force")
    return root


def write_submissions(release: Path, submitted: Path, exchange: Path) -> None:
    """Every variant of every assignment, into stock's ``submitted/<student>/<assignment>/`` and into an
    exchange's inbound folder for course-grader (scripts/compare_with_stock.py's write_submissions)."""
    from compare_with_stock import write_submissions as write_students

    for assignment in ASSIGNMENTS:
        write_students(FIXTURE / assignment, release / assignment, submitted, exchange, assignment)


def gradebook(root: Path) -> dict[tuple[str, str, str, str], Row]:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        return {(s.student.id, a, nb.name, g.name): (g.auto_score, g.manual_score, g.max_score,
                                                     bool(g.needs_manual_grade))
                for a in ASSIGNMENTS for s in gb.assignment_submissions(a) for nb in s.notebooks
                for g in nb.grades}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """(stock nbgrader's gradebook rows, course-grader's gradebook rows), each course graded once."""
    base = tmp_path_factory.mktemp("conformance")
    stock = stock_release(base / "stock")
    write_submissions(stock / "release", stock / "submitted", base / "exchange")
    for assignment in ASSIGNMENTS:
        stock_nbgrader(stock, "autograde", assignment, "--create")
    root = base / "course"
    assert main(["build", "--root", str(root), "--course", str(FIXTURE)]) == 0
    assert main(["release", "--root", str(root)]) == 0
    assert main(["collect", str(base / "exchange"), "--no-check-owner", "--root", str(root)]) == 0
    assert main(["autograde", "--root", str(root), "--quiet"]) == 0
    return gradebook(stock), gradebook(root)


def test_the_committed_corpus_is_what_the_module_writes(tmp_path):
    fresh = write_course(tmp_path / "course")
    files = sorted(p.relative_to(fresh) for p in fresh.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(FIXTURE) for p in FIXTURE.rglob("*") if p.is_file())
    for name in files:
        assert (fresh / name).read_bytes() == (FIXTURE / name).read_bytes(), \
            f"{name}: run `python tests/conformance_corpus.py` and commit"


def test_every_submission_has_a_row_for_every_grade_cell_in_both(graded):
    theirs, ours = graded
    assert sorted(theirs) == sorted(ours)
    students = {key[0] for key in theirs}
    assert students == set(VARIANTS)
    assert len(theirs) == len(VARIANTS) * 11  # arith 4 tests, loading 3 tests and a task, essay a test and 2 answers


def test_every_gradebook_row_is_stock_nbgraders_but_the_deliberate_ones(graded):
    theirs, ours = graded
    differing = {key: (theirs[key], ours.get(key)) for key in theirs if ours.get(key) != theirs[key]}
    undocumented = {key: rows for key, rows in differing.items() if key not in DELIBERATE}
    assert not undocumented, "rows (stock, course-grader) that differ without a documented reason:\n" + \
        "\n".join(f"  {key}: {rows}" for key, rows in sorted(undocumented.items()))


@pytest.mark.parametrize("key", sorted(DELIBERATE), ids=lambda key: "-".join(key[::3]))
def test_each_deliberate_difference_is_as_documented(graded, key):
    theirs, ours = graded
    stock_row, our_row, reason = DELIBERATE[key]
    assert (theirs[key], ours[key]) == (stock_row, our_row), reason


@pytest.mark.parametrize("begin", ["### BEGIN SOLUTION", "# BEGIN SOLUTION", "###BEGIN SOLUTION"])
def test_every_marker_spelling_is_stubbed_and_hidden_as_nbgrader_does(begin):
    """The finding this harness made: a submission that deleted a `###BEGIN SOLUTION` answer cell was graded with
    the instructor's solution put in its place (full marks, and the solution in the graded notebook), because
    the stub that replaces a deleted answer only knew `### BEGIN SOLUTION`. nbgrader takes any line holding the
    words as a marker."""
    from grader.engine.notebook.cells import stub_source, without_hidden
    from grader.engine.notebook.merge import stub

    end = begin.replace("BEGIN", "END")
    source = f"def f(x):\n    {begin}\n    return 42 * x\n    {end}"
    for text in (stub_source(source), stub(source)):
        assert "42" not in text and "raise NotImplementedError" in text, text
    hidden = begin.replace("SOLUTION", "HIDDEN TESTS")
    test = f"assert f(1) == 42\n{hidden}\nassert f(2) == 84\n{hidden.replace('BEGIN', 'END')}\nprint('ok')"
    assert without_hidden(test).splitlines() == ["assert f(1) == 42", "print('ok')"]


def test_the_corpus_exercises_what_it_claims(graded):
    """The rows that show each idiom was graded as meant (checked on stock's gradebook: the reference)."""
    theirs, _ = graded
    row = lambda student, a, cell: theirs[(student, a, a, cell)]  # noqa: E731
    for a, cell in (("arith", "test_square"), ("arith", "test_mean"), ("arith", "test_mean_hidden"),
                    ("loading", "test_load"), ("loading", "test_total"), ("essay", "test_clip")):
        assert row("solution", a, cell)[0] == row("solution", a, cell)[2] > 0, (a, cell)
        assert row("release", a, cell)[0] == 0, (a, cell)
    assert row("solution", "loading", "test_total_free")[2] == 0
    assert row("solution", "loading", "plot_task") == (None, None, 2.0, True)
    assert row("solution", "essay", "why") == (None, None, 3.0, True)
    assert row("release", "essay", "why") == (0.0, None, 3.0, False)  # handed in as released: 0, nothing to read
    assert row("partly", "arith", "test_square")[0] == 0 and row("partly", "arith", "test_mean")[0] == 1


def test_a_course_with_its_own_markers_is_graded_as_stock_nbgrader_grades_it(tmp_path):
    """A course may set nbgrader's region markers in its nbgrader_config.py (ClearSolutions.begin_solution_delimeter,
    ClearHiddenTests.begin_test_delimeter, ...). course-grader build used to ignore them: its release (nbgrader's
    default markers) left the hidden tests in the students' copy and stubbed each solution cell whole. scripts/compare_with_stock.py grades the course
    both ways (the kinds of submission the markers decide); the rows differ only where the corpus's do on purpose."""
    from compare_with_stock import compare
    from conformance_corpus import write_custom_course

    kinds = ("solution", "release", "partly", "noanswer", "notest")  # the kinds the markers decide (half the cost)
    found = compare(write_custom_course(tmp_path / "source"), "custom", tmp_path / "graded", variants=kinds)
    assert found["rows"] == len(kinds) * 2
    assert {key: rows[:2] for key, rows in found["differing"].items()} == {
        ("notest", "custom", "test_cube"): ((None, None, 2.0, True), (2.0, None, 2.0, False))}  # TEST_RESTORED
    assert not found["our_warnings"]
    released = (tmp_path / "graded" / "course" / "release" / "custom" / "custom.ipynb").read_text()
    assert "x ** 3" not in released and "-27" not in released and "raise NotImplementedError" in released
    solution = nbformat.read(tmp_path / "graded" / "course" / "autograded" / "solution" / "custom" / "custom.ipynb", 4)
    assert solution.cells[-1].source.count("x ** 3") == 1


def test_a_test_that_ends_in_its_score_is_given_that_score_as_stock_nbgrader_gives_it(tmp_path):
    """nbgrader scores a grade cell whose last line is a number with that number (nbgrader.utils.determine_grade):
    0.5 of 1 for a half-right answer; full points for a negative number; a value shown before hidden asserts is no
    score. course-grader gave every assert-only test that raised nothing its full points (the 'partly' student
    got 4 where stock gives 2.5). Both grade the course (scripts/compare_with_stock.py): every row equal."""
    from compare_with_stock import compare, gradebook as rows_of
    from conformance_corpus import write_partial_course

    kinds = ("solution", "release", "partly", "noanswer")
    found = compare(write_partial_course(tmp_path / "source"), "partial", tmp_path / "graded", variants=kinds)
    assert found["rows"] == len(kinds) * 4
    assert found["differing"] == {}
    assert not found["our_warnings"]
    theirs = rows_of(tmp_path / "graded" / "stock", "partial")
    assert [theirs[("partly", "partial", cell)][0] for cell in ("test_halves_score", "test_halves_hidden_score",
            "test_halves_negative", "test_halves_shown")] == [0.5, 0.5, 1.0, 0.0]
    assert theirs[("solution", "partial", "test_halves_shown")][0] == 1.0


def test_check_reads_a_course_with_its_own_markers_as_build_does(tmp_path, capsys):
    """`check --allow-asserts` gated the course's notebooks as written, where `## BEGIN ANSWER` and `## BEGIN SECRET
    TESTS` are no markers to nbgrader's defaults: it took the hand-graded answer cell `explain` as solution from
    top to bottom and failed it (m) for having no question (its `def` line), and its (d) looked for hidden tests
    it could not see. It now reads them as build copies them (the course's markers written as nbgrader's
    defaults), naming the course's own files."""
    from conformance_corpus import write_custom_course

    course = write_custom_course(tmp_path / "source")
    assert main(["check", str(course), "--allow-asserts", "--quiet"]) == 0, capsys.readouterr().out
    out = capsys.readouterr().out
    assert f"PASS  {course / 'custom' / 'custom.ipynb'}" in out, out
    assert "no solution code or hidden test text in the release" in out, out
    assert "ok   (m)" in out, out


def test_a_course_notebook_without_cell_ids_merges_without_a_warning():
    """Public courses' notebooks are often nbformat 4.0-4.4, without cell ids. The graded notebook course-grader
    assembles is nbformat 4.5: its cells copied from such a course notebook had no id, and nbformat printed a
    MissingIDFieldWarning into autograde's progress output for every submission."""
    import warnings

    from conformance_corpus import essay
    from grader.engine.notebook.merge import merge

    source = essay()
    assert source.nbformat_minor == 4 and not any("id" in cell for cell in source.cells)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nbformat.validate(merge(source, None).notebook)


def test_a_marker_nbgrader_does_not_read_is_warned_of():
    """nbgrader finds a region by the exact words of its markers: a test written under `### BEGIN HIDDEN TEST`
    (one letter short) or `# begin hidden tests` is released to every student. The gate warns of such lines
    (and of none of the spellings nbgrader reads)."""
    from conformance_corpus import arith, test
    from grader.engine.notebook.cells import marker_typos

    assert marker_typos(arith()) == []
    nb = arith()
    nb.cells += [test("typo1", "assert square(1) == 1\n### BEGIN HIDDEN TEST\nassert square(7) == 49\n"
                               "### END HIDDEN TEST", 1),
                 test("typo2", "# begin hidden tests\nassert square(8) == 64\n# end hidden tests", 1),
                 test("fine", "# the end of the hidden part is below\n###BEGIN HIDDEN TESTS\nassert 1\n"
                              "###END HIDDEN TESTS", 1)]
    found = marker_typos(nb)
    assert [line.split(":")[0] for line in found] == ["typo1", "typo1", "typo2", "typo2"], found


def test_zero_point_cells_of_an_nbgrader_course_pass_the_gate_with_allow_asserts():
    """nbgrader allows a 0-point test (a check the student runs for nothing: the corpus's test_total_free) and a
    0-point hand-graded answer; the gate (e, m) refused both even for a course brought in with --allow-asserts,
    which keeps nbgrader's rules. This course's own notebooks still need points."""
    from conformance_corpus import essay, loading, meta
    from grader.authoring.manual_cells import manual_cell_problems
    from grader.engine.notebook.cells import structure_problems

    assert structure_problems(loading(), header_required=False) == []
    assert any("worth no points" in p for p in structure_problems(loading()))
    nb = essay()
    nb.cells.append(nbformat.v4.new_markdown_cell("Anything to add? (not graded)"))
    nb.cells.append(nbformat.v4.new_markdown_cell("Nothing.", metadata=meta("extra", solution=True, grade=True,
                                                                                 points=0)))
    assert manual_cell_problems(nb, zero_points_ok=True) == []
    assert [p for p in manual_cell_problems(nb) if "worth no points" in p]


def test_an_assert_only_test_ending_in_its_score_passes_the_gate_with_allow_asserts():
    """Autograde now scores an assert-only test's last number as nbgrader does, so with --allow-asserts (an nbgrader
    course brought in) the gate (e) no longer fails the idiom; a test of this course's own notebooks still may not
    end in a number, and a test that records may not either (its number would be ignored)."""
    from conformance_corpus import partial
    from grader.engine.notebook.cells import structure_problems

    assert structure_problems(partial(), header_required=False) == []
    ends = [p for p in structure_problems(partial()) if "ends with an expression" in p]
    assert len(ends) == 4, ends
    recording = partial()
    recording.cells[2].source += "\nfrom grader.record import record\nrecord('k', 1.0)\nscore"
    assert [p.split(" ends")[0] for p in structure_problems(recording, header_required=False)] == [
        "graded test cell 'test_halves_score'"]


def test_a_course_stub_build_does_not_take_is_said(tmp_path):
    """A course's own ClearSolutions.code_stub / text_stub is not taken by build (its students get nbgrader's
    default stub): build says so, unless the course sets nbgrader's default (as feldlime's course does)."""
    from grader.authoring.nbcourse import config_literals

    config = tmp_path / "nbgrader_config.py"
    config.write_text(CONFIG_DEFAULT_STUB := "c = get_config()\n"
                      "c.ClearSolutions.code_stub = {'python': '# YOUR CODE HERE\\nraise NotImplementedError()'}\n")
    assert config_literals(config) == ({}, [])
    config.write_text(CONFIG_DEFAULT_STUB + "c.ClearSolutions.text_stub = 'Write here'\n")
    assert ["text_stub" in sentence for sentence in config_literals(config)[1]] == [True]


def test_the_gate_reads_a_course_notebook_without_cell_ids_without_a_warning():
    """The gate's stub walk-through and its reading of model answers put a cell of the course notebook into a new
    (nbformat 4.5) notebook: for a 4.4 notebook, without ids, nbformat printed a MissingIDFieldWarning into
    `check`'s output."""
    import warnings

    from conformance_corpus import essay
    from grader.authoring.manual_cells import manual_cell_problems
    from grader.engine.notebook.variants import stubbed_walkthrough

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert manual_cell_problems(essay()) == []
        assert "max(lo, min(x, hi))" not in str(stubbed_walkthrough(essay()).cells[:3])


def test_a_solution_line_the_course_also_hands_out_is_no_leak():
    """219project/num_meth_nbgrader's LU gives a naive LU factorisation in a locked code cell and asks for the
    pivoted one: the solution repeats lines of the given code (`u = a.copy()`), which the gate (d) took for a
    solution leaked into the release. A solution line in a hint (markdown) is still one."""
    from conformance_corpus import answer, notebook, plain
    from grader.engine.notebook.cells import stub
    from grader.running.gate import leaks

    given = "def naive(a):\n    u = a.copy()\n    return u"
    source = notebook([plain("given", given), answer("pivoted", "def pivoted(a):\n    ### BEGIN SOLUTION\n"
                                                                "    u = a.copy()\n    return u[::-1]\n"
                                                                "    ### END SOLUTION")])
    assert leaks(source, stub(source)) == []
    source.cells.insert(1, nbformat.v4.new_markdown_cell("Hint, the last line:\n\n    return u[::-1]"))
    assert leaks(source, stub(source)) == ["solution line in the release: 'return u[::-1]'"]


def test_a_cell_of_no_nbgrader_kind_needs_no_grade_id():
    """`nbgrader update` (which nbgrader's own demo course, jhamrick/nbgrader-demo, needs) gives every plain cell
    nbgrader metadata with grade, solution and locked all false and no grade_id; nbgrader's validator asks a
    grade_id only of a grade, solution or locked cell. The gate (e) refused each such cell."""
    from conformance_corpus import arith
    from grader.engine.notebook.cells import structure_problems

    nb = arith()
    for cell in nb.cells:
        cell.metadata.setdefault("nbgrader", {"grade": False, "locked": False, "schema_version": 3,
                                              "solution": False})
    assert structure_problems(nb, header_required=False) == []
    nb.cells[1].metadata.nbgrader["locked"] = True
    assert structure_problems(nb, header_required=False) == ["cell 1 has nbgrader metadata but no grade_id"]


def test_a_hand_graded_answer_without_a_model_answer_is_a_warning_for_an_nbgrader_course():
    """nbgrader needs no model answer for a hand-graded cell (an open question: phaustin/eoas_nbgrader's Assign_2
    has one); the gate (m) failed it even with --allow-asserts. For a course brought in it is now a warning that
    names the cell; this course's own notebooks still need a model answer."""
    from conformance_corpus import essay
    from grader.authoring.manual_cells import manual_cell_problems, manual_cell_warnings
    from grader.engine.notebook.cells import TEXT_STUB

    nb = essay()
    nb.cells[-1].source = TEXT_STUB
    assert manual_cell_problems(nb, zero_points_ok=True) == []
    assert [w.split(" has")[0] for w in manual_cell_warnings(nb)] == ["hand-graded answer 'why'"]
    assert [p.split(" has")[0] for p in manual_cell_problems(nb)] == ["hand-graded answer 'why'"]
    assert manual_cell_warnings(essay()) == []
