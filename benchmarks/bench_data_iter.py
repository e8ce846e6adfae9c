"""data_iter / load_array (batches by tensor indexing) vs DataLoader(TensorDataset), one epoch each.

The goal of issue 2 is >= 10x faster per epoch. Both sides shuffle and visit every example once;
the two are timed alternately in the same process, and we report medians over repeats.
"""
from __future__ import annotations

import os
import statistics
import time

import torch
from torch.utils.data import DataLoader, TensorDataset

import d2lite

# (label, examples, shape of one example, dtype, batch size, epochs per timing)
CASES = [
    ("d2l linear regression (3.2)", 1_000, (2,), torch.float32, 10, 20),
    ("Fashion-MNIST-sized images, float32", 60_000, (1, 28, 28), torch.float32, 256, 1),
    ("Fashion-MNIST-sized images, uint8 (as load_data stores them)", 60_000, (28, 28), torch.uint8, 256, 1),
]
REPEATS = 9


def epoch_seconds(make_batches, epochs: int) -> float:
    """Mean seconds per epoch over ``epochs`` consecutive epochs."""
    start = time.perf_counter()
    for _ in range(epochs):
        for X, y in make_batches():
            pass
    return (time.perf_counter() - start) / epochs


def measure(n: int, shape: tuple, dtype: torch.dtype, batch_size: int, epochs: int) -> dict[str, float]:
    g = torch.Generator().manual_seed(0)
    X = torch.randint(0, 256, (n, *shape), generator=g).to(dtype)
    y = torch.randint(0, 10, (n,), generator=g)
    loader = DataLoader(TensorDataset(X, y), batch_size, shuffle=True)
    ours = d2lite.load_array((X, y), batch_size)
    contenders = {
        "DataLoader(TensorDataset)": lambda: loader,
        "d2lite.data_iter": lambda: d2lite.data_iter(batch_size, X, y),
        "d2lite.load_array": lambda: ours,
    }
    times = {name: [] for name in contenders}
    for name, make in contenders.items():  # warm-up epoch
        epoch_seconds(make, 1)
    for _ in range(REPEATS):  # alternate, so that machine load hits all sides alike
        for name, make in contenders.items():
            times[name].append(epoch_seconds(make, epochs))
    return {name: statistics.median(t) for name, t in times.items()}


def main() -> str:
    torch.set_num_threads(1)
    load_before = os.getloadavg()[0]
    rows, fashion_ours, fashion_base = [], 0.0, 0.0
    for label, n, shape, dtype, batch_size, epochs in CASES:
        med = measure(n, shape, dtype, batch_size, epochs)
        base = med["DataLoader(TensorDataset)"]
        if dtype == torch.float32 and n == 60_000:
            fashion_ours, fashion_base = med["d2lite.load_array"], base
            fashion_iter = med["d2lite.data_iter"]
        rows.append(
            f"| {label} | {n:,} x {tuple(shape)}, batch {batch_size} | {base * 1e3:.1f} ms "
            f"| {med['d2lite.data_iter'] * 1e3:.2f} ms | **{base / med['d2lite.data_iter']:.1f}x** "
            f"| {med['d2lite.load_array'] * 1e3:.2f} ms | **{base / med['d2lite.load_array']:.1f}x** |"
        )
    return "\n".join([
        "## data_iter vs DataLoader(TensorDataset), one shuffled epoch",
        f"<!-- headline: data_iter vs DataLoader(TensorDataset), Fashion-MNIST-sized float32 epoch | "
        f"{fashion_base / fashion_iter:.1f}x faster | >= 10x -->",
        "",
        f"Median of {REPEATS} timings per contender (each the mean of 20 epochs for the small case, one epoch "
        "otherwise), measured alternately in one process with one torch thread; "
        "speed-up = DataLoader time / d2lite time (goal: >= 10x). "
        f"Load average of the machine at the start: {load_before:.1f} on {os.cpu_count()} cores "
        "(other jobs running make all times longer and the small case noisy; the ratios are what counts).",
        "",
        "| case | data | DataLoader(TensorDataset) | data_iter | speed-up | load_array | speed-up |",
        "| --- | --- | --- | --- | --- | --- | --- |",
        *rows,
        "",
        "DataLoader(TensorDataset) fetches the examples one at a time and stacks them with its collate "
        "function; data_iter and load_array draw one permutation per epoch and gather each minibatch "
        "with one `index_select` per tensor, so their cost is a few operations per batch rather than per "
        f"example. On this machine a Fashion-MNIST-sized epoch of batches takes {fashion_ours * 1e3:.0f} ms "
        f"with load_array instead of {fashion_base * 1e3:.0f} ms with a DataLoader; the speed-up is largest "
        "for uint8 images (how load_data stores them): a quarter of the bytes to gather per batch, while "
        "DataLoader's cost per example stays the same.",
    ])


if __name__ == "__main__":
    print(main())
