"""Device helpers pick CUDA, then MPS, then the CPU, and never return an empty list."""
import pytest
import torch

import d2lite


@pytest.fixture
def machine(monkeypatch):
    """Pretend the machine has `cuda` CUDA GPUs and MPS present or not."""
    def set_machine(cuda: int, mps: bool):
        monkeypatch.setattr(torch.cuda, "device_count", lambda: cuda)
        monkeypatch.setattr(torch.backends.mps, "is_available", lambda: mps)
    return set_machine


def test_without_any_accelerator_everything_is_the_cpu(machine):
    machine(cuda=0, mps=False)
    assert d2lite.num_gpus() == 0
    assert d2lite.try_gpu() == torch.device("cpu")
    assert d2lite.try_gpu(3) == torch.device("cpu")
    assert d2lite.try_all_gpus() == [torch.device("cpu")]


def test_cuda_gpus_are_used_by_index(machine):
    machine(cuda=2, mps=False)
    assert d2lite.num_gpus() == 2
    assert d2lite.try_gpu() == torch.device("cuda:0")
    assert d2lite.try_gpu(1) == torch.device("cuda:1")
    assert d2lite.try_gpu(2) == torch.device("cpu"), "a GPU index past the last GPU falls back to the CPU"
    assert d2lite.try_all_gpus() == [torch.device("cuda:0"), torch.device("cuda:1")]


def test_mps_is_the_first_gpu_when_there_is_no_cuda(machine):
    machine(cuda=0, mps=True)
    assert d2lite.try_gpu(0) == torch.device("mps")
    assert d2lite.try_gpu(1) == torch.device("cpu")
    assert d2lite.try_all_gpus() == [torch.device("mps")]


def test_cuda_wins_over_mps(machine):
    machine(cuda=1, mps=True)
    assert d2lite.try_gpu() == torch.device("cuda:0")
    assert d2lite.try_all_gpus() == [torch.device("cuda:0")]


def test_the_real_machine_gives_usable_devices():
    devices = d2lite.try_all_gpus()
    assert devices, "try_all_gpus() must never be empty"
    assert torch.ones(2, device=d2lite.try_gpu()).sum().item() == 2
    assert d2lite.num_gpus() == torch.cuda.device_count()


def test_negative_index_is_an_error():
    with pytest.raises(ValueError, match="i >= 0"):
        d2lite.try_gpu(-1)
