"""A finding of the answers' reading (:mod:`grader.engine.reading.bounds`) reaches its test's verdict.

The reading ran in a thread beside the kernel for a while (issue 32); in a Dask worker that raced CPython
3.11's parser state ("SystemError: AST constructor recursion depth mismatch", a student graded as "could not
be graded"), so it runs after the kernel again. No kernel starts here.
"""
from __future__ import annotations

from pathlib import Path

from grader.engine import grade as engine_grade
from grader.engine.reading.rules import Reading
from grader.engine.verdict.references import References

SOURCE = Path(__file__).resolve().parent.parent / "course" / "01_tensors.ipynb"


def test_a_reading_finding_still_reaches_the_verdict(monkeypatch, tmp_path):
    """A finding of the reading flags the test it belongs to."""
    def reading(cells, *args, **kwargs):
        first_test = next(i for i, (role, _) in enumerate(cells) if role == "test")
        first_answer = next(i for i, (role, _) in enumerate(cells) if role == "answer")
        return {first_test: ([first_answer], Reading(["a finding for a person"]))}

    def kernel_run(nb, roles, workdir, limits, **kwargs):
        return {i: engine_grade.CellRun("ok") for i, role in enumerate(roles) if role.kind == "test"}, []

    monkeypatch.setattr(engine_grade, "bounded_readings", reading)
    monkeypatch.setattr(engine_grade, "run_notebook", kernel_run)
    monkeypatch.setattr(engine_grade, "_verdict", lambda gid, points, *rest: engine_grade.TestResult(gid, points, points, "passed", "ok."))
    result = engine_grade.grade(SOURCE, SOURCE, References({}), workdir=tmp_path / "work", unsafe=True)
    flagged = [t.grade_id for t in result.tests.values() if t.review]
    assert len(flagged) == 1, f"expected the one test with a finding flagged for review, got {flagged}"
