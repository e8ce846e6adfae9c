"""d2lite.workers: the data sets and worker_init_fn that notebooks 06b and 06c give to DataLoader workers
work in real worker processes started by spawn and by forkserver (fresh interpreters that import
them), and seed_worker gives each worker's copy of the data set its own generator."""
import multiprocessing

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader

import d2lite

METHODS = [m for m in ("spawn", "forkserver") if m in multiprocessing.get_all_start_methods()]


def test_slow_dataset_examples():
    slow = d2lite.SlowDataset(5, delay=0.0)
    assert len(slow) == 5
    assert torch.equal(slow[3], torch.full((4,), 3.0))


@pytest.mark.parametrize("method", METHODS)
def test_slow_dataset_in_fresh_workers(method):
    loader = DataLoader(d2lite.SlowDataset(6, delay=0.0), batch_size=2, num_workers=2, multiprocessing_context=method)
    assert torch.equal(torch.cat(list(loader))[:, 0], torch.arange(6.0))


@pytest.mark.parametrize("method", METHODS)
def test_seed_worker_gives_each_worker_its_own_generator(method):
    def rng_column(worker_init_fn):
        loader = DataLoader(d2lite.JitterDataset(4), batch_size=1, num_workers=2, worker_init_fn=worker_init_fn,
                            generator=torch.Generator().manual_seed(0), multiprocessing_context=method)
        rows = torch.cat(list(loader))
        assert rows[:, 0].tolist() == [0.0, 1.0, 2.0, 3.0]
        return rows[:, 2].tolist()

    # Without seed_worker, both workers draw from identical copies: examples 0 and 1 (first draw of
    # worker 0 and worker 1) get the same number, the first draw of default_rng(0).
    plain = rng_column(None)
    assert plain[0] == plain[1] == pytest.approx(np.random.default_rng(0).random(), rel=1e-6)
    seeded = rng_column(d2lite.seed_worker)
    assert seeded[0] != seeded[1], f"seed_worker should give the two workers different draws, got {seeded}"
    assert rng_column(d2lite.seed_worker) == seeded, "the draws derive from the loader's generator: reproducible"
