"""Partial credit: each recorded key of a test cell may carry a share of the cell's points.

The fixture (tests/fixtures/grader/partial/01_partial.ipynb): ``test_stats`` (3 points) records the
mean of a vector (share 1) and its largest entry (share 2); ``test_double`` (2 points) records a
value that does not depend on the answer (the input's dtype, share 1) next to the doubled values
(share 1), which the gate must refuse. Kernels: one reference run and five submissions (engine),
one gate run (reference, solution, release, stubbed walk-through).
"""
from __future__ import annotations

import sys
from pathlib import Path

import nbformat
import pytest

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "engine"))
from submissions import grade_all, submission, write  # noqa: E402

from grader.authoring.graded_cells import graded_cell_problems  # noqa: E402
from grader.engine.grade import run_reference  # noqa: E402
from grader.record import record  # noqa: E402

SOURCE = Path(__file__).parent / "fixtures" / "grader" / "partial" / "01_partial.ipynb"

ANSWERS = {
    "mean_only": "def vec_mean(x):\n    return x.mean()\n\n\ndef vec_max(x):\n    return x.min()",
    "neither": "def vec_mean(x):\n    return x.sum()\n\n\ndef vec_max(x):\n    return x.min()",
    # right max, wrong mean; every record() of the test is made to claim the cell's 3 points
    "max_only_claiming_every_point": (
        "import grader.record\n\noriginal_record = grader.record.record\n\n\n"
        "def record_claiming_every_point(key, value, what='', **options):\n"
        "    options['points'] = 3\n    return original_record(key, value, what, **options)\n\n\n"
        "grader.record.record = record_claiming_every_point\n\n\n"
        "def vec_mean(x):\n    return x.sum()\n\n\ndef vec_max(x):\n    return x.max()"),
    # the hidden input has a negative entry, the visible one has none
    "stops_after_mean": ("def vec_mean(x):\n    return x.mean()\n\n\n"
                         "def vec_max(x):\n    if (x < 0).any():\n"
                         "        raise ValueError('an edge case this code does not handle')\n    return x.max()"),
    # on the hidden input: records the right "max" itself, then stops the test before it records "max"
    "forges_max_then_stops": ("from grader.record import record\n\n\ndef vec_mean(x):\n"
                              "    if (x < 0).any():\n"
                              "        record('max', x.max(), 'the largest entry of a vector')\n"
                              "        raise ValueError('stop before the test records max')\n"
                              "    return x.mean()\n\n\n"
                              "def vec_max(x):\n    return x.max()"),
}


def _test_cell(source: str, points: float = 3):
    cell = nbformat.v4.new_code_cell(source)
    cell.metadata["nbgrader"] = {"grade": True, "grade_id": "test_t", "points": points, "solution": False,
                                 "locked": True, "schema_version": 3}
    return cell


def _hidden(*records: str) -> str:
    return ("print('visible')\n### BEGIN HIDDEN TESTS\nfrom grader.record import record\n"
            + "\n".join(records) + "\n### END HIDDEN TESTS\nprint('done')")


# -- the rules, read from the source (no kernel) ---------------------------------------------------

def test_shares_on_every_key_adding_up_to_the_cells_points_are_accepted():
    cell = _test_cell(_hidden('record("a", 1, "a", points=1)', 'record("b", 2, "b", points=2.0)'))
    assert graded_cell_problems(cell) == []
    assert graded_cell_problems(_test_cell(_hidden('record("a", 1, "a")', 'record("b", 2, "b")'))) == []


@pytest.mark.parametrize("records, points, words", [
    (['record("a", 1, "a", points=1)', 'record("b", 2, "b")'], 3, "1 of its 2 record() calls give no points="),
    (['record("a", 1, "a", points=1)', 'record("b", 2, "b", points=1)'], 3, "add up to 2, but the cell is worth 3"),
    (['record("a", 1, "a", points=0.1)', 'record("b", 2, "b", points=0.2)'], 0.31, "add up to 0.3, but"),
    (['record("a", 1, "a", points=share)', 'record("b", 2, "b", points=2)'], 3, "not a number literal >= 0"),
    (['record("a", 1, "a", points=-1)', 'record("b", 2, "b", points=4)'], 3, "not a number literal >= 0"),
    (['for k in "ab":\n    record(k, 1, "a", points=1.5)'], 3, "inside a loop or function"),
])
def test_shares_that_break_a_rule_are_refused_with_what_to_change(records, points, words):
    problems = graded_cell_problems(_test_cell(_hidden(*records), points))
    assert any(words in p and "test cell 'test_t'" in p for p in problems), problems


def test_shares_that_add_up_within_rounding_are_accepted():
    cell = _test_cell(_hidden('record("a", 1, "a", points=0.1)', 'record("b", 2, "b", points=0.2)'), 0.3)
    assert graded_cell_problems(cell) == []


@pytest.mark.parametrize("points", [-1, True, "1", float("nan")])
def test_record_refuses_a_share_that_is_not_a_number_at_least_zero(points):
    with pytest.raises(ValueError, match="points= as a number >= 0"):
        record("k", 1, "k", points=points)


# -- stock nbgrader gives the same partial score (real nbgrader.utils.determine_grade, no kernel) --

