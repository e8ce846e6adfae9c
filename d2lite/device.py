"""Devices: which accelerator to compute on, with the CPU as the always-present fallback.

d2l-compatible: ``try_gpu(i)``, ``try_all_gpus()``, ``num_gpus()``. Unlike d2l's, these also
use Apple's MPS device when there is no CUDA GPU, and ``try_all_gpus()`` really returns
``[cpu]`` when there is no accelerator (it is never empty, so ``devices[0]`` always works).
"""
from __future__ import annotations

import torch

__all__ = ["num_gpus", "try_gpu", "try_all_gpus"]


def num_gpus() -> int:
    """The number of CUDA GPUs visible to this process (0 without CUDA)."""
    return torch.cuda.device_count()


def _mps_available() -> bool:
    mps = getattr(torch.backends, "mps", None)
    return bool(mps is not None and mps.is_available())


def try_gpu(i: int = 0) -> torch.device:
    """``cuda:i`` if that GPU exists, else ``mps`` (only for ``i == 0``) if present, else ``cpu``."""
    if i < 0:
        raise ValueError(f"try_gpu: expected a GPU index i >= 0, got {i}")
    if num_gpus() >= i + 1:
        return torch.device(f"cuda:{i}")
    if i == 0 and _mps_available():
        return torch.device("mps")
    return torch.device("cpu")


def try_all_gpus() -> list[torch.device]:
    """Every CUDA GPU; without CUDA ``[mps]`` when present, else ``[cpu]``. Never empty."""
    devices = [torch.device(f"cuda:{i}") for i in range(num_gpus())]
    if devices:
        return devices
    return [torch.device("mps")] if _mps_available() else [torch.device("cpu")]
