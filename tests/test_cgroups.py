"""Each kernel's control group, for real: memory, processes and CPU of a kernel and all its children.

Kernels run sandboxed (grader.engine.isolation.kernel.Kernel, as grading does); what the kernel did is checked from
outside, in the group's own counters. These tests need cgroups the grader can use (v2 delegated, or
v1 as root); where there are none, grading warns (sandbox_status) and these tests fail, saying why.
"""
from __future__ import annotations

import threading

import pytest

import grader.engine.isolation.kernel
from grader.engine.isolation.cgroups import cgroup_support
from grader.engine.isolation.kernel import Kernel
from grader.engine.isolation.sandbox import Limits

BUDGET = Limits(cell_timeout_s=120, memory_mb=1024, cpu_seconds=120, max_processes=64, max_output_bytes=20_000)

# Three processes of 500 MB each: every one is within the per-process limit (RLIMIT_AS), together
# they hold 1.5 GB, over the kernel's budget of 1 GB.
HOG = """import subprocess, sys, time
hold = "b = b'x' * (500 << 20); import sys; sys.stdout.write('held\\\\n'); sys.stdout.flush(); import time; time.sleep(60)"
children = [subprocess.Popen([sys.executable, '-c', hold], stdout=subprocess.PIPE) for _ in range(3)]
held = [c.stdout.readline() for c in children]
print(sum(h == b'held\\n' for h in held) * 500, 'MB held')
for c in children:
    c.kill()
"""
HONEST = "total = sum(i * i for i in range(3_000_000))\nprint(total)"


@pytest.fixture(autouse=True)
def _one_torch_thread_per_kernel(monkeypatch):
    """These kernels get 1 GB of address space each (RLIMIT_AS), and a kernel's address space grows with its torch
    threads (a malloc arena per thread): importing torch with one thread peaks at about 1.0 GB, with two the kernel
    dies before it answers. pytest-xdist's workers already have one thread each (tests/conftest.py); a run
    without it (``pytest tests/test_cgroups.py``) gets the same here. Kernels inherit the variables."""
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.setenv(name, "1")


def text(run) -> str:
    return "".join(o.get("text", "") for o in run.outputs)


def test_cgroups_can_be_used_here():
    ok, why = cgroup_support()
    assert ok, why


def needs(kernel, controller: str) -> None:
    """Fail, saying why, where this machine's kernel groups lack ``controller`` (memory alone is enough
    for a group: grader.engine.isolation.cgroups)."""
    if kernel.group is None or controller not in kernel.group.controllers:
        pytest.fail(f"this machine's kernel groups have no {controller} controller ({cgroup_support()[1]})")


