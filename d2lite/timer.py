"""Measuring: a stopwatch that keeps every lap (``Timer``) and running sums (``Accumulator``)."""
from __future__ import annotations

import itertools
import time

import torch

__all__ = ["Timer", "Accumulator"]


class Timer:
    """Record several running times, like d2l's ``Timer`` (it starts on creation).

    sync_cuda: wait for every visible GPU (``torch.cuda.synchronize(i)`` for each device i)
        before reading the clock, so that the time of kernels launched asynchronously is counted,
        on all GPUs of a multi-GPU step; on Apple GPUs ``torch.mps.synchronize()`` (a no-op on a CPU-only machine). It makes every
        ``start``/``stop`` wait for the GPU, so use it around whole epochs, not single batches.

        timer = Timer()
        ...work...
        timer.stop()                # seconds since start(), also appended to timer.times
        timer.avg(), timer.sum(), timer.cumsum()
    """

    def __init__(self, sync_cuda: bool = False):
        self.sync_cuda = sync_cuda
        self.times: list[float] = []
        self.start()

    def _now(self) -> float:
        if self.sync_cuda:
            if torch.cuda.is_available():
                for device in range(torch.cuda.device_count()):
                    torch.cuda.synchronize(device)
            elif torch.backends.mps.is_available():  # Apple GPUs run asynchronously too
                torch.mps.synchronize()
        return time.perf_counter()

    def start(self) -> None:
        """Start (or restart) the clock."""
        self.tik = self._now()

    def stop(self) -> float:
        """Stop the clock, record the lap, and return it in seconds."""
        self.times.append(self._now() - self.tik)
        return self.times[-1]

    def avg(self) -> float:
        """Average lap in seconds."""
        if not self.times:
            raise ValueError("Timer.avg: no laps recorded yet; call stop() at least once first")
        return sum(self.times) / len(self.times)

    def sum(self) -> float:
        """Total of all laps in seconds."""
        return sum(self.times)

    def cumsum(self) -> list[float]:
        """Running totals of the laps: ``[t0, t0 + t1, ...]``."""
        return list(itertools.accumulate(self.times))

    def __enter__(self) -> "Timer":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


class Accumulator:
    """Running sums over ``n`` variables, like d2l's (e.g. loss sum, correct count, examples).

    ``add`` converts each value with ``float()``; for a GPU tensor that waits for the GPU, so in
    a hot loop sum tensors on the device and add them here once per epoch.
    """

    def __init__(self, n: int):
        if n <= 0:
            raise ValueError(f"Accumulator: expected n >= 1 variables, got {n}")
        self.data = [0.0] * n

    def add(self, *args) -> None:
        """Add one value to each of the ``n`` sums."""
        if len(args) != len(self.data):
            raise ValueError(f"Accumulator.add: expected {len(self.data)} values, got {len(args)}")
        self.data = [a + float(b) for a, b in zip(self.data, args)]

    def reset(self) -> None:
        """Set every sum back to 0."""
        self.data = [0.0] * len(self.data)

    def __getitem__(self, idx):
        return self.data[idx]

    def __len__(self) -> int:
        return len(self.data)
