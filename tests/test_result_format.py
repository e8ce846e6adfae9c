"""The marker's format (grader.engine.verdict.result): a graded test and a graded submission go to JSON and come back
equal; markers written before the format was numbered still read; a damaged one raises."""
from __future__ import annotations

import dataclasses
import json

import pytest

from grader.engine.verdict.result import MARKER_FORMAT, Outcome
from grader.engine.verdict.result import TestResult as Verdict  # not "Test...": pytest would collect it

FULL = Verdict("test_dist", 6.0, 3.0, "failed", "Partly right.", ["max"], ["max"], False, "a finding", "dist",
                  "sequences")
PLAIN = Verdict("test_scale", 2.0, 2.0, "passed", "The hidden checks passed.")


def test_a_test_result_goes_to_json_and_back():
    for test in (FULL, PLAIN):
        assert Verdict.from_json(json.loads(json.dumps(test.to_json()))) == test
    assert "notebook" not in PLAIN.to_json()  # the assignment's own notebook: the key is left out, as before
    assert list(PLAIN.to_json()) == ["grade_id", "max_points", "points", "status", "reason", "failed_keys",
                                     "unchecked_keys", "kernel_word", "review", "review_cell"]
    assert list(FULL.to_json())[-1] == "notebook"


def test_an_outcome_goes_to_json_and_back_without_its_notebooks():
    outcome = Outcome("ann", "week1", 5.0, 8.0, [FULL, PLAIN], ["a problem"], "2026-11-27 03:00:00.000000 UTC",
                      "abc", "def", 1.5, notebooks={"sequences": "{}"})
    data = json.loads(outcome.to_json())
    assert list(data)[-1] == "format" and data["format"] == MARKER_FORMAT
    assert "notebooks" not in data
    back = Outcome.from_json(data)
    assert back == outcome and back.notebooks == {}
    assert back.tests == [FULL, PLAIN] and isinstance(back.tests, list) and back.tests[0].failed_keys == ["max"]


def test_a_format_1_marker_reads_with_its_five_key_failed_tests():
    """No "format" key, a failed submission's tests with five keys, optional keys of later versions missing."""
    marker = {"student": "ann", "assignment": "a1", "score": 0.0, "max_score": 2.0,
              "tests": [{"grade_id": "test_scale", "max_points": 2.0, "points": 0.0, "status": "error",
                         "reason": "This submission could not be graded."}],
              "problems": ["grading failed"], "timestamp": "t", "source_sha256": "s"}
    outcome = Outcome.from_json(marker)
    assert outcome.tests == [Verdict("test_scale", 2.0, 0.0, "error", "This submission could not be graded.")]
    assert (outcome.references_sha256, outcome.seconds, outcome.tests[0].failed_keys) == ("", 0.0, [])
    written = json.loads(outcome.to_json())["tests"][0]  # written again: every key
    assert written["review"] == "" and written["unchecked_keys"] == [] and "notebook" not in written


def test_unknown_keys_are_ignored():
    marker = json.loads(Outcome("ann", "a1", 2.0, 2.0, [PLAIN], []).to_json())
    marker["from_a_newer_version"] = 1
    marker["tests"][0]["also_new"] = True
    assert Outcome.from_json(marker) == Outcome("ann", "a1", 2.0, 2.0, [PLAIN], [])


@pytest.mark.parametrize("damage", ["score", "tests", "problems"])
def test_a_marker_missing_a_required_key_raises(damage):
    marker = json.loads(Outcome("ann", "a1", 2.0, 2.0, [PLAIN], []).to_json())
    del marker[damage]
    with pytest.raises(TypeError):
        Outcome.from_json(marker)


@pytest.mark.parametrize("damage", ["grade_id", "max_points", "points", "status", "reason"])
def test_a_test_missing_a_required_key_raises(damage):
    marker = json.loads(Outcome("ann", "a1", 2.0, 2.0, [PLAIN], []).to_json())
    del marker["tests"][0][damage]
    with pytest.raises(KeyError):
        Outcome.from_json(marker)


def test_a_marker_that_is_not_an_object_raises():
    with pytest.raises(TypeError):
        Outcome.from_json([])
    with pytest.raises(TypeError):
        Outcome.from_json({"student": "ann", "assignment": "a1", "score": 0, "max_score": 0, "tests": ["x"],
                           "problems": []})


def test_results_are_frozen():
    outcome = Outcome("ann", "a1", 2.0, 2.0, [PLAIN], [])
    with pytest.raises(dataclasses.FrozenInstanceError):
        PLAIN.points = 0.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        outcome.score = 0.0
    assert dataclasses.replace(PLAIN, notebook="sequences").notebook == "sequences" and PLAIN.notebook == ""
