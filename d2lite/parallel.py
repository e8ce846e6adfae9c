"""Data parallelism by hand (d2l's multi-GPU chapter): replicate parameters, split a batch
across devices, and sum gradients across replicas; and ``run_distributed``, which runs a function
in several real processes joined by ``torch.distributed`` (gloo, on this machine).

Everything here also works on the CPU and on a device list that repeats a device
(e.g. ``[cpu, cpu]``), so the algorithm can be learned and tested without GPUs.
"""
from __future__ import annotations

import inspect
import os
import socket
import subprocess
import sys
import tempfile
import textwrap
from typing import Any, Callable, Sequence

import torch
from torch import nn

from d2lite import script_forker

__all__ = ["get_params", "allreduce", "split_batch", "run_distributed"]


def get_params(params: Sequence[torch.Tensor], device) -> list[torch.Tensor]:
    """One replica of ``params`` on ``device``: fresh leaf tensors that require grad.

    Always copies, even when the tensors already live on ``device`` (d2l's version returns the
    same tensors there, so two "replicas" on one device would silently share their weights).
    """
    device = torch.device(device)
    return [p.detach().to(device, copy=True).requires_grad_(True) for p in params]


def allreduce(data: Sequence[torch.Tensor]) -> None:
    """Sum the tensors of ``data`` and write the sum back into every one of them, in place.

    data: a non-empty list of tensors of one shape and dtype, on any devices (e.g. the
        gradients of one parameter on each replica). Tensors may repeat a device.
    """
    data = list(data)
    if not data:
        raise ValueError("allreduce: got an empty list; pass one tensor per replica")
    for i, t in enumerate(data):
        if not isinstance(t, torch.Tensor):
            raise TypeError(
                f"allreduce: element {i} is {type(t).__name__}, not a tensor "
                "(a parameter's .grad is None until backward() has run)"
            )
        if t.shape != data[0].shape or t.dtype != data[0].dtype:
            raise ValueError(
                f"allreduce: all tensors must have one shape and dtype; element 0 is "
                f"{tuple(data[0].shape)} {data[0].dtype} but element {i} is {tuple(t.shape)} {t.dtype}"
            )
    with torch.no_grad():
        total = data[0].clone()
        for t in data[1:]:
            total += t.to(total.device)
        for t in data:
            t.copy_(total)


