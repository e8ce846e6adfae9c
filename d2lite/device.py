"""Devices: which accelerator to compute on, with the CPU as the always-present fallback.

d2l-compatible: ``try_gpu(i)``, ``try_all_gpus()``, ``num_gpus()``. They ask PyTorch's
device-agnostic ``torch.accelerator`` API, so they find whichever accelerator this PyTorch build
supports: CUDA (and ROCm, which PyTorch also calls ``cuda``), Apple's MPS, Intel's XPU. Unlike
d2l's, ``try_all_gpus()`` returns ``[cpu]`` when there is no accelerator (it is never empty, so
``devices[0]`` always works). On a machine without an accelerator ``torch.accelerator`` says
``is_available() == False``, ``current_accelerator() is None`` (always None for a CPU-only build)
and ``device_count() == 0``.
"""
from __future__ import annotations

import torch

__all__ = ["num_gpus", "try_gpu", "try_all_gpus"]


def num_gpus() -> int:
    """The number of accelerator devices this process can see: CUDA or ROCm GPUs, MPS (one),
    XPUs; 0 without an accelerator."""
    return torch.accelerator.device_count() if torch.accelerator.is_available() else 0


def try_gpu(i: int = 0) -> torch.device:
    """Accelerator device ``i`` (``cuda:i``, ``mps:0``, ``xpu:i``) if it exists, else ``cpu``."""
    if i < 0:
        raise ValueError(f"try_gpu: expected a GPU index i >= 0, got {i}")
    if i < num_gpus():
        return torch.device(torch.accelerator.current_accelerator().type, i)
    return torch.device("cpu")


def try_all_gpus() -> list[torch.device]:
    """Every accelerator device, or ``[cpu]`` without one. Never empty."""
    return [try_gpu(i) for i in range(num_gpus())] or [torch.device("cpu")]
