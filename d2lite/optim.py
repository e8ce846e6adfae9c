"""Optimisers written by hand: minibatch stochastic gradient descent, as in d2l."""
from __future__ import annotations

from typing import Iterable

import torch

__all__ = ["sgd"]


def sgd(params: Iterable[torch.Tensor], lr: float, batch_size: int) -> None:
    """Minibatch SGD step, in place: ``param -= lr * param.grad / batch_size``, then zero the grads.

    params: tensors with ``requires_grad=True`` whose ``.grad`` was filled by ``backward()``.
    lr: the learning rate.
    batch_size: divides the gradient, because d2l's losses are *summed* over the minibatch.

    Every parameter is checked before any is changed, so a bad call leaves the model untouched.
    """
    params = list(params)
    if batch_size <= 0:
        raise ValueError(f"sgd: batch_size must be a positive number of examples, got {batch_size}")
    for index, param in enumerate(params):
        if not isinstance(param, torch.Tensor):
            raise TypeError(f"sgd: parameter {index} should be a tensor, got {type(param).__name__}")
        if param.grad is None:
            raise ValueError(
                f"sgd: parameter {index} (shape {tuple(param.shape)}) has no gradient. Create it "
                "with requires_grad=True and call loss.backward() (on a loss that uses it) before sgd()."
            )
    with torch.no_grad():
        for param in params:
            param -= lr * param.grad / batch_size
            param.grad.zero_()
