"""Verdicts: student values against reference values, decided in the grader (no kernel needed)."""
from __future__ import annotations

import math

import pytest
import torch

from grader.engine.verdict.compare import check_records, compare
from grader.values import encode


def same(student, reference, rtol=0.0, atol=0.0) -> bool:
    return compare(encode(student), encode(reference), rtol, atol)[0]


@pytest.mark.parametrize("student, reference", [
    (3, 3), (2.5, 2.5), ("a", "a"), (None, None), (True, True), ([1, (2, "x")], [1, (2, "x")]),
    ({"w": torch.ones(2), "b": 0.0}, {"b": 0.0, "w": torch.ones(2)}),
    (torch.Size([2, 3]), torch.Size([2, 3])), (torch.float16, torch.float16),
    (torch.tensor([1.0, math.nan]), torch.tensor([1.0, math.nan])), (math.inf, math.inf),
    (torch.zeros(0, 3), torch.zeros(0, 3)), (torch.tensor([1 + 2j]), torch.tensor([1 + 2j])),
])
def test_equal_values_match(student, reference):
    assert same(student, reference)


@pytest.mark.parametrize("student, reference, why", [
    (3, 3.0, "is of another type: expected a float"),
    (True, 1, "is of another type: expected a int"),
    (1, True, "is of another type: expected a bool"),
    ([1, 2], (1, 2), "is of another type: expected a tuple"),
    (torch.ones(3, dtype=torch.float64), torch.ones(3), "has another dtype: expected torch.float32"),
    (torch.ones(3, 1), torch.ones(3), "has the expected dtype but another shape"),
    (torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.5]), "has the expected dtype and shape but other values"),
    (torch.tensor([math.nan]), torch.tensor([0.0]), "but other values"),
    ({"w": 1}, {"w": 1, "b": 2}, "lacks ['b']"),
    ({"w": 1, "z": 2}, {"w": 1}, "has key(s) it should not have"),
    ([1, 2, 3], [1, 2], "has another number of items than expected"),
    ("A", "a", "differs"), (math.nan, 1.0, "differs"), (-math.inf, math.inf, "differs"),
    (torch.Size([3, 2]), torch.Size([2, 3]), "differs"),
])
def test_different_values_do_not_match_and_say_why(student, reference, why):
    ok, reason = compare(encode(student), encode(reference), 0.1, 0.1)
    assert not ok and why in reason, reason


@pytest.mark.parametrize("student, reference", [
    (torch.ones(3, 1), torch.ones(7, 5)), ([1, 2, 3], [4, 5, 6, 7, 8]), (torch.tensor([1.0]), torch.tensor([42.0])),
    (123, 98765), ("abc", "secret-answer"),
])
def test_a_mismatch_never_shows_the_expected_value_or_shape(student, reference):
    """Reasons reach students: the reference's shape, length or value (hidden answers) stay out."""
    ok, reason = compare(encode(student), encode(reference), 0, 0)
    for secret in ("7, 5", "5 items", "42", "98765", "secret-answer"):
        assert secret not in reason, reason


@pytest.mark.parametrize("student, reference", [
    (torch.zeros(0, 6697, 1377), torch.zeros(2, 3)),              # a shape the kernel chose
    ([0] * 6697, [1, 2]),                                        # a length
    (torch.tensor([1.0] * 6697 + [0.0] * 1377), torch.ones(8074)),  # how many elements differ
    ({"a": 1, **{f"k{i}": 0 for i in range(6697)}}, {"a": 1, "b": 2}),  # how many keys are extra
    (torch.ones(3, dtype=torch.float16), torch.ones(3)),           # the dtype the kernel chose
])
def test_a_mismatch_never_echoes_a_number_or_name_the_kernel_chose(student, reference):
    """A kernel could smuggle hidden inputs out through the numbers a reason prints (8 characters
    of a hidden test per key, with shapes): reasons say what differs, never the student's side."""
    ok, reason = compare(encode(student), encode(reference), 0, 0)
    assert not ok
    for chosen in ("6697", "1377", "float16"):
        assert chosen not in reason, reason


def test_which_item_differs_is_named_only_in_short_lists():
    """Issue 28 (5): the index of the first item that differs is the kernel's choice too."""
    long = [0] * 8074
    ok, reason = compare(encode(long[:6697] + [1] + long[6698:]), encode(long), 0, 0)
    assert not ok and "6697" not in reason and "an item of value" in reason
    assert "value[2]" in compare(encode([0, 0, 1]), encode([0, 0, 0]), 0, 0)[1]


def test_how_often_a_key_was_recorded_is_not_said():
    """A kernel that records a key 6697 times must not see 6697 on its page."""
    expected = {"a": {"value": encode(1), "rtol": 0, "atol": 0}}
    ok, reason = check_records(expected, [{"key": "a", "value": encode(1)}] * 6697)
    assert not ok and "6697" not in reason and "more than once" in reason


def test_tolerance_is_relative_plus_absolute_like_torch_isclose():
    r = torch.tensor([100.0, 0.0])
    assert same(torch.tensor([100.9, 0.05]), r, rtol=0.01, atol=0.1)
    assert not same(torch.tensor([101.2, 0.0]), r, rtol=0.01, atol=0.1)
    assert same(1.0 + 1e-9, 1.0, rtol=1e-6)
    assert not same(1.0 + 1e-9, 1.0)  # no tolerance: exact


def test_device_type_must_match():
    student = encode(torch.ones(2))
    student["tensor"]["device"] = "cuda"
    ok, reason = compare(student, encode(torch.ones(2)), 0, 0)
    assert not ok and "device" in reason


@pytest.mark.parametrize("tree", [
    {"tensor": {"dtype": "torch.float32", "shape": [2], "device": "cpu", "requires_grad": False,
                "data": "AAAA"}},  # 4 bytes for 2 floats
    {"tensor": {"dtype": "os.system", "shape": [], "device": "cpu", "requires_grad": False,
                "data": ""}},
    {"int": 3}, {"float": "x"}, {"list": "abc"}, [1, 2], "plain string", {"a": 1, "b": 2},
])
def test_malformed_trees_fail_without_raising(tree):
    ok, reason = compare(tree, encode(1.0), 0, 0)
    assert not ok and "malformed" in reason


def test_each_expected_key_must_be_recorded_exactly_once():
    expected = {"a": {"value": encode(1), "rtol": 0, "atol": 0},
                "b": {"value": encode(2.0), "rtol": 0.5, "atol": 0}}
    good = [{"key": "a", "value": encode(1)}, {"key": "b", "value": encode(2.9)}]
    assert check_records(expected, good) == (True, "")
    assert "did not record 'b'" in check_records(expected, good[:1])[1]
    assert "recorded more than once" in check_records(expected, good + good[:1])[1]
    extra = good + [{"key": "extra", "value": encode(0)}, "junk", {"key": 3}]
    assert check_records(expected, extra)[0]


def test_student_tolerances_are_ignored():
    expected = {"a": {"value": encode(1.0), "rtol": 0, "atol": 0}}
    forged = [{"key": "a", "value": encode(1.5), "rtol": 10.0, "atol": 10.0}]
    assert not check_records(expected, forged)[0]