def _run_both(tmp_path) -> tuple:
    """The hog and an honest kernel, at the same time: (hog's run, honest run, hog's group folders)."""
    runs, folders = {}, {}

    def go(name, code):
        with Kernel(tmp_path / name, BUDGET, sandboxed=True) as kernel:
            folders[name] = dict(kernel.group.dirs) if kernel.group else {}
            runs[name] = kernel.run(code)
            runs[name + " after"] = kernel.run("print('alive')")

    threads = [threading.Thread(target=go, args=(n, c)) for n, c in (("hog", HOG), ("honest", HONEST))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return runs, folders


def test_a_kernel_over_its_memory_budget_is_stopped_and_a_concurrent_honest_kernel_finishes(tmp_path):
    runs, folders = _run_both(tmp_path)
    hog, honest = runs["hog"], runs["honest"]
    assert hog.status == "crashed" and "memory budget (1024 MB)" in hog.error, (hog.status, hog.error, text(hog))
    assert runs["hog after"].status == "not run"
    assert honest.status == "ok" and text(honest) == f"{sum(i * i for i in range(3_000_000))}\n", honest
    assert runs["honest after"].status == "ok"
    assert folders["hog"] and not any(f.exists() for f in folders["hog"].values())  # removed after the kernel


def test_without_its_group_the_hog_holds_more_than_the_budget(tmp_path, monkeypatch):
    """Positive control: the same kernel with no control group keeps 1.5 GB (rlimits are per process)."""
    monkeypatch.setattr(grader.engine.isolation.kernel.KernelGroup, "create", classmethod(lambda cls, limits, cores: None))
    with Kernel(tmp_path / "hog", BUDGET, sandboxed=True) as kernel:
        run = kernel.run(HOG)
    assert run.status == "ok" and text(run) == "1500 MB held\n", (run.status, run.error, text(run))


FORK_BOMB = """import os, time, warnings
warnings.simplefilter("ignore", DeprecationWarning)  # Python 3.12: fork() in a process with threads warns
children = []
try:
    while True:
        pid = os.fork()
        if pid == 0:
            try:
                while True:
                    os.fork()
            except OSError:
                time.sleep(30)
            os._exit(0)
        children.append(pid)
except OSError as error:
    print('stopped', error.errno)
"""


def test_a_fork_bomb_is_stopped_by_the_groups_process_budget_and_nothing_of_it_survives(tmp_path):
    limits = Limits(cell_timeout_s=60, memory_mb=1024, max_processes=40)
    with Kernel(tmp_path, limits, sandboxed=True) as kernel:
        needs(kernel, "pids")
        run = kernel.run(FORK_BOMB)
        group = kernel.group
        refused = group.stat("pids", "pids.events").get("max", 0)
        current = int(group.file("pids", "pids.current").read_text())
        after = kernel.run("print('alive')")
    assert run.status == "ok" and text(run) == "stopped 11\n", (run.status, run.error, text(run))  # EAGAIN
    assert refused > 0 and current <= 40, (refused, current)
    assert text(after) == "alive\n"
    assert not any(f.exists() for f in group.dirs.values())  # every process of it killed, the group removed


SLEEPERS = """import subprocess
sleepers = []
try:
    for _ in range({n}):
        sleepers.append(subprocess.Popen(['sleep', '60']))
except OSError as error:
    print('stopped', error.errno, 'after', len(sleepers))
print(len(sleepers), 'sleeping')
"""


def test_a_kernels_process_budget_is_its_own_not_shared_with_the_kernel_beside_it(tmp_path):
    """Kernels of one grader process run as one uid; a per-uid limit (RLIMIT_NPROC) would let the processes of the
    kernel beside it, another student's, take this kernel's budget. Each of two kernels running at once starts 35
    processes: with its own 14 or so tasks (its threads and the holder), within its budget of 60; together over it."""
    limits = Limits(cell_timeout_s=60, memory_mb=1024, max_processes=60)
    with Kernel(tmp_path / "a", limits, sandboxed=True) as first, Kernel(tmp_path / "b", limits, sandboxed=True) as second:
        needs(first, "pids")
        held = first.run(SLEEPERS.format(n=35))
        started = second.run(SLEEPERS.format(n=35))
        in_groups = [int(k.group.file("pids", "pids.current").read_text()) for k in (first, second)]
        for kernel in (first, second):
            kernel.run("for s in sleepers:\n    s.kill(); s.wait()")
    assert text(held) == "35 sleeping\n", text(held)
    assert text(started) == "35 sleeping\n", text(started)
    assert all(35 < n <= 60 for n in in_groups) and sum(in_groups) > 60, in_groups


BUSY = """import time
wall, cpu = time.monotonic(), time.process_time()
while time.monotonic() - wall < 2:
    pass
print((time.process_time() - cpu) / (time.monotonic() - wall))
"""


@pytest.mark.parametrize("cores", [0.05])
def test_a_busy_kernel_gets_no_more_cpu_than_its_quota(tmp_path, cores):
    limits = Limits(cell_timeout_s=60, cpu_cores=cores)
    with Kernel(tmp_path, limits, sandboxed=True) as kernel:
        needs(kernel, "cpu")
        run = kernel.run(BUSY)
        throttled = kernel.group.stat("cpu", "cpu.stat").get("nr_throttled", 0)
    share = float(text(run))
    assert run.status == "ok" and share < 2 * cores, share  # the quota, with room for the scheduler's slack
    assert throttled > 0
