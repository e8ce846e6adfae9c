"""The DDP worker of 05_multigpu, run for real: torchrun starts two gloo processes on the CPU."""
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch.utils.data import TensorDataset

import d2lite

ROOT = Path(__file__).resolve().parent.parent
WORKER = ROOT / "course" / "ddp_lenet.py"


@pytest.fixture(scope="module")
def ddp_run(tmp_path_factory):
    """One 2-process run of the worker on mnist5k: (its JSON summary, its folder of state_dicts)."""
    out, scratch = tmp_path_factory.mktemp("ddp"), tmp_path_factory.mktemp("scratch")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": "",  # gloo on the CPU
           "TMPDIR": str(scratch)}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2",
           "--log-dir", str(out / "torchrun-logs"),  # torchrun's files: otherwise /tmp/torchelastic_*
           str(WORKER), "--dataset", "mnist5k", "--epochs", "2", "--batch-size", "64", "--lr", "0.1",
           "--activation", "relu", "--pool", "max", "--out", str(out / "summary.json"),
           "--save-dir", str(out)]
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1500)
    assert done.returncode == 0, f"torchrun failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
    # torchinductor_<user> is PyTorch's cache, one per user, reused by every run: not left behind.
    left = [p.name for p in scratch.iterdir() if not p.name.startswith("torchinductor_")]
    assert not left, f"left behind in the temporary folder: {left}"
    return json.loads((out / "summary.json").read_text()), out, done.stdout


def test_two_gloo_processes_on_the_cpu(ddp_run):
    """The run really used two processes, the gloo backend, and split the global batch."""
    summary, _, _ = ddp_run
    assert summary["world_size"] == 2
    assert summary["backend"] == "gloo" and summary["device"] == "cpu"
    assert summary["per_rank_batch_size"] * 2 == summary["global_batch_size"] == 64


def test_only_rank_0_logs(ddp_run):
    """Each epoch is reported once, not once per process."""
    _, _, stdout = ddp_run
    assert stdout.count("epoch 1:") == 1, stdout
    assert stdout.count("Loaded mnist5k") == 1, stdout


def test_both_ranks_end_with_identical_weights(ddp_run):
    """The state_dicts the two processes saved are bit-identical (and were trained: not the init)."""
    summary, out, _ = ddp_run
    rank0 = torch.load(out / "rank0.pt")
    rank1 = torch.load(out / "rank1.pt")
    assert rank0.keys() == rank1.keys()
    for name in rank0:
        assert torch.equal(rank0[name], rank1[name]), f"{name} differs between the ranks"
    assert summary["max_abs_weight_difference_across_ranks"] == 0.0
    untrained = d2lite.lenet(activation="relu", pool="max").state_dict()
    assert any(not torch.equal(rank0[k], untrained[k]) for k in untrained)


def test_trained_model_classifies_digits(ddp_run):
    """Rank 0's weights, evaluated here independently, reach the reported accuracy, far above chance."""
    summary, out, _ = ddp_run
    net = d2lite.lenet(activation="relu", pool="max")
    net.load_state_dict(torch.load(out / "rank0.pt"))
    net.eval()
    _, test_iter = d2lite.load_data("mnist5k", batch_size=500)
    correct = total = 0
    with torch.no_grad():
        for X, y in test_iter:
            correct += (net(X).argmax(dim=1) == y).sum().item()
            total += len(y)
    assert total == 1000
    assert correct / total == pytest.approx(summary["test_acc"])
    assert summary["test_acc"] > 0.7, "2 epochs of ReLU LeNet reach about 0.9 on mnist5k; chance is 0.1"


def load_worker():
    """course/ddp_lenet.py as a module (it is a script next to the notebooks, not a package)."""
    spec = importlib.util.spec_from_file_location("ddp_lenet", WORKER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class CopySpy(torch.Tensor):
    """A batch tensor that notes the non_blocking flag of each .to() call; its copy is plain."""

    flags: list = []

    def to(self, *args, **kwargs):
        CopySpy.flags.append(kwargs.get("non_blocking", False))
        return torch.Tensor.to(self.as_subclass(torch.Tensor), *args, **kwargs)


def test_batches_are_pinned_for_a_gpu_and_copied_without_blocking(monkeypatch):
    """On a GPU the loader pins and the copies do not block; checked on the CPU (the calls are
    the same; what they do there is nothing)."""
    worker = load_worker()
    data = TensorDataset(torch.zeros(8, 28, 28, dtype=torch.uint8), torch.zeros(8, dtype=torch.int64))
    assert worker.shard_loader(data, 4, None, torch.device("cuda", 0)).pin_memory
    assert not worker.shard_loader(data, 4, None, torch.device("cpu")).pin_memory
    monkeypatch.setattr(CopySpy, "flags", [])
    batches = [(torch.rand(4, 1, 28, 28).as_subclass(CopySpy), torch.zeros(4, dtype=torch.int64).as_subclass(CopySpy))] * 3
    acc = worker.accuracy(d2lite.lenet(), batches, torch.device("cpu"))
    assert 0 <= acc <= 1
    assert CopySpy.flags == [True] * 6, "X and y of every batch are copied with non_blocking=True"


@pytest.mark.parametrize("gpus, nproc, expected", [
    (2, 2, [("cuda:0", "nccl"), ("cuda:1", "nccl")]),   # a GPU each: NCCL
    (4, 2, [("cuda:0", "nccl"), ("cuda:1", "nccl")]),
    (1, 2, [("cuda:0", "gloo"), ("cuda:0", "gloo")]),   # NCCL refuses two ranks on one GPU
    (2, 3, [("cuda:0", "gloo"), ("cuda:1", "gloo"), ("cuda:0", "gloo")]),
    (0, 2, [("cpu", "gloo"), ("cpu", "gloo")]),
])
def test_processes_share_fewer_gpus_with_gloo(gpus, nproc, expected):
    """Each local process trains on a GPU when there is one; NCCL only when no two share one."""
    worker = load_worker()
    chosen = [worker.choose_device_and_backend(rank, nproc, gpu_count=gpus) for rank in range(nproc)]
    assert [(str(device), backend) for device, backend in chosen] == expected
