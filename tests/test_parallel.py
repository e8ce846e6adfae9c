"""Data-parallel helpers on the CPU and on device lists that repeat a device; run_distributed
with real gloo processes."""
import tempfile

import pytest
import torch
import torch.distributed as dist

import d2lite

CPU = torch.device("cpu")


def test_get_params_makes_fresh_replicas_even_on_the_same_device():
    params = [torch.randn(3, 2), torch.zeros(2)]
    replicas = [d2lite.get_params(params, CPU) for _ in range(2)]
    for replica in replicas:
        for original, copy in zip(params, replica):
            torch.testing.assert_close(copy, original)
            assert copy.requires_grad and copy.is_leaf and copy.device == CPU
            assert copy.untyped_storage().data_ptr() != original.untyped_storage().data_ptr()
    a, b = replicas
    assert all(x.untyped_storage().data_ptr() != y.untyped_storage().data_ptr() for x, y in zip(a, b))
    with torch.no_grad():
        a[0] += 1
    torch.testing.assert_close(b[0], params[0], msg="changing one replica must not change another")


def test_get_params_accepts_device_strings_and_params_that_require_grad():
    params = [torch.ones(2, requires_grad=True)]
    (copy,) = d2lite.get_params(params, "cpu")
    (copy * 3).sum().backward()
    assert params[0].grad is None, "a replica's gradient stays on the replica"
    torch.testing.assert_close(copy.grad, torch.full((2,), 3.0))


def test_allreduce_writes_the_sum_into_every_tensor():
    g = torch.Generator().manual_seed(0)
    data = [torch.randn(4, 3, generator=g) for _ in range(3)]
    expected = torch.stack(data).sum(dim=0)
    returned = d2lite.allreduce(data)
    assert returned is None, "allreduce works in place"
    for t in data:
        torch.testing.assert_close(t, expected)
    assert data[0].untyped_storage().data_ptr() != data[1].untyped_storage().data_ptr()


def test_allreduce_on_gradients_of_replicas():
    params = [torch.tensor([1.0, 2.0])]
    replicas = [d2lite.get_params(params, CPU) for _ in range(2)]
    for k, (w,) in enumerate(replicas):
        (w * (k + 1)).sum().backward()  # gradients 1 and 2
    d2lite.allreduce([w.grad for (w,) in replicas])
    for (w,) in replicas:
        torch.testing.assert_close(w.grad, torch.full((2,), 3.0))


def test_allreduce_of_one_tensor_leaves_it_unchanged():
    t = torch.arange(3.0)
    d2lite.allreduce([t])
    torch.testing.assert_close(t, torch.arange(3.0))


def test_allreduce_bad_input():
    with pytest.raises(ValueError, match="empty"):
        d2lite.allreduce([])
    with pytest.raises(ValueError, match=r"element 1 is \(3,\)"):
        d2lite.allreduce([torch.zeros(2), torch.zeros(3)])
    with pytest.raises(ValueError, match="dtype"):
        d2lite.allreduce([torch.zeros(2), torch.zeros(2, dtype=torch.int64)])
    with pytest.raises(TypeError, match="backward"):
        d2lite.allreduce([torch.zeros(2), None])


@pytest.mark.parametrize("n, k", [(8, 2), (10, 4), (5, 5), (7, 1)])
def test_split_batch_shards_concatenate_back(n, k):
    X = torch.arange(n * 3, dtype=torch.float32).reshape(n, 3)
    y = torch.arange(n)
    devices = [CPU] * k
    X_shards, y_shards = d2lite.split_batch(X, y, devices)
    assert len(X_shards) == len(y_shards) == k, "one shard per device"
    torch.testing.assert_close(torch.cat(X_shards), X)
    torch.testing.assert_close(torch.cat(y_shards), y)
    sizes = [len(s) for s in X_shards]
    assert max(sizes) - min(sizes) <= 1 and sizes == sorted(sizes, reverse=True)
    assert [len(s) for s in y_shards] == sizes
    for shard in X_shards:
        assert shard.device == CPU
        assert shard.untyped_storage().data_ptr() != X.untyped_storage().data_ptr(), "shards are copies"


