"""The grader's pure parts, no kernels: notebook structure, stubs, release leaks, collect, export."""
import csv
import json
import shutil
import zipfile
from pathlib import Path

import nbformat
import pytest

from classroom import FIXTURE as GOOD
from classroom import released_course
from grader.errors import GraderError
from grader.authoring.assembly import build, check_root, release
from grader.engine.notebook import cells as nbs
from grader.engine.notebook import variants
from grader.engine.notebook.cells import HIDDEN_NOTE, strip_hidden
from grader.intake.collect import check_student_id, collect
from grader.running.gate import leaks

LEAKY = Path(__file__).parent / "fixtures" / "grader" / "leaky" / "01_leaky.ipynb"


@pytest.fixture(scope="module")
def released(tmp_path_factory):
    """The fixture course built and released by nbgrader's generate_assignment (read only)."""
    return released_course(tmp_path_factory.mktemp("course") / "a course with spaces")


@pytest.fixture
def course(released, tmp_path):
    """A fresh copy of the released course, for a test that collects into it."""
    return shutil.copytree(released, tmp_path / "a course with spaces")


def test_exercises_pair_tests_with_the_solution_cells_before_them():
    """Each graded test cell belongs to the solution cells since the previous test cell."""
    found = nbs.exercises(nbs.read_notebook(GOOD))
    assert [(e.solution_ids, e.test_ids, e.points) for e in found] == [
        (("scale",), ("test_scale",), 2.0), (("pairwise",), ("test_pairwise",), 3.0),
        (("mean_of",), ("test_mean_of",), 1.0)]


def test_structure_problems_catch_duplicate_ids_and_wrong_totals():
    nb = nbs.read_notebook(GOOD)
    assert nbs.structure_problems(nb) == []
    nb.cells[0].source = nb.cells[0].source.replace("Total points: 6", "Total points: 7")
    nbs.exercises(nb)[1]  # still parses
    nb.cells[-1].metadata.nbgrader["grade_id"] = "test_scale"
    problems = " ".join(nbs.structure_problems(nb))
    assert "'Total points: 7'" in problems and "add up to 6" in problems
    assert "grade_id 'test_scale' is used by cells" in problems


def test_stub_clears_only_the_chosen_exercise_as_nbgrader_does():
    nb = nbs.read_notebook(GOOD)
    stubbed = nbs.stub(nb, {"pairwise"})
    sources = {nbs.nbgrader_meta(c).get("grade_id"): c.source for c in stubbed.cells}
    assert "raise NotImplementedError()" in sources["pairwise"] and "diff" not in sources["pairwise"]
    assert "return x * factor" in sources["scale"]
    assert "return x * factor" in nbs.read_notebook(GOOD).cells[3].source  # the input is untouched


def test_truncate_keeps_cells_up_to_the_exercise():
    nb = nbs.read_notebook(GOOD)
    first = nbs.exercises(nb)[0]
    assert variants.truncate(nb, first.last_cell).cells[-1].metadata.nbgrader["grade_id"] == "test_scale"


def test_release_has_no_solutions_or_hidden_tests(released):
    """Gate (d) on a correct notebook: nbgrader's release leaks nothing."""
    source = nbs.read_notebook(GOOD)
    out = nbs.read_notebook(released / "release" / "01_fixture" / "01_fixture.ipynb")
    assert leaks(source, out) == []
    assert "BEGIN" not in json.dumps(out)


def test_gate_finds_a_solution_leaked_into_markdown(tmp_path):
    """Gate (d): a hint that spells out the solution is reported."""
    build(tmp_path / "c", LEAKY)
    out = nbs.read_notebook(release(tmp_path / "c")[0])
    assert leaks(nbs.read_notebook(LEAKY), out) == ["solution line in the release: 'return x * factor'"]


def test_course_directory_inside_the_sources_is_refused(tmp_path):
    (tmp_path / "course").mkdir()
    with pytest.raises(GraderError, match="inside the source folder"):
        check_root(tmp_path / "course" / "build", tmp_path / "course")


