"""Models and losses the course builds: linear regression, and LeNet (as a module and as a function)."""
from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

__all__ = ["linreg", "squared_loss", "lenet", "lenet_params", "lenet_functional"]


def linreg(X: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """The linear regression model ``X @ w + b``.

    X: (n, d) features; w: (d, 1) (or (d,)) weights; b: bias, broadcastable. Returns (n, 1) (or (n,)).
    """
    return torch.matmul(X, w) + b


def squared_loss(y_hat: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Per-example squared loss ``(y_hat - y)**2 / 2``, with ``y`` reshaped to ``y_hat``'s shape.

    Not averaged: returns one loss per example (same shape as ``y_hat``), as in d2l.
    """
    if y.numel() != y_hat.numel():
        raise ValueError(
            f"squared_loss: y_hat has {y_hat.numel()} values {tuple(y_hat.shape)} but y has "
            f"{y.numel()} {tuple(y.shape)}; pass one target per prediction"
        )
    return (y_hat - y.reshape(y_hat.shape)) ** 2 / 2


_ACTIVATIONS = {"sigmoid": nn.Sigmoid, "relu": nn.ReLU}
_POOLS = {"avg": nn.AvgPool2d, "max": nn.MaxPool2d}


def lenet(activation: str = "sigmoid", pool: str = "avg") -> nn.Sequential:
    """LeNet-5 as in d2l: input (N, 1, 28, 28) images, output (N, 10) logits.

    Conv 6@5x5 (padding 2) -> act -> pool 2 -> Conv 16@5x5 -> act -> pool 2 -> Flatten ->
    Linear 400->120 -> act -> Linear 120->84 -> act -> Linear 84->10.

    activation: "sigmoid" (d2l, the 1998 original) or "relu" (trains much faster).
    pool: "avg" (d2l) or "max".
    """
    if activation not in _ACTIVATIONS:
        raise ValueError(f"lenet: activation must be one of {sorted(_ACTIVATIONS)}, got {activation!r}")
    if pool not in _POOLS:
        raise ValueError(f"lenet: pool must be one of {sorted(_POOLS)}, got {pool!r}")
    act, pool_layer = _ACTIVATIONS[activation], _POOLS[pool]
    return nn.Sequential(
        nn.Conv2d(1, 6, kernel_size=5, padding=2), act(),
        pool_layer(kernel_size=2, stride=2),
        nn.Conv2d(6, 16, kernel_size=5), act(),
        pool_layer(kernel_size=2, stride=2),
        nn.Flatten(),
        nn.Linear(16 * 5 * 5, 120), act(),
        nn.Linear(120, 84), act(),
        nn.Linear(84, 10),
    )


def lenet_params(scale: float = 0.01, generator: torch.Generator | None = None,
                 device: torch.device | str | None = None) -> list[torch.Tensor]:
    """Fresh parameters for :func:`lenet_functional` (d2l's multi-GPU chapter), in this order:

    W1 (20, 1, 3, 3), b1 (20,), W2 (50, 20, 5, 5), b2 (50,), W3 (800, 128), b3 (128,),
    W4 (128, 10), b4 (10,). Weights are ``scale * N(0, 1)``, biases zero. They do not require
    grad: ``get_params(params, device)`` makes per-device copies that do.
    generator: a seeded ``torch.Generator`` (on the CPU) for reproducible weights.
    """
    shapes = [(20, 1, 3, 3), (20,), (50, 20, 5, 5), (50,), (800, 128), (128,), (128, 10), (10,)]
    params = []
    for shape in shapes:
        if len(shape) == 1:
            params.append(torch.zeros(shape))
        else:
            params.append(torch.randn(shape, generator=generator) * scale)
    return [p.to(device) for p in params] if device is not None else params


def lenet_functional(X: torch.Tensor, params: list[torch.Tensor]) -> torch.Tensor:
    """The LeNet variant of d2l's multi-GPU chapter, written as a function of its parameters.

    X: (N, 1, 28, 28) images; params: the 8 tensors of :func:`lenet_params`. Returns (N, 10) logits.
    conv 3x3 -> ReLU -> avg-pool 2 -> conv 5x5 -> ReLU -> avg-pool 2 -> flatten (800) ->
    linear 128 -> ReLU -> linear 10.
    """
    if len(params) != 8:
        raise ValueError(f"lenet_functional: expected the 8 tensors of lenet_params(), got {len(params)}")
    W1, b1, W2, b2, W3, b3, W4, b4 = params
    h1 = F.avg_pool2d(F.relu(F.conv2d(X, W1, b1)), kernel_size=2, stride=2)
    h2 = F.avg_pool2d(F.relu(F.conv2d(h1, W2, b2)), kernel_size=2, stride=2)
    h3 = F.relu(h2.reshape(h2.shape[0], -1) @ W3 + b3)
    return h3 @ W4 + b4