def test_split_batch_matches_tensor_split_sizes():
    X, y = torch.zeros(10, 2), torch.zeros(10)
    X_shards, _ = d2lite.split_batch(X, y, ["cpu", "cpu", "cpu", "cpu"])
    assert [len(s) for s in X_shards] == [len(s) for s in torch.tensor_split(X, 4)] == [3, 3, 2, 2]


def test_split_batch_bad_input():
    X, y = torch.zeros(3, 2), torch.zeros(3)
    with pytest.raises(ValueError, match="empty"):
        d2lite.split_batch(X, y, [])
    with pytest.raises(ValueError, match="X has 3 examples but y has 2"):
        d2lite.split_batch(X, y[:2], [CPU])
    with pytest.raises(ValueError, match="batch of 3 examples cannot give each of 4 devices"):
        d2lite.split_batch(X, y, [CPU] * 4)


@pytest.mark.skipif(torch.cuda.device_count() < 1, reason="needs a CUDA GPU")
def test_split_batch_on_distinct_gpus_uses_scatter():
    devices = [torch.device(f"cuda:{i}") for i in range(torch.cuda.device_count())]
    n = 2 * len(devices) + 1  # uneven on purpose when there are 2+ GPUs
    X, y = torch.arange(n * 2.0).reshape(n, 2), torch.arange(n)
    X_shards, y_shards = d2lite.split_batch(X, y, devices)
    assert [s.device for s in X_shards] == devices
    torch.testing.assert_close(torch.cat([s.cpu() for s in X_shards]), X)
    torch.testing.assert_close(torch.cat([s.cpu() for s in y_shards]), y)


def collectives(x):
    """Runs in every process of the group: x is this rank's tensor."""
    rank, world_size = dist.get_rank(), dist.get_world_size()
    print("rank", rank, "of", world_size)
    gathered = [torch.empty_like(x) for _ in range(world_size)]
    dist.all_gather(gathered, x)
    first = x.clone()
    dist.broadcast(first, src=0)
    dist.all_reduce(x)  # in place: comes back through the arguments
    return {"rank": rank, "gathered": gathered, "first": first}


def failing(x):
    if dist.get_rank() == 1:
        raise ValueError("rank 1 gives up")
    dist.all_reduce(x)


def test_run_distributed_runs_real_processes_and_cleans_up(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    inputs = [(torch.tensor([1.0, 2.0]),), (torch.tensor([10.0, 20.0]),), (torch.tensor([100.0, 200.0]),)]
    results = d2lite.run_distributed(collectives, inputs)
    assert [returned["rank"] for returned, _ in results] == [0, 1, 2], "one result per rank, in rank order"
    for returned, (x,) in results:
        torch.testing.assert_close(x, torch.tensor([111.0, 222.0]), msg="all_reduce summed in place")
        torch.testing.assert_close(returned["first"], torch.tensor([1.0, 2.0]), msg="broadcast from rank 0")
        torch.testing.assert_close(torch.stack(returned["gathered"]), torch.stack([a for a, in inputs]))
    torch.testing.assert_close(inputs[0][0], torch.tensor([1.0, 2.0]), msg="the caller's tensors are not touched")
    out = capsys.readouterr().out.splitlines()
    assert out == [f"[rank {r}] rank {r} of 3" for r in range(3)]
    assert list(tmp_path.iterdir()) == [], "the temporary folder is removed"


def test_run_distributed_reports_the_failing_rank(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with pytest.raises(RuntimeError, match="(?s)rank 1 failed first:.*ValueError: rank 1 gives up"):
        d2lite.run_distributed(failing, [(torch.ones(2),), (torch.ones(2),)], timeout=600)
    assert list(tmp_path.iterdir()) == []


def test_run_distributed_needs_source_code_and_processes():
    namespace = {}
    exec("def made_by_exec(x):\n    return x\n", namespace)
    with pytest.raises(ValueError, match="cannot read the source"):
        d2lite.run_distributed(namespace["made_by_exec"], [(1,)])
    with pytest.raises(ValueError, match="empty"):
        d2lite.run_distributed(collectives, [])
