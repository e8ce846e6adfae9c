"""The course quality gate catches a vacuous test and a test that records nothing.

(A leaked solution is caught without running kernels: see test_grader_course.py. The gate
passing on good notebooks is exercised by `make test` on the real course.)
"""
from pathlib import Path

import pytest

from grader.cli import main
from grader.running.gate import check_notebooks

FIXTURES = Path(__file__).parent / "fixtures" / "grader"


@pytest.fixture(scope="module")
def reports():
    paths = [FIXTURES / "vacuous" / "01_vacuous.ipynb", FIXTURES / "norecord" / "01_norecord.ipynb"]
    return {r.notebook.parent.name: {c.name: c for c in r.checks} for r in check_notebooks(paths, workers=2)}


def test_a_test_that_passes_on_the_stub_is_flagged(reports):
    checks = reports["vacuous"]
    assert checks["a"].ok, checks["a"].detail
    assert not checks["b"].ok and "test_scale earns 2" in checks["b"].detail
    assert not checks["c:test_scale"].ok and "does not depend on the student's answer" in checks["c:test_scale"].detail
    assert checks["c:test_pairwise"].ok, "an honest test of the same notebook passes (c)"
    assert checks["d"].ok and checks["e"].ok


def test_a_test_that_records_nothing_fails_the_gate_by_default(reports):
    """An assert-only test (stock nbgrader's kind) is graded as nbgrader grades it, but this course's gate
    refuses it (f) unless run with --allow-asserts: its points would rest on the kernel's word."""
    checks = reports["norecord"]
    assert checks["reference"].ok and checks["a"].ok and checks["b"].ok, checks["reference"].detail
    assert not checks["f"].ok and "'test_scale': there is no hidden part" in checks["f"].detail
    assert "test_scale (2 points)" in checks["kernel's word"].detail
    assert "2 on the kernel's own word" in checks["who decides"].detail


def test_check_exits_non_zero_on_a_bad_notebook_without_running_it(capsys, tmp_path):
    """A header that announces the wrong total fails (e); the exit code says so."""
    import nbformat

    nb = nbformat.read(str(FIXTURES / "norecord" / "01_norecord.ipynb"), as_version=4)
    nb.cells = nb.cells[:1]  # no exercises left: header says 2 points, tests add up to 0
    path = tmp_path / "01_empty.ipynb"
    nbformat.write(nb, str(path))
    assert main(["check", str(path), "--quiet"]) == 1
    assert "'Total points: 2' but the test cells add up to 0" in capsys.readouterr().out


def test_thorough_mode_flags_the_vacuous_test_too():
    """--thorough: one kernel per exercise, each on a copy cut after that exercise."""
    report, = check_notebooks([FIXTURES / "vacuous" / "01_vacuous.ipynb"], workers=2, thorough=True)
    checks = {c.name: c for c in report.checks}
    assert not checks["c:test_scale"].ok and checks["c:test_pairwise"].ok


def test_full_marks_and_zero_runs_grade_the_notebook_as_a_students_is_graded(tmp_path):
    """(a) and (b) hand the whole source and release to the engine, as autograde does, with the reference run's
    values and hash: the engine stops after the last graded cell by itself (tests/test_engine_api.py::
    test_cells_after_the_last_graded_cell_are_not_run_while_grading), so the gate's runs are what a student's
    grading runs."""
    import nbformat

    from grader.engine.notebook import cells as nbs
    from grader.engine.isolation.sandbox import Limits
    from grader.running.gate import GateReport, _Plan, _submit_variants
    from grader.running.jobs import TrustedNotebook

    source = nbs.read_notebook(FIXTURES / "course" / "01_fixture.ipynb")
    source.cells.append(nbformat.v4.new_code_cell("print('after the last test')"))
    path = nbs.write_notebook(source, tmp_path / "01_fixture.ipynb")
    nbs.write_notebook(nbs.stub(source), tmp_path / "release.ipynb")
    plan = _Plan(GateReport(path), source, tmp_path, TrustedNotebook.from_source(path))

    class Runner:
        def submit(self, fn, job):
            return job

    references = {"cells": {}, "source_sha256": "the reference run's"}
    _submit_variants(Runner(), plan, references, Limits(), unsafe=False, thorough=False)
    for name in ("a", "b"):
        job = plan.jobs[name]
        assert job.assignment is plan.assignment, name  # the source as the reference run read it
        assert job.references == references, name
        handed_in = nbformat.reads(job.submission.decode(), as_version=4)
        assert handed_in.cells[-1].source == "print('after the last test')", name



def test_a_cell_that_times_out_fails_the_gate_even_when_every_test_passes(tmp_path):
    """The grader interrupted an unmarked cell at the cell time limit and the tests after it still passed, so
    the scores look right (full marks on the solution, zero on the release); but every student's grading
    would wait out the limit there: (a) and (b) fail and say what the grader reported."""
    from grader.engine.notebook import cells as nbs
    from grader.engine.verdict.result import Outcome, TestResult
    from grader.running.gate import GateReport, _collect_variants, _Plan

    source = nbs.read_notebook(FIXTURES / "course" / "01_fixture.ipynb")
    tests = [(nbs.nbgrader_meta(c)["grade_id"], nbs.nbgrader_meta(c)["points"])
             for c in source.cells if nbs.is_test(c)]
    timed_out = ["cell 9 timed out after 300 s"]

    def result(earned: bool, problems: list[str]) -> Outcome:
        return Outcome("", "", 0, 0, [
            TestResult(gid, points, points if earned else 0, "passed" if earned else "failed", "")
            for gid, points in tests], problems)

    class Runner:
        def result(self, job):
            return job

    for problems, ok in ((timed_out, False), ([], True)):  # the second: the same scores without the problem
        plan = _Plan(GateReport(tmp_path / "01_fixture.ipynb"), source, tmp_path)
        plan.jobs = {"a": result(True, problems), "b": result(False, problems)}
        _collect_variants(Runner(), plan, say=lambda msg: None)
        checks = {c.name: c for c in plan.report.checks}
        assert checks["a"].ok is ok and checks["b"].ok is ok, checks
        assert "solution scores 6/6" in checks["a"].detail and "release scores 0/6" in checks["b"].detail
        assert ("the grader reported: cell 9 timed out after 300 s" in checks["a"].detail) is not ok


def test_a_solution_cell_that_crashes_after_the_last_test_fails_the_reference_check(tmp_path):
    """No student's grading runs the cells after the last graded test, so the reference run, which runs them all,
    is where the gate says that one of them crashed (or timed out, or printed too much)."""
    from grader.running.gate import GateReport, _reference_check

    crashed = ["cell 40: the kernel exited (exit status 3); later cells were not run"]
    for problems, ok in ((crashed, False), ([], True)):
        report = GateReport(tmp_path / "01_fixture.ipynb")
        _reference_check(report, {"cells": {}, "problems": problems}, None)
        check = {c.name: c for c in report.checks}["reference"]
        assert check.ok is ok, check
        assert ("cell 40: the kernel exited (exit status 3)" in check.detail) is not ok, check.detail
    report = GateReport(tmp_path / "01_fixture.ipynb")
    _reference_check(report, None, "ReferenceRunError: test_scale did not pass with the solution")
    assert [(c.ok, c.detail) for c in report.checks] == [(False, "ReferenceRunError: test_scale did not pass with "
                                                                  "the solution")]