def _shard_sizes(n: int, parts: int) -> list[int]:
    """Split n rows into ``parts`` sizes differing by at most one, larger ones first."""
    return [n // parts + (1 if i < n % parts else 0) for i in range(parts)]


def _distinct_cuda(devices: list[torch.device]) -> bool:
    return all(d.type == "cuda" for d in devices) and len({d.index for d in devices}) == len(devices)


def _scatter(t: torch.Tensor, devices: list[torch.device], sizes: list[int]) -> list[torch.Tensor]:
    if _distinct_cuda(devices):
        if len(set(sizes)) == 1:  # equal shards: exactly what nn.parallel.scatter makes
            return list(nn.parallel.scatter(t, devices))
        # nn.parallel.scatter's chunking can give fewer shards than devices (5 rows, 4 GPUs ->
        # 2, 2, 1); the same primitive with explicit sizes always gives one shard per device.
        return list(torch.cuda.comm.scatter(t, [d.index for d in devices], chunk_sizes=sizes))
    return [shard.to(d, copy=True) for shard, d in zip(t.split(sizes), devices)]


def split_batch(X: torch.Tensor, y: torch.Tensor, devices: Sequence) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """Split a minibatch along dim 0 into one shard per device.

    X: (n, ...) inputs; y: (n, ...) labels; devices: non-empty list (may repeat a device).
    Returns ``(X_shards, y_shards)``, lists with ``len(devices)`` tensors, shard ``i`` on
    ``devices[i]``; shard sizes differ by at most one (larger first) and concatenate back to
    the batch. Shards are copies, except that on distinct CUDA GPUs the copy is
    ``nn.parallel.scatter``'s: a batch on the CPU is copied from the host to each GPU, and a
    batch already on one of the GPUs keeps its shard there as a view (no copy) and is copied
    GPU to GPU for the others.
    """
    devices = [torch.device(d) for d in devices]
    if not devices:
        raise ValueError("split_batch: the device list is empty; pass e.g. d2lite.try_all_gpus()")
    if X.shape[0] != y.shape[0]:
        raise ValueError(
            f"split_batch: X has {X.shape[0]} examples but y has {y.shape[0]}; pass one label per example"
        )
    if X.shape[0] < len(devices):
        raise ValueError(
            f"split_batch: a batch of {X.shape[0]} examples cannot give each of {len(devices)} devices "
            "at least one; use a batch size of at least the number of devices"
        )
    sizes = _shard_sizes(X.shape[0], len(devices))
    return _scatter(X, devices, sizes), _scatter(y, devices, sizes)


# --- Several processes: what torchrun does, for one function ------------------------------------

_LAUNCHER = '''\
"""Written by d2lite.run_distributed: {world_size} processes form one gloo process group and
each calls {name}() on its own arguments."""
import datetime
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as _mp
from torch import nn
from torch.nn import functional as F

{source}

def _d2lite_store(rank, folder, world_size, seconds):
    """Where the ranks meet. Rank 0 listens on a port the system picks as it binds (a port picked earlier
    and let go could be taken, or picked again, by another job in between), and notes it in the folder;
    the other ranks read it there and connect. MASTER_ADDR and MASTER_PORT then say where, as under torchrun."""
    timeout = datetime.timedelta(seconds=seconds)
    note = os.path.join(folder, "port.txt")
    if rank == 0:
        store = dist.TCPStore("127.0.0.1", 0, world_size, is_master=True, timeout=timeout,
                              wait_for_workers=False)
        with open(note + ".part", "w") as part:
            part.write(str(store.port))
        os.replace(note + ".part", note)
    else:
        deadline = time.monotonic() + seconds
        while not os.path.exists(note):
            if time.monotonic() > deadline:
                raise TimeoutError(f"rank 0 did not start listening within {{seconds:g}} s")
            time.sleep(0.01)
        store = dist.TCPStore("127.0.0.1", int(open(note).read()), world_size, is_master=False, timeout=timeout)
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(store.port)
    return store


def _d2lite_rank(rank, folder, world_size, seconds):
    sys.stdout = open(os.path.join(folder, f"output{{rank}}.txt"), "w", buffering=1)
    args = torch.load(os.path.join(folder, f"args{{rank}}.pt"), weights_only=False)
    dist.init_process_group("gloo", store=_d2lite_store(rank, folder, world_size, seconds), rank=rank,
                            world_size=world_size, timeout=datetime.timedelta(seconds=seconds))
    try:
        result = {name}(*args)
        torch.save((result, args), os.path.join(folder, f"result{{rank}}.pt"))
    except BaseException as error:  # noted before the others see this rank vanish and fail too
        import traceback
        # Written whole or not at all: a rank killed while writing (the others are stopped once
        # one fails) leaves only the .part file, which the caller does not read.
        note = os.path.join(folder, f"error{{rank}}.txt")
        with open(note + ".part", "w") as part:
            part.write("".join(traceback.format_exception(error)))
        os.replace(note + ".part", note)
        raise
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    folder, world_size, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    # On Linux the ranks are forked from this process, which has imported torch once;
    # elsewhere they are spawned (they import this file again).
    method = "fork" if sys.platform.startswith("linux") else "spawn"
    try:
        _mp.start_processes(_d2lite_rank, args=(folder, world_size, seconds), nprocs=world_size,
                            start_method=method)
    except _mp.ProcessRaisedException as error:  # the first rank that failed, with its traceback
        sys.exit(str(error))
'''


def _first_failure(folder: str, world_size: int) -> str:
    """The traceback of the rank that failed first (the others usually fail because it vanished),
    then one line for each other failed rank; "" when no rank noted an error."""
    notes = [(os.stat(path).st_mtime_ns, rank, text) for rank in range(world_size)
             if os.path.exists(path := os.path.join(folder, f"error{rank}.txt"))
             and (text := open(path).read()).strip()]  # an empty note says nothing (none is written empty)
    if not notes:
        return ""
    notes.sort()
    _, rank, first = notes[0]
    others = "".join(f"rank {r} then failed too: {text.strip().splitlines()[-1]}\n" for _, r, text in notes[1:])
    return f"rank {rank} failed first:\n{first[-3000:]}{others}"


def _loopback_interface() -> str | None:
    """The loopback interface's name ("lo" on Linux, "lo0" on macOS), for gloo's connections."""
    try:
        return next((name for _, name in socket.if_nameindex() if name.startswith("lo")), None)
    except (OSError, AttributeError):
        return None


def _source(fn: Callable) -> str:
    try:
        return textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError) as error:
        raise ValueError(f"run_distributed: cannot read the source of {fn!r} ({error}); define it with "
                         "`def` in a notebook cell or a file") from error


