"""Device helpers ask torch.accelerator, fall back to the CPU, and never return an empty list."""
import pytest
import torch

import d2lite


@pytest.fixture
def machine(monkeypatch):
    """Pretend the machine has `count` devices of the accelerator `kind` (None: no accelerator)."""
    def set_machine(kind, count):
        monkeypatch.setattr(torch.accelerator, "is_available", lambda: kind is not None and count > 0)
        monkeypatch.setattr(torch.accelerator, "current_accelerator",
                            lambda check_available=False: torch.device(kind) if kind else None)
        monkeypatch.setattr(torch.accelerator, "device_count", lambda: count if kind else 0)
    return set_machine


def test_without_any_accelerator_everything_is_the_cpu(machine):
    machine(None, 0)
    assert d2lite.num_gpus() == 0
    assert d2lite.try_gpu() == torch.device("cpu")
    assert d2lite.try_gpu(3) == torch.device("cpu")
    assert d2lite.try_all_gpus() == [torch.device("cpu")]


def test_a_cuda_build_on_a_machine_without_gpus_is_the_cpu(machine):
    machine("cuda", 0)  # built with CUDA, but no GPU visible (e.g. CUDA_VISIBLE_DEVICES="")
    assert d2lite.num_gpus() == 0 and d2lite.try_all_gpus() == [torch.device("cpu")]


def test_cuda_gpus_are_used_by_index(machine):
    machine("cuda", 2)
    assert d2lite.num_gpus() == 2
    assert d2lite.try_gpu() == torch.device("cuda:0")
    assert d2lite.try_gpu(1) == torch.device("cuda:1")
    assert d2lite.try_gpu(2) == torch.device("cpu"), "a GPU index past the last GPU falls back to the CPU"
    assert d2lite.try_all_gpus() == [torch.device("cuda:0"), torch.device("cuda:1")]


@pytest.mark.parametrize("kind", ["mps", "xpu"])
def test_other_accelerators_are_found_the_same_way(machine, kind):
    machine(kind, 1)
    assert d2lite.try_gpu(0) == torch.device(kind, 0)
    assert d2lite.try_gpu(1) == torch.device("cpu")
    assert d2lite.try_all_gpus() == [torch.device(kind, 0)]


def test_the_real_machine_gives_usable_devices():
    devices = d2lite.try_all_gpus()
    assert devices, "try_all_gpus() must never be empty"
    assert torch.ones(2, device=d2lite.try_gpu()).sum().item() == 2
    if torch.accelerator.is_available():
        assert d2lite.num_gpus() == torch.accelerator.device_count() == len(devices)
        assert torch.ones(1, device=devices[0]).device == devices[0], "indexed like a tensor's device"
    else:  # this project's CI machine: a CPU-only build
        assert d2lite.num_gpus() == 0 and devices == [torch.device("cpu")]


def test_negative_index_is_an_error():
    with pytest.raises(ValueError, match="i >= 0"):
        d2lite.try_gpu(-1)