@pytest.mark.parametrize("bad", ["../x", "..", ".hidden", "a/b", "a\\b", "", "x*", "tab\there"])
def test_student_ids_that_could_escape_are_refused(bad):
    with pytest.raises(GraderError, match="refusing student id"):
        check_student_id(bad)


@pytest.mark.parametrize("good", ["Zoë Ñ", "anna maria", "学生42", "o'brien"])
def test_student_ids_with_spaces_and_unicode_are_accepted(good):
    assert check_student_id(good) == good


def test_collect_folders_zips_renamed_and_unreadable(course, tmp_path):
    inbox = tmp_path / "inbox"
    (inbox / "Zoë Ñ" / "deep").mkdir(parents=True)
    (inbox / "Zoë Ñ" / "deep" / "01_fixture.ipynb").write_bytes(GOOD.read_bytes())
    (inbox / "renamer").mkdir()
    (inbox / "renamer" / "my homework.ipynb").write_bytes(GOOD.read_bytes())
    (inbox / "broken").mkdir()
    (inbox / "broken" / "01_fixture.ipynb").write_text("{not json")
    with zipfile.ZipFile(inbox / "zipped student.zip", "w") as zf:
        zf.write(GOOD, "hw/01_fixture.ipynb")
    with zipfile.ZipFile(inbox / "..evil.zip", "w") as zf:
        zf.write(GOOD, "01_fixture.ipynb")
    with zipfile.ZipFile(inbox / "slip.zip", "w") as zf:
        zf.write(GOOD, "../../01_fixture.ipynb")
    report = collect(course, inbox)
    assert sorted(i.student for i in report.imported) == sorted(["broken", "renamer", "zipped student", "Zoë Ñ"])
    rejected = {r.where: r.reason for r in report.rejected}
    assert "is not a readable notebook" in rejected["broken/01_fixture.ipynb"]
    assert "outside the archive" in rejected["slip.zip"]
    submitted = course / "submitted"
    assert (submitted / "renamer" / "01_fixture" / "01_fixture.ipynb").exists()
    assert (submitted / "broken" / "01_fixture" / "rejected.json").exists()
    assert (submitted / "Zoë Ñ" / "01_fixture" / "timestamp.txt").read_text().endswith("UTC")
    assert not (tmp_path / "01_fixture.ipynb").exists() and not (course / "01_fixture.ipynb").exists()


def test_collect_reads_an_nbgrader_exchange(course, tmp_path):
    inbound = tmp_path / "exchange" / "d2lite" / "inbound"
    for stamp, text in [("2026-01-01 10:00:00.000000 UTC", "old"), ("2026-01-02 10:00:00.000000 UTC", "new")]:
        folder = inbound / f"eve+01_fixture+{stamp}+abc"
        folder.mkdir(parents=True)
        nb = nbs.read_notebook(GOOD)
        nb.metadata["which"] = text
        nbformat.write(nb, str(folder / "01_fixture.ipynb"))
        (folder / "timestamp.txt").write_text(stamp)
    (inbound / "..+01_fixture+2026-01-01 10:00:00 UTC+x").mkdir()
    # eve's folders belong to whoever runs the tests: an exchange copied without its owners
    report = collect(course, tmp_path / "exchange", check_owner=False)
    assert any("refusing student id '..'" in r.reason for r in report.rejected)
    assert [(i.student, i.assignment) for i in report.imported] == [("eve", "01_fixture")]
    kept = nbs.read_notebook(course / "submitted" / "eve" / "01_fixture" / "01_fixture.ipynb")
    assert kept.metadata["which"] == "new", "the latest submission wins"


def test_strip_hidden_keeps_visible_lines_only():
    source = "a = 1\n### BEGIN HIDDEN TESTS\nsecret = 2\n### END HIDDEN TESTS\nb = 3"
    assert strip_hidden(source) == f"a = 1\n{HIDDEN_NOTE}\nb = 3"


