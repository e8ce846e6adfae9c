"""Data-parallel helpers on the CPU and on device lists that repeat a device; run_distributed
with real gloo processes."""
import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil
import pytest
import torch
import torch.distributed as dist

import d2lite
from d2lite import parallel, script_forker

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


@pytest.fixture(params=["forked by the helper", "a new Python"])
def launch(request, monkeypatch):
    """Both ways a launcher starts: forked by d2lite.script_forker's helper (Linux), or a new
    Python (macOS, Windows, and any machine without os.pidfd_open)."""
    forked = request.param == "forked by the helper"
    if forked and not script_forker.AVAILABLE:
        pytest.skip("the helper needs Linux (os.pidfd_open)")
    monkeypatch.setattr(parallel, "_FORK_THE_LAUNCHER", forked)
    return request.param


def test_run_distributed_runs_real_processes_and_cleans_up(launch, tmp_path, monkeypatch, capsys):
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


def test_run_distributed_reports_the_failing_rank(launch, tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with pytest.raises(RuntimeError, match="(?s)rank 1 failed first:.*ValueError: rank 1 gives up"):
        d2lite.run_distributed(failing, [(torch.ones(2),), (torch.ones(2),)], timeout=600)
    assert list(tmp_path.iterdir()) == []


def where_the_ranks_met(x):
    import os
    dist.all_reduce(x)
    return int(os.environ["MASTER_PORT"])


def test_the_ranks_meet_on_a_port_that_rank_0_bound_itself(launch, monkeypatch):
    """A port picked as free and let go before rank 0 listens on it can be taken in between by another job (or
    picked by another run, whose ranks would then meet these): CI saw a gloo "Connection closed by peer" that way.
    Here another job listens on the port such a pick would give (d2lite once picked it with ``_free_port``), and
    the caller's environment names it too: the run meets elsewhere, on the port rank 0's store is bound to."""
    import socket
    with socket.socket() as other_job:
        other_job.bind(("127.0.0.1", 0))
        other_job.listen()
        taken = other_job.getsockname()[1]
        monkeypatch.setattr(parallel, "_free_port", lambda: taken, raising=False)
        monkeypatch.setenv("MASTER_PORT", str(taken))
        results = d2lite.run_distributed(where_the_ranks_met, [(torch.ones(2),), (torch.ones(2),)])
    ports = {port for port, _ in results}
    assert len(ports) == 1 and taken not in ports, (ports, taken)
    for _, (x,) in results:
        torch.testing.assert_close(x, torch.full((2,), 2.0))


def test_a_rank_killed_while_noting_its_error_does_not_hide_the_rank_that_failed(tmp_path):
    """Once a rank fails the others are stopped, some while they write their own note: an empty note
    or an unfinished one (``.part``, renamed only when whole) is passed over, not reported as a failure."""
    (tmp_path / "error0.txt").write_text("")           # created, then killed before the first write
    (tmp_path / "error2.txt.part").write_text("Traceback (most recent call last):\n  File")
    (tmp_path / "error1.txt").write_text("Traceback (most recent call last):\nValueError: rank 1 gives up\n")
    os.utime(tmp_path / "error0.txt", ns=(1, 1))      # the empty note is the oldest
    report = parallel._first_failure(str(tmp_path), world_size=3)
    assert report.startswith("rank 1 failed first:\n") and report.endswith("ValueError: rank 1 gives up\n")
    assert "rank 0" not in report and "rank 2" not in report


def environment_and_launcher(name):
    """Runs in every process: the variable ``name`` as this process sees it, and the pid of the
    process that started this rank's launcher (the rank's grandparent)."""
    import os
    with open(f"/proc/{os.getppid()}/stat") as stat:
        grandparent = int(stat.read().rsplit(")", 1)[1].split()[1])
    return os.environ.get(name), grandparent


@pytest.mark.skipif(not script_forker.AVAILABLE, reason="the helper needs Linux (os.pidfd_open)")
def test_later_calls_fork_their_launcher_from_one_helper_that_has_imported_torch(monkeypatch):
    monkeypatch.setattr(parallel, "_FORK_THE_LAUNCHER", True)
    first = d2lite.run_distributed(environment_and_launcher, [("D2LITE_SEEN",)] * 2)
    monkeypatch.setenv("D2LITE_SEEN", "set after the helper started")
    second = d2lite.run_distributed(environment_and_launcher, [("D2LITE_SEEN",)] * 2)
    helpers = {launcher for (_, launcher), _ in first + second}
    assert len(helpers) == 1, f"one helper forks every launcher, got {helpers}"
    helper = helpers.pop()
    assert helper != os.getpid(), "the launcher is not this process's child"
    assert "d2lite.script_forker" in open(f"/proc/{helper}/cmdline").read()
    assert "libtorch" in open(f"/proc/{helper}/maps").read(), "the helper has imported torch"
    assert [seen for (seen, _), _ in first] == [None, None]
    assert [seen for (seen, _), _ in second] == ["set after the helper started"] * 2, "os.environ at the call"


@pytest.mark.skipif(not script_forker.AVAILABLE, reason="the helper needs Linux (os.pidfd_open)")
def test_a_helper_that_died_between_calls_is_replaced_by_the_next_call(monkeypatch):
    monkeypatch.setattr(parallel, "_FORK_THE_LAUNCHER", True)
    [((_, helper), _)] = d2lite.run_distributed(environment_and_launcher, [("D2LITE_SEEN",)])
    os.kill(helper, signal.SIGKILL)
    assert all_end(helper)
    [((_, replacement), (name,))] = d2lite.run_distributed(environment_and_launcher, [("D2LITE_SEEN",)])
    assert replacement != helper and name == "D2LITE_SEEN"


def hanging(pid_file):
    """Every rank sleeps (no collective that could time out first); rank 1 notes its pid."""
    import os
    import time
    if dist.get_rank() == 1:
        with open(pid_file, "w") as note:
            note.write(str(os.getpid()))
    time.sleep(3600)


def ended(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def all_end(*pids: int) -> bool:
    """Whether the processes end within 30 s (a safety net: a killed process ends at once)."""
    for _ in range(300):
        if all(ended(pid) for pid in pids):
            return True
        time.sleep(0.1)
    return False


@contextlib.contextmanager
def new_descendants():
    """The pids of every process that descends from this one and appears inside the block (the
    helper, the launcher, its ranks), seen every 50 ms."""
    me = psutil.Process()
    before = {child.pid for child in me.children(recursive=True)}
    seen, stop = set(), threading.Event()

    def watch():
        while not stop.is_set():
            seen.update(child.pid for child in me.children(recursive=True) if child.pid not in before)
            time.sleep(0.05)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        yield seen
    finally:
        stop.set()
        watcher.join()


def test_a_run_past_its_timeout_is_killed_with_its_ranks_and_the_next_call_works(launch, tmp_path, monkeypatch):
    monkeypatch.setattr(parallel, "_GRACE_S", 1.0)
    with new_descendants() as started:
        with pytest.raises(RuntimeError, match="did not finish within 3 s"):
            d2lite.run_distributed(hanging, [(str(tmp_path / "rank1.pid"),)] * 2, timeout=3)
    assert started, "the launcher (at least) was started"
    assert all_end(*started), "the launcher and every rank it started were killed"
    [(_, (x,))] = d2lite.run_distributed(failing, [(torch.ones(2),)])
    torch.testing.assert_close(x, torch.ones(2))


CALLER = """
import sys, torch, d2lite
sys.path.insert(0, sys.argv[2])
from test_parallel import hanging
d2lite.run_distributed(hanging, [(sys.argv[1],), (sys.argv[1],)], timeout=600)
"""


@pytest.mark.skipif(not script_forker.AVAILABLE, reason="the helper needs Linux (os.pidfd_open)")
def test_the_helper_and_a_running_script_end_when_their_caller_is_killed(tmp_path):
    pid_file = tmp_path / "rank1.pid"
    caller = subprocess.Popen([sys.executable, "-c", CALLER, str(pid_file), str(Path(__file__).parent)])
    try:
        for _ in range(3000):  # a safety net, 300 s: the rank writes its pid within seconds
            if pid_file.exists() and pid_file.read_text():
                break
            time.sleep(0.1)
        rank = int(pid_file.read_text())
        helper = psutil.Process(rank).parent().parent()
        assert "d2lite.script_forker" in " ".join(helper.cmdline())
    finally:
        caller.kill()
        caller.wait()
    assert all_end(rank), "the helper killed the script its caller was waiting for"
    assert all_end(helper.pid), "the helper ended with its caller"


def test_run_distributed_needs_source_code_and_processes():
    namespace = {}
    exec("def made_by_exec(x):\n    return x\n", namespace)
    with pytest.raises(ValueError, match="cannot read the source"):
        d2lite.run_distributed(namespace["made_by_exec"], [(1,)])
    with pytest.raises(ValueError, match="empty"):
        d2lite.run_distributed(collectives, [])
