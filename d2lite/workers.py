"""Data sets and helpers for ``DataLoader`` worker processes, importable by the workers themselves.

A ``DataLoader`` with ``num_workers > 0`` sends its ``Dataset`` (and any ``worker_init_fn`` or
``collate_fn``) to each worker. Under the *fork* start method a worker is a copy of the parent and
finds everything there; under *forkserver* (Linux's default from Python 3.14) and *spawn* (macOS,
Windows) a worker is a fresh interpreter that unpickles them, which imports their module by name.
A class defined in a notebook lives in the kernel's ``__main__``, which a fresh interpreter cannot
import: so the objects that notebooks 06b and 06c hand to workers live here.
"""
import time

import numpy as np
import torch
from torch.utils.data import Dataset

__all__ = ["SlowDataset", "JitterDataset", "seed_worker"]


class SlowDataset(Dataset):
    """``n`` examples that each take ``delay`` seconds to "read" (a sleep, standing in for a file).

    Example ``i`` is ``torch.full((4,), float(i))``: shape ``(4,)``, float32.
    """

    def __init__(self, n: int, delay: float = 0.002):
        self.n, self.delay = n, delay

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> torch.Tensor:
        time.sleep(self.delay)
        return torch.full((4,), float(i))


class JitterDataset(Dataset):
    """``n`` examples; example ``i`` is ``[i, a draw of NumPy's global generator, a draw of self.rng]``.

    Shape ``(3,)``, float32. ``self.rng`` is the data set's own ``np.random.Generator`` (seeded with
    ``seed``): every worker receives an identical copy of it unless a ``worker_init_fn`` replaces it.
    """

    def __init__(self, n: int, seed: int = 0):
        self.n, self.rng = n, np.random.default_rng(seed)

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> torch.Tensor:
        return torch.tensor([float(i), np.random.rand(), self.rng.random()])


def seed_worker(worker_id: int) -> None:
    """A ``worker_init_fn``: give this worker's copy of the data set a generator seeded with the
    worker's own seed (``get_worker_info().seed``, derived from the loader's generator)."""
    info = torch.utils.data.get_worker_info()
    info.dataset.rng = np.random.default_rng(info.seed)
