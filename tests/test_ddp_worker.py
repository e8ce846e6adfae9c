"""The DDP worker of 05_multigpu, run for real: torchrun starts two gloo processes on the CPU."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import d2lite

ROOT = Path(__file__).resolve().parent.parent
WORKER = ROOT / "course" / "ddp_lenet.py"


@pytest.fixture(scope="module")
def ddp_run(tmp_path_factory):
    """One 2-process run of the worker on mnist5k: (its JSON summary, its folder of state_dicts)."""
    out = tmp_path_factory.mktemp("ddp")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": ""}  # gloo on the CPU
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2",
           str(WORKER), "--dataset", "mnist5k", "--epochs", "2", "--batch-size", "64", "--lr", "0.1",
           "--activation", "relu", "--pool", "max", "--out", str(out / "summary.json"),
           "--save-dir", str(out)]
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"torchrun failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
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
