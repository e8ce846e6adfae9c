"""The record channel's wire format: exact round trips, and nothing a student object can smuggle."""
import json

import pytest
import torch

from grader import record as record_module
from grader.values import decode, encode


def round_trip(value):
    return decode(json.loads(json.dumps(encode(value))))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16,
                                   torch.int64, torch.uint8, torch.bool, torch.complex64])
def test_tensors_come_back_bit_for_bit(dtype):
    """dtype, shape and every bit survive, whatever the dtype, including non-contiguous views."""
    source = (torch.randn(4, 6, generator=torch.Generator().manual_seed(0)) * 50).to(dtype)
    view = source.t()[1:, ::2]
    back = round_trip(view)
    assert back.dtype == dtype and back.shape == view.shape
    assert torch.equal(back, view.contiguous())


def test_python_values_keep_their_types():
    value = {"n": 3, "x": 2.5, "s": "abc", "none": None, "flag": True,
             "shape": torch.Size([2, 3]), "dtype": torch.float16, "pair": (1, [2.0, "3"])}
    back = round_trip(value)
    assert back == value
    assert type(back["n"]) is int and type(back["flag"]) is bool and type(back["pair"]) is tuple


def test_a_state_dict_can_be_recorded_in_order():
    """Module.state_dict() is an OrderedDict; recording it keeps its keys and tensors."""
    model = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.ReLU(), torch.nn.Linear(3, 1))
    back = round_trip(model.state_dict())
    assert list(back) == list(model.state_dict())
    for name, tensor in model.state_dict().items():
        assert torch.equal(back[name], tensor)


def test_objects_that_merely_look_like_values_are_refused():
    """Subclasses can lie (__eq__, __bool__, __float__): only exact built-in types are encoded."""
    class LyingFloat(float):
        def __eq__(self, other):
            return True

    class LyingDict(dict):
        pass

    for sneaky in (LyingFloat(1.0), LyingDict(a=1), object()):
        with pytest.raises(TypeError):
            encode(sneaky)


@pytest.mark.parametrize("tree", [
    {"tensor": {"dtype": "torch.float32", "shape": [2], "device": "cpu", "requires_grad": False, "data": "AAAA"}},
    {"dtype": "os.system"},
    {"pickle": "gASV"},
    [1, 2],
    {"int": 5},
])
def test_malformed_trees_are_rejected(tree):
    """Wrong byte counts, unknown dtypes, unknown kinds and raw JSON types are errors, not values."""
    with pytest.raises(ValueError):
        decode(tree)


def test_record_returns_its_value_and_emits_nothing_outside_grading(monkeypatch, capsys):
    monkeypatch.delenv(record_module.ENV_FLAG, raising=False)
    value = torch.arange(3)
    assert record_module.record("k", value) is value
    assert capsys.readouterr().out == ""


def test_record_refuses_bad_keys_and_negative_tolerances():
    with pytest.raises(ValueError):
        record_module.record("", 1)
    with pytest.raises(ValueError):
        record_module.record("k", 1, atol=-1)
