"""Data parallelism: what splitting the work costs or gains, on the devices this machine has.

Model A, d2l's multi-GPU LeNet (``d2lite.lenet_functional``), one epoch of MNIST-5k with a
global batch of 256, trained four ways, each timed against single-device training:
- single device: the model as an ``nn.Module``, one device;
- by hand, k replicas: ``d2lite.get_params`` / ``split_batch`` / ``allreduce`` / ``sgd``, with
  k = 1 and k = 2 (two GPUs when there are two, otherwise two replicas on the same device);
- ``nn.DataParallel``: on a machine without GPUs it is a plain module (its device_ids are empty).
Model B, the course's DDP worker (``course/ddp_lenet.py``, d2l's sigmoid LeNet): torchrun with
2 processes against 1 process: NCCL with a GPU per process, else gloo (on the CPU, or on GPUs the
processes share). Figures are medians of REPEATS runs, after one untimed warm-up epoch.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
from torch import nn
from torch.nn import functional as F

import d2lite

ROOT = Path(__file__).resolve().parent.parent
REPEATS = int(os.environ.get("BENCH_REPEATS", "3"))
BATCH_SIZE, LR = 256, 0.2


class FunctionalLeNet(nn.Module):
    """``lenet_functional`` with its parameters registered, for the module-based variants."""

    def __init__(self, params):
        super().__init__()
        self.params = nn.ParameterList(nn.Parameter(p.clone()) for p in params)

    def forward(self, X):
        return d2lite.lenet_functional(X, list(self.params))


def batches():
    with contextlib.redirect_stdout(io.StringIO()):
        train_iter, _ = d2lite.load_data("mnist5k", BATCH_SIZE, generator=torch.Generator().manual_seed(0))
    return list(train_iter)


def sync(devices):
    for device in devices:
        if torch.device(device).type == "cuda":
            torch.cuda.synchronize(device)


def epoch_module(net, data, device) -> float:
    net.to(device)
    optimizer = torch.optim.SGD(net.parameters(), lr=LR)
    start = time.perf_counter()
    for X, y in data:
        X, y = X.to(device), y.to(device)
        optimizer.zero_grad()
        F.cross_entropy(net(X), y).backward()
        optimizer.step()
    sync([device])
    return time.perf_counter() - start


def epoch_by_hand(params, data, devices) -> float:
    replicas = [d2lite.get_params(params, d) for d in devices]
    start = time.perf_counter()
    for X, y in data:
        X_shards, y_shards = d2lite.split_batch(X, y, devices)
        losses = [F.cross_entropy(d2lite.lenet_functional(Xs, W), ys, reduction="sum")
                  for Xs, ys, W in zip(X_shards, y_shards, replicas)]
        for loss in losses:
            loss.backward()
        with torch.no_grad():
            for i in range(len(params)):
                d2lite.allreduce([replica[i].grad for replica in replicas])
        for replica in replicas:
            d2lite.sgd(replica, LR, X.shape[0])
    sync(devices)
    return time.perf_counter() - start


def ddp_seconds_per_epoch(nproc: int) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "summary.json"
        env = dict(os.environ, D2LITE_DATASET="mnist5k")
        subprocess.run(
            [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}",
             str(ROOT / "course" / "ddp_lenet.py"), "--dataset", "mnist5k", "--epochs", "2",
             "--batch-size", str(BATCH_SIZE), "--out", str(out)],
            cwd=ROOT, env=env, check=True, capture_output=True, text=True,
        )
        return json.loads(out.read_text())["seconds_per_epoch"]


def main() -> str:
    device = d2lite.try_gpu()
    gpus = [d for d in d2lite.try_all_gpus() if d.type == "cuda"]
    two = gpus[:2] if len(gpus) >= 2 else [device, device]
    params = d2lite.lenet_params(generator=torch.Generator().manual_seed(0))
    data = batches()
    runs = {name: [] for name in ("single", "hand1", "hand2", "dp", "ddp1", "ddp2")}
    # One untimed epoch first: on a GPU the first one pays for CUDA's context and cuDNN's choice of
    # kernels (the 2026-11-27 H100 run lacked it, and its single-device row came out slowest).
    epoch_module(FunctionalLeNet(params), data, device)
    for _ in range(REPEATS):
        runs["single"].append(epoch_module(FunctionalLeNet(params), data, device))
        runs["hand1"].append(epoch_by_hand(params, data, [device]))
        runs["hand2"].append(epoch_by_hand(params, data, two))
        dp = nn.DataParallel(FunctionalLeNet(params))
        runs["dp"].append(epoch_module(dp, data, device))
        runs["ddp1"].append(ddp_seconds_per_epoch(1))
        runs["ddp2"].append(ddp_seconds_per_epoch(2))
    m = {name: statistics.median(values) for name, values in runs.items()}
    where2 = "two GPUs" if len(gpus) >= 2 else f"two replicas on one {device.type.upper()}"
    rows = [
        ("single device (nn.Module)", m["single"], m["single"], "-"),
        ("by hand, k = 1", m["hand1"], m["single"], "single device"),
        (f"by hand, k = 2 ({where2})", m["hand2"], m["single"], "single device"),
        (f"nn.DataParallel (device_ids {dp.device_ids})", m["dp"], m["single"], "single device"),
        ("DDP, torchrun 1 process", m["ddp1"], m["ddp1"], "-"),
        ("DDP, torchrun 2 processes", m["ddp2"], m["ddp1"], "DDP 1 process"),
    ]
    return "\n".join([
        f"<!-- headline: by hand k=2 / DataParallel / DDP 2 procs, time vs 1 device ({device.type}) | "
        f"{m['hand2'] / m['single']:.2f} / {m['dp'] / m['single']:.2f} / {m['ddp2'] / m['ddp1']:.2f} | "
        "(overhead ratios) -->",
        f"## Data parallelism on {device} ({'%d GPU(s)' % len(gpus) if gpus else 'no GPU'}; "
        f"MNIST-5k, batch {BATCH_SIZE}, medians of {REPEATS})",
        "",
        "| variant | s/epoch | time ratio | relative to |",
        "| --- | ---: | ---: | --- |",
        *(f"| {name} | {s:.2f} | {s / ref:.2f} | {rel} |" for name, s, ref, rel in rows),
        "",
        "A ratio above 1 is overhead, below 1 a speed-up. With one device, replicas take turns on it, "
        "so k = 2 can only cost: splitting the batch, a second forward/backward launch per step and "
        "the all-reduce. " + (
            "DataParallel without GPUs is the plain module (ratio ~1). DDP's 2 processes share the "
            "same cores as 1 process does, so on a CPU the ratio shows the price of process-level "
            "parallelism (gloo all-reduce, smaller per-process batches) rather than a gain."
            if not gpus else
            f"DataParallel on {len(gpus)} GPU(s) replicates the module to each device every step. DDP's 2 "
            "processes on fewer than 2 GPUs share them (gloo through host memory, NCCL refuses two "
            "ranks on one GPU), so that ratio says nothing about NCCL across GPUs. On one GPU none of "
            "these figures predicts a machine with several: there, each replica has a device of its own."),
    ])


if __name__ == "__main__":
    print(main())
