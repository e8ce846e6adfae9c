"""d2lite.sgd is minibatch SGD on a summed loss: the same step as torch.optim.SGD on the mean loss."""
import pytest
import torch

import d2lite


def make_problem(seed=0, n=16, d=3):
    g = torch.Generator().manual_seed(seed)
    X, y = torch.randn(n, d, generator=g), torch.randn(n, 1, generator=g)
    w, b = torch.randn(d, 1, generator=g), torch.zeros(1)
    return X, y, w, b


def test_sgd_matches_torch_optim_sgd_over_several_steps():
    X, y, w0, b0 = make_problem()
    lr, n = 0.1, X.shape[0]
    w, b = w0.clone().requires_grad_(), b0.clone().requires_grad_()
    w_ref, b_ref = w0.clone().requires_grad_(), b0.clone().requires_grad_()
    reference = torch.optim.SGD([w_ref, b_ref], lr=lr)
    for _ in range(5):
        ((X @ w + b - y) ** 2 / 2).sum().backward()          # d2l style: summed loss
        d2lite.sgd([w, b], lr, n)
        reference.zero_grad()
        ((X @ w_ref + b_ref - y) ** 2 / 2).mean().backward()  # torch style: mean loss
        reference.step()
    torch.testing.assert_close(w, w_ref)
    torch.testing.assert_close(b, b_ref)


def test_sgd_zeroes_the_gradients_and_keeps_params_leaves():
    X, y, w0, b0 = make_problem()
    w, b = w0.clone().requires_grad_(), b0.clone().requires_grad_()
    ((X @ w + b - y) ** 2).sum().backward()
    d2lite.sgd([w, b], 0.01, 4)
    assert torch.count_nonzero(w.grad) == 0 and torch.count_nonzero(b.grad) == 0
    assert w.is_leaf and w.requires_grad


def test_sgd_accepts_a_generator_of_parameters():
    net = torch.nn.Linear(3, 1)
    before = net.weight.detach().clone()
    net(torch.ones(2, 3)).sum().backward()
    expected = before - 0.5 * net.weight.grad / 2
    d2lite.sgd(net.parameters(), 0.5, 2)
    torch.testing.assert_close(net.weight.detach(), expected)


def test_parameter_without_gradient_is_a_clear_error_and_nothing_changes():
    w = torch.ones(2, requires_grad=True)
    unused = torch.ones(3, requires_grad=True)
    (w * 2).sum().backward()
    with pytest.raises(ValueError, match=r"parameter 1 \(shape \(3,\)\) has no gradient.*backward"):
        d2lite.sgd([w, unused], 0.1, 1)
    torch.testing.assert_close(w.detach(), torch.ones(2), msg="no parameter may change on a bad call")


@pytest.mark.parametrize("batch_size", [0, -4])
def test_batch_size_must_be_positive(batch_size):
    w = torch.ones(2, requires_grad=True)
    w.sum().backward()
    with pytest.raises(ValueError, match="batch_size"):
        d2lite.sgd([w], 0.1, batch_size)