def _stock_cell(payloads: list, error: bool = False):
    from grader.record import MIME_TYPE

    cell = _test_cell("")
    cell.outputs = [nbformat.v4.new_output("display_data", data={MIME_TYPE: p}) for p in payloads]
    if error:
        cell.outputs.append(nbformat.v4.new_output("error", ename="ValueError", evalue="x", traceback=[]))
    return cell


def _payload(key, value, **extra):
    from grader.values import encode

    return {"key": key, "value": encode(value), "what": key, "rtol": 0.0, "atol": 0.0, **extra}


@pytest.mark.parametrize("payloads, error, score", [
    ([_payload("mean", 2.0), _payload("max", 5.0)], False, 3.0),
    ([_payload("mean", 2.0), _payload("max", 4.0)], False, 1.0),
    ([_payload("mean", 9.0, points=3), _payload("max", 5.0, points=3)], False, 2.0),  # claims ignored
    ([_payload("mean", 9.0), _payload("max", 4.0)], False, 0.0),
    ([_payload("mean", 2.0)], True, 1.0),                  # stopped after the mean
    ([_payload("max", 5.0)], True, 0.0),                   # "max" before "mean" was recorded: not the test's
])
def test_stock_nbgrader_scores_the_same_shares(payloads, error, score):
    from nbgrader.utils import determine_grade

    from grader.stock import CheckRecords
    from grader.values import encode

    expected = {"mean": {"value": encode(2.0), "what": "the mean", "rtol": 0.0, "atol": 0.0, "points": 1.0},
                "max": {"value": encode(5.0), "what": "the largest entry", "rtol": 0.0, "atol": 0.0, "points": 2.0}}
    cell = _stock_cell(payloads, error)
    CheckRecords.check_cell(cell, expected)
    assert determine_grade(cell) == (score, 3.0), cell.outputs


# -- graded by the engine (one reference run, five submissions) ------------------------------------

@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("partial")
    refs = tmp / "refs.json"
    run_reference(SOURCE, workdir=tmp / "reference").save(refs)
    jobs = {name: (SOURCE, write(submission(SOURCE, {"stats": code}, solved=True), tmp / f"{name}.ipynb"))
            for name, code in ANSWERS.items()}
    return refs, grade_all(jobs, {SOURCE: refs}, tmp, workers=2)


def test_the_reference_file_keeps_the_shares_it_recorded(graded):
    from grader.engine.verdict.references import References

    cells = References.load(graded[0]).cells
    assert {k: v["points"] for k, v in cells["test_stats"].items()} == {"mean": 1.0, "max": 2.0}


def test_one_right_key_earns_its_share_and_the_reason_names_the_other(graded):
    test = graded[1]["mean_only"].tests["test_stats"]
    assert (test.status, test.points, test.max_points) == ("failed", 1.0, 3.0), test
    assert "the largest entry of a vector ('max')" in test.reason and "the mean" not in test.reason, test.reason
    assert test.failed_keys == ["max"]


def test_no_right_key_earns_nothing_and_each_failed_check_is_named(graded):
    test = graded[1]["neither"].tests["test_stats"]
    assert (test.status, test.points) == ("failed", 0.0), test
    assert "the mean of a vector ('mean')" in test.reason and "the largest entry of a vector ('max')" in test.reason


def test_a_share_claimed_in_the_students_kernel_changes_nothing(graded):
    """Every payload of this run says points=3: the reference's share of "max" (2) is what counts."""
    test = graded[1]["max_only_claiming_every_point"].tests["test_stats"]
    assert (test.status, test.points) == ("failed", 2.0), test


def test_a_test_that_stops_keeps_the_shares_recorded_before_it_stopped(graded):
    test = graded[1]["stops_after_mean"].tests["test_stats"]
    assert (test.status, test.points) == ("error", 1.0), test
    assert test.reason.startswith("Partly right: 1 of 2 hidden checks passed.") and "ValueError" in test.reason


def test_a_key_the_students_code_records_before_stopping_the_test_earns_nothing(graded):
    """The hidden part never reached "max": a "max" payload can only be the student's own."""
    test = graded[1]["forges_max_then_stops"].tests["test_stats"]
    assert (test.status, test.points) == ("error", 0.0), test


def test_the_graded_notebook_shows_the_partial_score(graded):
    cell = next(c for c in graded[1]["mean_only"].notebook.cells
                if c.metadata.get("nbgrader", {}).get("grade_id") == "test_stats")
    assert cell.outputs[0]["text"].startswith("FAILED (1/3): Partly right: 1 of 2 hidden checks passed.")


# -- the gate -------------------------------------------------------------------------------------

def test_the_gate_refuses_a_share_that_the_stub_earns():
    from grader.running.gate import check_notebooks

    report, = check_notebooks([SOURCE], workers=2)
    checks = {c.name: c for c in report.checks}
    assert checks["a"].ok and checks["b"].ok and checks["f"].ok, [(c.name, c.detail) for c in report.checks]
    assert checks["c:test_stats"].ok, checks["c:test_stats"].detail
    bad = checks["c:test_double"]
    assert not bad.ok and "'dtype' (the dtype of the input)" in bad.detail and "'values'" not in bad.detail, bad.detail
