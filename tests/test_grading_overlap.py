"""Grading reads the answers' source while the kernel runs the notebook, not after it (issue 32).

The reading (:mod:`grader.engine.answer_bounds`, a child process) needs only the cells' text, which is
fixed before the kernel starts; started first, it costs a submission no wall time of its own. Here the
kernel's run is replaced by a stand-in that waits for the reading to have started: grading that reads
only after the run never gets there. No kernel starts; the wait is a safety net, not a measurement.
"""
from __future__ import annotations

import threading
from pathlib import Path

import grader.engine.execute as execute
from grader.engine.answer_rules import Reading
from grader.engine.references import References

SOURCE = Path(__file__).resolve().parent.parent / "course" / "01_tensors.ipynb"
SAFETY_NET_S = 60.0


def test_answers_are_read_while_the_notebook_runs(monkeypatch, tmp_path):
    reading_started = threading.Event()
    seen = {}

    def reading(cells, *args, **kwargs):
        reading_started.set()
        seen["cells"] = cells
        return {}

    def kernel_run(nb, roles, workdir, limits, **kwargs):
        seen["read during the run"] = reading_started.wait(SAFETY_NET_S)
        return {}, []

    monkeypatch.setattr(execute, "bounded_readings", reading)
    monkeypatch.setattr(execute, "run_notebook", kernel_run)
    result = execute.grade(SOURCE, SOURCE, References({}), workdir=tmp_path / "work", unsafe=True)
    assert seen["read during the run"], "the answers' source was read only after the kernel's run"
    assert any(role == "answer" for role, _ in seen["cells"]), "the reading did not receive the answer cells"
    assert result.tests, "grading returned no tests"


def test_a_reading_finding_still_reaches_the_verdict(monkeypatch, tmp_path):
    """A finding of the overlapped reading flags the test it belongs to, as when it read after the run."""
    def reading(cells, *args, **kwargs):
        first_test = next(i for i, (role, _) in enumerate(cells) if role == "test")
        first_answer = next(i for i, (role, _) in enumerate(cells) if role == "answer")
        return {first_test: ([first_answer], Reading(["a finding for a person"]))}

    def kernel_run(nb, roles, workdir, limits, **kwargs):
        return {i: execute.CellRun("ok") for i, role in enumerate(roles) if role.kind == "test"}, []

    monkeypatch.setattr(execute, "bounded_readings", reading)
    monkeypatch.setattr(execute, "run_notebook", kernel_run)
    monkeypatch.setattr(execute, "_verdict", lambda gid, points, *rest: execute.TestResult(gid, points, points, "passed", "ok."))
    result = execute.grade(SOURCE, SOURCE, References({}), workdir=tmp_path / "work", unsafe=True)
    flagged = [t.grade_id for t in result.tests.values() if t.review]
    assert len(flagged) == 1, f"expected the one test with a finding flagged for review, got {flagged}"
