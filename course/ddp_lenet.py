"""Train LeNet with DistributedDataParallel (DDP): one process per device, started by torchrun.

    torchrun --standalone --nproc-per-node=2 course/ddp_lenet.py --dataset mnist5k --epochs 2

torchrun starts ``--nproc-per-node`` copies of this script and gives each one its identity in
environment variables: RANK (0 .. WORLD_SIZE-1 over all machines), LOCAL_RANK (its index on this
machine), WORLD_SIZE, and MASTER_ADDR/MASTER_PORT (where the processes meet). Each process:

1. joins the process group: NCCL when every local process has a CUDA GPU of its own; gloo when
   processes share fewer GPUs (NCCL refuses two ranks on one GPU) or when there is none, with the
   model on the CPU (CPU "replicas" teach the same algorithm on any laptop);
2. builds the same LeNet from the same seed, wrapped in DDP (which also broadcasts rank 0's
   weights, so every replica starts identical);
3. reads only its own share of each epoch, chosen by a DistributedSampler (on a GPU in pinned
   memory, copied with ``non_blocking=True`` so that the copy overlaps with computing);
4. trains: during ``backward()`` DDP all-reduces (averages) the gradients across processes, so
   every replica takes the same SGD step and the weights stay identical.

Rank 0 prints one line per epoch, evaluates the test accuracy, checks that all replicas ended
with bit-identical weights, and writes a JSON summary (``--out``). ``--save-dir`` makes every rank
save its final ``state_dict`` as ``rank<r>.pt`` so that others can check the replicas themselves.

Several machines: run the same command on each one with ``--nnodes=N --node-rank=i`` (or an
elastic ``--rdzv-backend=c10d --rdzv-endpoint=HOST:PORT --rdzv-id=JOB``) instead of
``--standalone``; nothing in this script changes.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import time
from pathlib import Path

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler

import d2lite


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dataset", default=os.environ.get("D2LITE_DATASET") or "fashion_mnist",
                   help="fashion_mnist or mnist5k (default: $D2LITE_DATASET, else fashion_mnist)")
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--batch-size", type=int, default=256,
                   help="GLOBAL batch size, split evenly over the processes")
    p.add_argument("--lr", type=float, default=0.9)
    p.add_argument("--activation", choices=["sigmoid", "relu"], default="sigmoid")
    p.add_argument("--pool", choices=["avg", "max"], default="avg")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, help="rank 0 writes its JSON summary here")
    p.add_argument("--save-dir", type=Path, help="every rank saves its final state_dict here")
    return p.parse_args(argv)


def init_lenet(activation: str, pool: str, seed: int) -> nn.Module:
    """d2lite.lenet with Xavier-uniform weights drawn from ``seed`` (identical on every rank)."""
    torch.manual_seed(seed)
    net = d2lite.lenet(activation=activation, pool=pool)
    for m in net.modules():
        if isinstance(m, (nn.Linear, nn.Conv2d)):
            nn.init.xavier_uniform_(m.weight)
    return net


def choose_device_and_backend(local_rank: int, local_world_size: int,
                              gpu_count: int | None = None) -> tuple[torch.device, str]:
    """Where this process trains and how the processes talk (``gpu_count``: visible CUDA GPUs,
    asked of torch when None):

    - every local process has a GPU of its own: ``cuda:<local_rank>`` with NCCL;
    - fewer GPUs than processes: the processes share them in turn (``cuda:<local_rank % gpus>``)
      with gloo, since NCCL refuses two ranks on one GPU; gloo all-reduces CUDA tensors too, through
      host memory, so this runs the algorithm on a GPU but says nothing about NCCL's speed;
    - no GPU: the CPU with gloo.
    """
    if gpu_count is None:
        gpu_count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if gpu_count >= local_world_size:
        return torch.device("cuda", local_rank), "nccl"
    if gpu_count > 0:
        return torch.device("cuda", local_rank % gpu_count), "gloo"
    return torch.device("cpu"), "gloo"


def sync(device: torch.device) -> None:
    """Wait for the device, so that the clock measures finished work, not queued kernels."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def replicas_max_difference(net: nn.Module, world_size: int) -> float:
    """Largest |w_rank - w_0| over all parameters and ranks (a collective: every rank calls it)."""
    flat = torch.nn.utils.parameters_to_vector(net.parameters()).detach()
    gathered = [torch.empty_like(flat) for _ in range(world_size)]
    dist.all_gather(gathered, flat)
    return max((g - gathered[0]).abs().max().item() for g in gathered)


def shard_loader(dataset, per_rank: int, sampler, device: torch.device) -> DataLoader:
    """This rank's batches. For a CUDA device they arrive in pinned (page-locked) memory, so that
    ``to_device``'s non-blocking copies run while the GPU computes; on the CPU pinning would
    be a wasted copy (and PyTorch warns that no accelerator is there to use it)."""
    return DataLoader(dataset, batch_size=per_rank, sampler=sampler, pin_memory=device.type == "cuda")