def test_export_uses_nbgrader_csv_columns(released, tmp_path):
    from grader.results.export import export_csv

    path = export_csv(released, tmp_path / "grades.csv")
    header = next(csv.reader(path.open()))
    assert header == ["assignment", "duedate", "timestamp", "student_id", "last_name", "first_name", "email",
                      "raw_score", "late_submission_penalty", "score", "max_score", "awaiting_manual_grading",
                      "under_review"]


def test_student_lab_gets_released_copies_and_keeps_their_work(released, tmp_path):
    """`make lab` opens copies of the release (no solutions), and never overwrites a student's work."""
    from grader.lab import student_copies

    target = tmp_path / "student"
    assert student_copies(released, GOOD.parent, target) == [target / "01_fixture"]
    copy = target / "01_fixture" / "01_fixture.ipynb"
    assert "return x * factor" not in copy.read_text() and "NotImplementedError" in copy.read_text()
    copy.write_text("my work")
    assert student_copies(released, GOOD.parent, target) == []
    assert copy.read_text() == "my work"


def test_stubbed_walkthrough_stubs_each_exercise_then_restores_it():
    """Gate (c) in one kernel: stub, renamed tests, then the real solution (tests not repeated)."""
    walk = variants.stubbed_walkthrough(nbs.read_notebook(GOOD))
    kinds = [("test:" + nbs.nbgrader_meta(c)["grade_id"]) if nbs.is_test(c) else
             ("solution:" + nbs.nbgrader_meta(c)["grade_id"]) if nbs.is_solution(c) else
             ("stub" if "NotImplementedError" in c.source else "other") for c in walk.cells if c.cell_type == "code"]
    assert kinds == ["other", "stub", "test:gate-stubbed:test_scale", "solution:scale",
                     "stub", "test:gate-stubbed:test_pairwise", "solution:pairwise",
                     "stub", "test:gate-stubbed:test_mean_of", "solution:mean_of"]
    nbformat.validate(walk)


def test_a_test_cell_ending_in_an_expression_is_flagged():
    """Its value would show as Out[n], and stock nbgrader reads a number there as partial credit."""
    from grader.engine.notebook.cells import ends_with_expression

    assert ends_with_expression('record("k", f(x))\n### BEGIN HIDDEN TESTS\nrecord("h", f(y))\n### END HIDDEN TESTS')
    assert ends_with_expression("x = 1\nx")
    assert not ends_with_expression('record("k", f(x))\nprint("All checks passed.")')
    assert not ends_with_expression('"""Only a docstring."""')
    nb = nbs.read_notebook(GOOD)
    test_cell = next(c for c in nb.cells if nbs.is_test(c))
    test_cell.source = test_cell.source.rsplit("\n", 1)[0]  # drop the final print()
    assert any("ends with an expression" in p for p in nbs.structure_problems(nb))


def test_a_test_cell_ending_in_an_assert_call_or_a_comparison_is_not_flagged():
    """Public nbgrader courses end tests with ``assert_allclose(...)`` (returns None: nothing is shown) or a
    comparison (``True`` is no number, so stock nbgrader gives full marks, not partial credit): fine."""
    from grader.engine.notebook.cells import ends_with_a_number

    for fine in ("s = 10 / t\nassert_allclose(s, 2.0, rtol=1e-2)", "np.testing.assert_array_equal(a, b)",
                 "assert_equal(f(1), 2)", "mean([4, 6]) == 5", "not failed", "a == 1 and b == 2"):
        assert not ends_with_a_number(fine), fine
    for number in ("x = 1\nx", "np.sum(a)", "record('k', f(x))", "score / 2"):
        assert ends_with_a_number(number), number
    nb = nbs.read_notebook(GOOD)
    test_cell = next(c for c in nb.cells if nbs.is_test(c))
    test_cell.source = test_cell.source.rsplit("\n", 1)[0] + "\nassert_allclose(1.0, 1.0)"
    assert not any("ends with an expression" in p for p in nbs.structure_problems(nb))
