"""d2lite.checks: the self-checks visible tests use."""
import sys

import pytest
import torch
from torch import nn

from d2lite.checks import forbid, forbid_host_sync, lines_executed, tensors_saved_for_backward


def meta_step(read=None):
    """A training step on meta tensors; ``read(loss)`` is what the step does with its loss."""
    net = nn.Linear(4, 3).to("meta")
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    X, y = torch.zeros(8, 4, device="meta"), torch.zeros(8, dtype=torch.int64, device="meta")
    totals = torch.zeros(3, device="meta")
    optimizer.zero_grad()
    logits = net(X)
    loss = nn.functional.cross_entropy(logits, y)
    loss.backward()
    optimizer.step()
    with torch.no_grad():
        totals[0] += loss.detach() * 8
        totals[1] += (logits.argmax(1) == y).sum()
        totals[2] += 8
    if read is not None:
        read(loss.detach())
    return totals


def test_forbid_host_sync_lets_a_sync_free_step_run():
    with forbid_host_sync():
        totals = meta_step()
    assert totals.device.type == "meta" and totals.shape == (3,)


@pytest.mark.parametrize("read", [
    lambda loss: loss.item(), lambda loss: float(loss), lambda loss: bool(loss > 0),
    lambda loss: loss.tolist(), lambda loss: loss.cpu(), lambda loss: loss.reshape(1).nonzero(),
])
def test_forbid_host_sync_reports_reading_a_value(read):
    with pytest.raises(AssertionError, match="needs a tensor's value on the host"):
        with forbid_host_sync():
            meta_step(read)


@pytest.mark.parametrize("read, what", [
    (print, "printed a tensor"), (repr, "printed a tensor"), (str, "printed a tensor"),
    (lambda loss: f"loss {loss}", "formatted a tensor"),
    (lambda loss: f"loss {loss:.3f}", "formatted a tensor"),  # a TypeError on meta, reported as formatting
])
def test_forbid_host_sync_reports_printing_which_meta_tensors_allow(read, what, capsys):
    print(torch.ones((), device="meta"))  # outside the block: allowed, and no error on a meta tensor
    assert "device='meta'" in capsys.readouterr().out
    with pytest.raises(AssertionError, match=what):
        with forbid_host_sync("keep the loss on the device"):
            meta_step(read)


def test_forbid_host_sync_sees_printing_of_cpu_tensors_too_and_adds_the_message(capsys):
    with pytest.raises(AssertionError, match="printed a tensor.*; sum on the device"):
        with forbid_host_sync("sum on the device"):
            print(torch.ones(2))


def test_forbid_host_sync_passes_other_errors_through_and_restores_the_profiler():
    before = sys.getprofile()
    with pytest.raises(ValueError, match="mine"):
        with forbid_host_sync():
            raise ValueError("mine")
    with pytest.raises(RuntimeError, match="not on the expected device"):
        with forbid_host_sync():
            torch.ones(2, device="meta") + torch.ones(2)  # a device mismatch is not a host sync
    assert sys.getprofile() is before


# --- forbid, lines_executed, tensors_saved_for_backward ----------------------------------------------

def softmax_by_library(x):
    return torch.softmax(x, dim=1)


SAVED_EARLIER = torch.softmax  # a reference taken before any check existed


def softmax_by_saved_reference(x):
    return SAVED_EARLIER(x, dim=1)


def softmax_by_method(x):
    return getattr(x, "softmax")(1)


def softmax_by_hand(x):
    e = (x - x.max(dim=1, keepdim=True).values).exp()
    return e / e.sum(dim=1, keepdim=True)


@pytest.mark.parametrize("answer", [softmax_by_library, softmax_by_saved_reference, softmax_by_method])
def test_forbid_sees_a_call_whatever_name_reaches_it(answer):
    with pytest.raises(AssertionError, match="softmax"):
        with forbid(torch.softmax, torch.Tensor.softmax, message="compute it with exp and sum"):
            answer(torch.randn(2, 3))


def test_forbid_lets_an_answer_by_hand_run_and_restores_the_profiler():
    before = sys.getprofile()
    with forbid(torch.softmax, torch.Tensor.softmax):
        out = softmax_by_hand(torch.randn(2, 3))
    assert torch.allclose(out.sum(dim=1), torch.ones(2)) and sys.getprofile() is before


def test_forbid_sees_a_python_function_called_through_another_name():
    alias = softmax_by_hand
    with pytest.raises(AssertionError, match="softmax_by_hand"):
        with forbid(softmax_by_hand):
            alias(torch.randn(2, 3))


def loop_sum(xs):
    total = 0.0
    for x in xs:
        total += x
    return total


def test_lines_executed_counts_the_callers_own_python_not_the_libraries():
    _, looped = lines_executed(loop_sum, [1.0] * 50)
    _, vectorised = lines_executed(lambda xs: torch.tensor(xs).sum(), [1.0] * 50)
    assert looped >= 100 and vectorised <= 2  # a loop of 50 runs two lines per element


def test_tensors_saved_for_backward_is_zero_without_a_graph():
    w = torch.randn(3, requires_grad=True)
    _, recorded = tensors_saved_for_backward(lambda: (w * w).sum())
    _, not_recorded = tensors_saved_for_backward(lambda: torch.no_grad()(lambda: (w * w).sum())())
    assert recorded >= 1 and not_recorded == 0