def to_device(X: torch.Tensor, y: torch.Tensor, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """The batch on ``device``, copied with ``non_blocking=True``: a blocking copy from the CPU
    to a GPU would wait for all the GPU's queued work first (on the CPU it is the tensors themselves)."""
    return X.to(device, non_blocking=True), y.to(device, non_blocking=True)


@torch.no_grad()
def accuracy(net: nn.Module, data_iter, device: torch.device) -> float:
    """Fraction of correctly classified examples of ``data_iter``."""
    net.eval()
    correct = torch.zeros((), dtype=torch.int64, device=device)
    total = 0
    for X, y in data_iter:
        X, y = to_device(X, y, device)
        correct += (net(X).argmax(dim=1) == y).sum()
        total += y.numel()
    return correct.item() / total


def main(argv=None) -> dict | None:
    args = parse_args(argv)
    rank, world_size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ["LOCAL_RANK"])
    local_world_size = int(os.environ.get("LOCAL_WORLD_SIZE", world_size))
    if args.batch_size % world_size:
        raise SystemExit(f"--batch-size {args.batch_size} must be divisible by the {world_size} "
                         "processes, so that the global batch matches single-device training")
    device, backend = choose_device_and_backend(local_rank, local_world_size)
    if device.type == "cuda":
        torch.cuda.set_device(device)
    # With NCCL, name the GPU: NCCL then creates its communicator for that device at once (a broken
    # setup fails here, not at the first collective). Gloo binds no device.
    dist.init_process_group(backend=backend, device_id=device if backend == "nccl" else None)
    log = print if rank == 0 else (lambda *a, **k: None)
    try:
        # Only rank 0 says what it loaded; every rank reads the same files.
        quiet = contextlib.nullcontext() if rank == 0 else contextlib.redirect_stdout(io.StringIO())
        with quiet:
            train_iter, test_iter = d2lite.load_data(args.dataset, args.batch_size)
        sampler = DistributedSampler(train_iter.dataset, num_replicas=world_size, rank=rank,
                                     shuffle=True, seed=args.seed)
        per_rank = args.batch_size // world_size
        loader = shard_loader(train_iter.dataset, per_rank, sampler, device)
        to_input = train_iter.transform  # uint8 (B, 28, 28) -> float32 (B, 1, 28, 28) in [0, 1]

        net = init_lenet(args.activation, args.pool, args.seed).to(device)
        model = DistributedDataParallel(net, device_ids=[device.index] if device.type == "cuda" else None)
        optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
        loss_fn = nn.CrossEntropyLoss()
        log(f"DDP: {world_size} processes, backend {backend}, device {device} on rank 0, "
            f"global batch {args.batch_size} = {world_size} x {per_rank}")

        history = []
        for epoch in range(args.epochs):
            sampler.set_epoch(epoch)  # a new shuffle each epoch, the same on every rank
            model.train()
            loss_sum = torch.zeros((), device=device)
            seen = 0
            sync(device)
            tic = time.perf_counter()
            for X, y in loader:
                X, y = to_device(X, y, device)
                X = to_input(X)  # uint8 pixels were copied (4x fewer bytes); convert on the device
                optimizer.zero_grad()
                loss = loss_fn(model(X), y)
                loss.backward()  # DDP averages the gradients across all processes here
                optimizer.step()
                loss_sum += loss.detach() * y.numel()  # stays on the device: no host sync
                seen += y.numel()
            sync(device)
            seconds = time.perf_counter() - tic
            history.append({"epoch": epoch + 1, "train_loss_rank0": loss_sum.item() / seen,
                            "seconds": seconds})
            log(f"epoch {epoch + 1}: train loss (rank 0's shard) {history[-1]['train_loss_rank0']:.3f}, "
                f"{seconds:.2f} s")

        max_diff = replicas_max_difference(model.module, world_size)
        if args.save_dir is not None:
            args.save_dir.mkdir(parents=True, exist_ok=True)
            torch.save({k: v.cpu() for k, v in model.module.state_dict().items()},
                       args.save_dir / f"rank{rank}.pt")
        summary = None
        if rank == 0:
            test_acc = accuracy(model.module, test_iter, device)
            summary = {
                "world_size": world_size, "backend": backend, "device": str(device),
                "dataset": args.dataset, "epochs": args.epochs, "global_batch_size": args.batch_size,
                "per_rank_batch_size": per_rank, "lr": args.lr,
                "activation": args.activation, "pool": args.pool,
                "test_acc": test_acc,
                "seconds_per_epoch": sum(h["seconds"] for h in history) / max(len(history), 1),
                "max_abs_weight_difference_across_ranks": max_diff,
                "history": history,
            }
            log(f"test accuracy {test_acc:.3f}; replicas identical: {max_diff == 0.0} "
                f"(max |difference| {max_diff:.3g})")
            if args.out is not None:
                args.out.parent.mkdir(parents=True, exist_ok=True)
                args.out.write_text(json.dumps(summary, indent=2))
        dist.barrier()
        return summary
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
