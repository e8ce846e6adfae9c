"""06_performance's two speed levers on its own models: bfloat16 autocast and ``torch.compile``.

Model A is 06's MLP (784-256-10, ReLU) trained with SGD on MNIST-5k batches of 64 and of 1024;
each contender trains the same steps from the same seed, and we time the median of 5 epochs after
a warm-up epoch (the compiled contenders compile during the warm-up). Model B is 06's ``gelu_tanh``
on 1M and 16M floats, eager against compiled (median of 20 calls). On a GPU every timing ends with
``torch.cuda.synchronize()``, so the clock measures finished work, not queued kernels.
"""
from __future__ import annotations

import math
import statistics
import time

import torch
import torch.nn.functional as F
from torch import nn

import d2lite

EPOCHS = 5
BATCH_SIZES = (64, 1024)


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def mlp() -> nn.Module:
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))


def batches(device: torch.device, batch_size: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """MNIST-5k's training images as float batches already on ``device`` (the data is not timed)."""
    train, _ = d2lite.load_data("mnist5k", batch_size)
    return [(X.to(device), y.to(device)) for X, y in train]


def epoch_seconds(data, device: torch.device, dtype: torch.dtype | None, compiled: bool) -> tuple[float, float]:
    """Median seconds of one epoch (after a warm-up epoch) and the last epoch's mean loss."""
    torch.manual_seed(0)
    net = mlp().to(device)
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
    forward = torch.compile(net) if compiled else net

    def epoch() -> float:
        total = torch.zeros((), device=device)
        for X, y in data:
            with torch.autocast(device.type, dtype=dtype or torch.bfloat16, enabled=dtype is not None):
                loss = F.cross_entropy(forward(X), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.detach().float()
        return (total / len(data)).item()   # one sync per epoch

    epoch()
    times, loss = [], math.nan
    for _ in range(EPOCHS):
        synchronize(device)
        start = time.perf_counter()
        loss = epoch()
        synchronize(device)
        times.append(time.perf_counter() - start)
    return statistics.median(times), loss


def gelu_tanh(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


def call_seconds(fn, x, device: torch.device, repeats: int = 20) -> float:
    fn(x)
    times = []
    for _ in range(repeats):
        synchronize(device)
        start = time.perf_counter()
        fn(x)
        synchronize(device)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> str:
    device = d2lite.try_gpu()
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU"
    rows, speedups = [], {}
    for batch_size in BATCH_SIZES:
        data = batches(device, batch_size)
        base, base_loss = epoch_seconds(data, device, None, compiled=False)
        for label, dtype, compiled in [("float32, eager", None, False), ("bfloat16 autocast, eager", torch.bfloat16, False),
                                       ("float32, compiled", None, True), ("bfloat16 autocast, compiled", torch.bfloat16, True)]:
            torch._dynamo.reset()
            seconds, loss = (base, base_loss) if label == "float32, eager" else epoch_seconds(data, device, dtype, compiled)
            speedups[(batch_size, label)] = base / seconds
            rows.append(f"| MLP, batch {batch_size} | {label} | {seconds * 1e3:.1f} ms | **{base / seconds:.2f}x** | {loss:.3f} |")
    for size in (1_000_000, 16_000_000):
        x = torch.randn(size, device=device)
        torch._dynamo.reset()
        eager, compiled = call_seconds(gelu_tanh, x, device), call_seconds(torch.compile(gelu_tanh), x, device)
        speedups[(size, "gelu")] = eager / compiled
        rows.append(f"| gelu_tanh, {size:,} floats | compiled vs eager | {compiled * 1e3:.3f} ms "
                    f"(eager {eager * 1e3:.3f} ms) | **{eager / compiled:.2f}x** | - |")
    return "\n".join([
        f"<!-- headline: 06's MLP epoch (batch 1024) on {device.type}: bf16 autocast / compile / both vs float32 eager | "
        f"{speedups[(1024, 'bfloat16 autocast, eager')]:.2f}x / {speedups[(1024, 'float32, compiled')]:.2f}x / "
        f"{speedups[(1024, 'bfloat16 autocast, compiled')]:.2f}x | (speed-ups; > 1 is faster) -->",
        f"## Mixed precision and torch.compile on {name} (06_performance's models, torch {torch.__version__})",
        "",
        f"Median of {EPOCHS} epochs over MNIST-5k (4,000 images) after a warm-up epoch that includes compiling; "
        "speed-up = float32 eager time / contender time (above 1 is faster), measured one after the other in "
        "one process. The loss column (mean training loss of the last epoch) shows that every contender trains.",
        "",
        "| model | contender | time per epoch (call) | speed-up | loss |",
        "| --- | --- | --- | --- | --- |",
        *rows,
        "",
        "06's MLP is small (about 200k parameters): each training step is a handful of short kernels, so "
        "its time is mostly launching them and Python's own work. A lever that adds work to every step "
        "(autocast's casts; the compiled module's guard checks, with the backward pass and the optimizer "
        "step still run separately) can then cost more than it saves: that is what the MLP rows measure "
        "here, not a verdict on large models. The gelu_tanh rows show what compile is for: one fused "
        "kernel instead of several passes over a large tensor.",
    ])
