"""Two-dimensional cross-correlation written out by hand (d2l's ``corr2d``): what a
convolutional layer computes, one output element at a time."""
from __future__ import annotations

import torch

__all__ = ["corr2d"]


def corr2d(X: torch.Tensor, K: torch.Tensor) -> torch.Tensor:
    """Cross-correlation of the image ``X`` (h, w) with the kernel ``K`` (kh, kw), no padding,
    stride 1: ``Y[i, j] = (X[i:i + kh, j:j + kw] * K).sum()``.

    Returns Y (h - kh + 1, w - kw + 1), in the dtype of ``X * K`` (at least float32), with
    gradients flowing to both ``X`` and ``K``. ``torch.nn.functional.conv2d`` computes the same
    for batches and channels, much faster; this loop shows what it means.
    """
    if X.ndim != 2 or K.ndim != 2:
        raise ValueError(f"corr2d: X and K must be 2-d (height, width), got {tuple(X.shape)} and "
                         f"{tuple(K.shape)}; for batches with channels use torch.nn.functional.conv2d")
    h, w = K.shape
    if h > X.shape[0] or w > X.shape[1]:
        raise ValueError(f"corr2d: the kernel {tuple(K.shape)} is larger than the image {tuple(X.shape)}")
    dtype = torch.promote_types(torch.promote_types(X.dtype, K.dtype), torch.float32)
    rows = [torch.stack([(X[i:i + h, j:j + w] * K).sum() for j in range(X.shape[1] - w + 1)])
            for i in range(X.shape[0] - h + 1)]
    return torch.stack(rows).to(dtype)
