"""Data parallelism by hand (d2l's multi-GPU chapter): replicate parameters, split a batch
across devices, and sum gradients across replicas.

Everything here also works on the CPU and on a device list that repeats a device
(e.g. ``[cpu, cpu]``), so the algorithm can be learned and tested without GPUs.
"""
from __future__ import annotations

from typing import Sequence

import torch
from torch import nn

__all__ = ["get_params", "allreduce", "split_batch"]


def get_params(params: Sequence[torch.Tensor], device) -> list[torch.Tensor]:
    """One replica of ``params`` on ``device``: fresh leaf tensors that require grad.

    Always copies, even when the tensors already live on ``device`` (d2l's version returns the
    same tensors there, so two "replicas" on one device would silently share their weights).
    """
    device = torch.device(device)
    return [p.detach().to(device, copy=True).requires_grad_(True) for p in params]


def allreduce(data: Sequence[torch.Tensor]) -> None:
    """Sum the tensors of ``data`` and write the sum back into every one of them, in place.

    data: a non-empty list of tensors of one shape and dtype, on any devices (e.g. the
        gradients of one parameter on each replica). Tensors may repeat a device.
    """
    data = list(data)
    if not data:
        raise ValueError("allreduce: got an empty list; pass one tensor per replica")
    for i, t in enumerate(data):
        if not isinstance(t, torch.Tensor):
            raise TypeError(
                f"allreduce: element {i} is {type(t).__name__}, not a tensor "
                "(a parameter's .grad is None until backward() has run)"
            )
        if t.shape != data[0].shape or t.dtype != data[0].dtype:
            raise ValueError(
                f"allreduce: all tensors must have one shape and dtype; element 0 is "
                f"{tuple(data[0].shape)} {data[0].dtype} but element {i} is {tuple(t.shape)} {t.dtype}"
            )
    with torch.no_grad():
        total = data[0].clone()
        for t in data[1:]:
            total += t.to(total.device)
        for t in data:
            t.copy_(total)


def _shard_sizes(n: int, parts: int) -> list[int]:
    """Split n rows into ``parts`` sizes differing by at most one, larger ones first."""
    return [n // parts + (1 if i < n % parts else 0) for i in range(parts)]


def _distinct_cuda(devices: list[torch.device]) -> bool:
    return all(d.type == "cuda" for d in devices) and len({d.index for d in devices}) == len(devices)


def _scatter(t: torch.Tensor, devices: list[torch.device], sizes: list[int]) -> list[torch.Tensor]:
    if _distinct_cuda(devices):
        if len(set(sizes)) == 1:  # equal shards: exactly what nn.parallel.scatter makes
            return list(nn.parallel.scatter(t, devices))
        # nn.parallel.scatter's chunking can give fewer shards than devices (5 rows, 4 GPUs ->
        # 2, 2, 1); the same primitive with explicit sizes always gives one shard per device.
        return list(torch.cuda.comm.scatter(t, [d.index for d in devices], chunk_sizes=sizes))
    return [shard.to(d, copy=True) for shard, d in zip(t.split(sizes), devices)]


def split_batch(X: torch.Tensor, y: torch.Tensor, devices: Sequence) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """Split a minibatch along dim 0 into one shard per device.

    X: (n, ...) inputs; y: (n, ...) labels; devices: non-empty list (may repeat a device).
    Returns ``(X_shards, y_shards)``, lists with ``len(devices)`` tensors, shard ``i`` on
    ``devices[i]``; shard sizes differ by at most one (larger first) and concatenate back to
    the batch. Shards are copies. On distinct CUDA GPUs the copy is ``nn.parallel.scatter``.
    """
    devices = [torch.device(d) for d in devices]
    if not devices:
        raise ValueError("split_batch: the device list is empty; pass e.g. d2lite.try_all_gpus()")
    if X.shape[0] != y.shape[0]:
        raise ValueError(
            f"split_batch: X has {X.shape[0]} examples but y has {y.shape[0]}; pass one label per example"
        )
    if X.shape[0] < len(devices):
        raise ValueError(
            f"split_batch: a batch of {X.shape[0]} examples cannot give each of {len(devices)} devices "
            "at least one; use a batch size of at least the number of devices"
        )
    sizes = _shard_sizes(X.shape[0], len(devices))
    return _scatter(X, devices, sizes), _scatter(y, devices, sizes)