def run_distributed(fn: Callable, args_per_rank: Sequence[Sequence[Any]], *,
                    timeout: float = 120.0) -> list[tuple[Any, tuple]]:
    """Call ``fn(*args_per_rank[rank])`` in ``len(args_per_rank)`` separate processes that have
    joined one gloo process group over 127.0.0.1, as ``torchrun`` would start them.

    fn: a function written with ``def`` (in a notebook too). Its *source* is written, after
        ``import torch``, ``import torch.distributed as dist``, ``from torch import nn`` and
        ``from torch.nn import functional as F``, into a script in a temporary folder, and a
        separate process runs that script and starts the processes: a new process cannot import a
        function that exists only in a notebook, so ``fn`` may use those names and its arguments,
        nothing else of the notebook.
    args_per_rank: one sequence of arguments per process (tensors, numbers, lists, dicts),
        passed with ``torch.save``.
    timeout: seconds for the whole run; a collective that waits longer fails.
    Returns, for each rank, ``(what fn returned, its arguments after the call)``: arguments that
    ``fn`` changed in place (as ``dist.all_reduce`` changes its tensor) come back changed. What
    the processes print is printed here, each line prefixed with its rank. Raises RuntimeError
    with the error of the first process that failed (the others are stopped). The temporary
    folder is removed.

    On Linux the process that runs the script is forked from a helper process
    (:mod:`d2lite.script_forker`) that the first call starts, that imports PyTorch once (a second
    or two) and that ends with this Python; later calls skip that import. Elsewhere each call
    starts a new Python. Either way the processes see ``os.environ`` as it is at the call.
    """
    world_size = len(args_per_rank)
    if world_size < 1:
        raise ValueError("run_distributed: args_per_rank is empty; pass one tuple of arguments per process")
    source = _source(fn)
    with tempfile.TemporaryDirectory(prefix="d2lite_dist_") as folder:
        script = os.path.join(folder, f"{fn.__name__}_in_{world_size}_processes.py")
        with open(script, "w") as f:
            f.write(_LAUNCHER.format(name=fn.__name__, source=source, world_size=world_size))
        for rank, args in enumerate(args_per_rank):
            torch.save(tuple(args), os.path.join(folder, f"args{rank}.pt"))
        env = {**os.environ, "OMP_NUM_THREADS": "1"}
        loopback = _loopback_interface()
        if loopback and "GLOO_SOCKET_IFNAME" not in env:
            env["GLOO_SOCKET_IFNAME"] = loopback
        argv = [script, folder, str(world_size), str(timeout)]
        if _FORK_THE_LAUNCHER:
            log_path = os.path.join(folder, "launcher.log")
            returncode = script_forker.run_script(argv, env=env, cwd=folder, log=log_path,
                                                  seconds=timeout + _GRACE_S)
            log = open(log_path, errors="replace").read() if os.path.exists(log_path) else ""
        else:
            returncode, log = _launch_fresh(argv, env, timeout + _GRACE_S)
        if returncode is None:
            raise RuntimeError(f"run_distributed: the {world_size} processes did not finish within "
                               f"{timeout:g} s; output:\n{log[-3000:]}")
        outputs = []
        for rank in range(world_size):
            path = os.path.join(folder, f"output{rank}.txt")
            outputs.append(open(path).read() if os.path.exists(path) else "")
        if returncode != 0:
            printed = "".join(f"[rank {r}] {line}\n" for r, text in enumerate(outputs) for line in text.splitlines())
            raise RuntimeError(f"run_distributed: a process failed (exit status {returncode}):\n"
                               f"{printed}{_first_failure(folder, world_size) or log[-3000:]}")
        for rank, text in enumerate(outputs):
            for line in text.splitlines():
                print(f"[rank {rank}] {line}")
        return [torch.load(os.path.join(folder, f"result{rank}.pt"), weights_only=False)
                for rank in range(world_size)]


# Whether the launcher is forked by d2lite.script_forker's helper, which has imported torch (Linux),
# or is a new Python (elsewhere).
_FORK_THE_LAUNCHER = script_forker.AVAILABLE
# Seconds the launcher gets beyond ``timeout`` (its own start and clean-up) before it is killed.
_GRACE_S = 30.0


def _launch_fresh(argv: list[str], env: dict, seconds: float) -> tuple[int | None, str]:
    """Run the launcher script ``argv`` in a new Python; returns (its exit status, or None when
    it was killed after ``seconds``; what it printed)."""
    launcher = subprocess.Popen([sys.executable, *argv], env=env, cwd=argv[1], stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, start_new_session=os.name == "posix")
    try:
        log, _ = launcher.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        _stop(launcher)
        log, _ = launcher.communicate()
        return None, log
    finally:
        _stop(launcher)
    return launcher.returncode, log


def _stop(launcher: subprocess.Popen) -> None:
    """Kill the launcher and the processes it started (its process group), if still running."""
    if launcher.poll() is None and os.name == "posix":
        try:
            os.killpg(launcher.pid, 9)
        except ProcessLookupError:
            pass
    elif launcher.poll() is None:
        launcher.kill()
