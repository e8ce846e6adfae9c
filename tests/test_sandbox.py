"""The sandbox, for real: what a kernel can reach, and its resource limits hit cleanly.

Each test runs code in a sandboxed kernel (grader.engine.isolation.kernel.Kernel) the way grading does, and
checks what happened from outside. These tests need bubblewrap and user namespaces; they are
not skipped when those are missing, because then grading would refuse to run. The two that need
root skip elsewhere, and fail in CI (``required_in_ci``, tests/conftest.py).
"""
from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

import pytest

from grader.engine.isolation.kernel import Kernel
from grader.engine.isolation.sandbox import Limits, sandbox_status, sandboxed_rlimits

AS_ROOT = ("run the tests as root, as CI's container does (`sudo .ci/run`, or `sudo make test`): "
           "only a root grader gives kernels a uid of their own")
SMALL = Limits(cell_timeout_s=30, memory_mb=2048, cpu_seconds=20, max_processes=64,
               max_file_mb=4, max_output_bytes=20_000)


def text(run) -> str:
    return "".join(o.get("text", "") for o in run.outputs)


@pytest.fixture(scope="module")
def instructor(tmp_path_factory):
    """An instructor's folder next to the submission's workdir: a gradebook and a solution."""
    root = tmp_path_factory.mktemp("course")
    (root / "gradebook.db").write_text("grades")
    (root / "source").mkdir()
    (root / "source" / "solution.ipynb").write_text("{}")
    return root


@pytest.fixture(scope="module")
def kernel(instructor, monkeypatch_module):
    monkeypatch_module.setenv("INSTRUCTOR_SECRET", "s3cret")
    with Kernel(instructor / "submissions" / "alice", SMALL, sandboxed=True) as k:
        yield k


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as mp:
        yield mp


def test_sandbox_is_available_here():
    ok, why = sandbox_status()
    assert ok, why


def test_network_is_unreachable_even_on_localhost(kernel):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    run = kernel.run(f"import socket\ntry:\n    socket.create_connection(('127.0.0.1', {port}), "
                     "timeout=3)\n    print('connected')\nexcept OSError as e:\n    print('refused', e)")
    server.close()
    assert run.status == "ok" and text(run).startswith("refused"), text(run)


def test_instructor_files_are_invisible(kernel, instructor):
    run = kernel.run(
        "import os\nfor p in [{gb!r}, {sol!r}, {root!r}]:\n"
        "    print(os.path.exists(p))\n"
        "print(sorted(os.listdir({parent!r})))".format(
            gb=str(instructor / "gradebook.db"), sol=str(instructor / "source" / "solution.ipynb"),
            root=str(instructor / "source"), parent=str(instructor / "submissions")))
    assert text(run).split() == ["False", "False", "False", "['alice']"], text(run)


def test_only_the_workdir_and_tmp_are_writable(kernel, instructor):
    venv, package = sys.prefix, str(Path(__file__).resolve().parent.parent / "grader")
    run = kernel.run(
        "import os\nfor d in [os.getcwd(), '/tmp', {venv!r}, {pkg!r}, {gb!r}]:\n"
        "    try:\n        open(os.path.join(d, 'x.txt'), 'w').write('x')\n        print('w')\n"
        "    except OSError:\n        print('-')".format(
            venv=venv, pkg=package, gb=str(instructor)))
    assert text(run).split() == ["w", "w", "-", "-", "-"], text(run)
    assert kernel.workdir.parent == instructor / "submissions" / "alice"  # a fresh folder in the scratch one
    assert (kernel.workdir / "x.txt").exists()
    assert not (Path(package) / "x.txt").exists()


def test_environment_holds_nothing_from_the_grader(kernel):
    run = kernel.run("import os\nprint('INSTRUCTOR_SECRET' in os.environ, "
                     "os.environ.get('COURSE_GRADER_RECORD'))")
    assert text(run).split() == ["False", "1"]


@pytest.mark.required_in_ci(AS_ROOT)
@pytest.mark.skipif(os.geteuid() != 0, reason="the uid only changes when the grader is root")
def test_kernel_runs_unprivileged_and_sees_no_other_process(kernel):
    run = kernel.run("import os\nprint(os.getuid(), len([p for p in os.listdir('/proc') "
                     "if p.isdigit()]))")
    uid, processes = map(int, text(run).split())
    assert uid != 0 and processes < 10


def test_memory_limit_raises_memory_error_and_the_kernel_survives(kernel):
    run = kernel.run("block = bytearray(3 * 1024**3)")
    assert run.status == "error" and run.error.startswith("MemoryError"), run.error
    assert kernel.run("print('alive')").outputs


@pytest.mark.required_in_ci(AS_ROOT)
@pytest.mark.skipif(os.geteuid() != 0, reason="without root only a control group bounds a kernel's processes "
                                              "(tests/test_cgroups.py); as root RLIMIT_NPROC does where none does")
def test_process_limit_stops_a_fork_bomb(kernel):
    run = kernel.run(
        "import subprocess\nchildren = []\ntry:\n    for _ in range(200):\n"
        "        children.append(subprocess.Popen(['sleep', '30']))\nexcept OSError as e:\n"
        "    print('stopped', len(children))\nfor c in children:\n    c.kill(); c.wait()")
    assert text(run).startswith("stopped"), text(run)
    assert int(text(run).split()[1]) < SMALL.max_processes


@pytest.mark.required_in_ci(AS_ROOT)
@pytest.mark.skipif(os.geteuid() != 0, reason="RLIMIT_NPROC is only set for a uid of its own")
def test_the_uids_process_limit_is_the_fallback_where_no_group_counts_a_kernels_processes():
    """RLIMIT_NPROC counts every process of the uid that all kernels of a grader process share: beside a group's
    pids.max it would make kernels running at the same time share one budget (tests/test_cgroups.py)."""
    nproc = ("RLIMIT_NPROC", SMALL.max_processes, SMALL.max_processes)
    assert nproc in sandboxed_rlimits(SMALL, processes_in_cgroup=False)
    assert not any(name == "RLIMIT_NPROC" for name, _, _ in sandboxed_rlimits(SMALL, processes_in_cgroup=True))


def test_file_size_limit(kernel):
    run = kernel.run("open('big.bin', 'wb').write(b'x' * 8 * 1024**2)")
    assert run.status == "error" and "File too large" in run.error, run.error


def test_tmp_is_small(kernel):
    run = kernel.run("for n in range(3):\n    open(f'/tmp/f{n}', 'wb').write(b'x' * 3 * 1024**2)")
    assert run.status == "error" and "No space left" in run.error, run.error


def test_shared_memory_is_a_private_small_tmpfs(kernel):
    """DataLoader workers and torch.multiprocessing need /dev/shm; the host's stays untouched."""
    name = f"course-grader-shm-probe-{os.getpid()}"
    run = kernel.run(f"open('/dev/shm/{name}', 'wb').write(b'x' * 1024)\n"
                     "import os; print(os.listdir('/dev/shm'))")
    assert run.status == "ok", run.error
    assert name in text(run)
    assert not (Path("/dev/shm") / name).exists()
    big = kernel.run("for n in range(3):\n    open(f'/dev/shm/f{n}', 'wb').write(b'x' * 3 * 1024**2)")
    assert big.status == "error" and "No space left" in big.error, big.error


def test_output_flood_is_capped_in_bytes(kernel):
    lines = kernel.run("for i in range(200_000):\n    print(i)")
    line = kernel.run("print('x' * 5_000_000)")
    image = kernel.run("from IPython.display import display\n"
                       "display({'image/png': 'iVBORw0KGgoA' + 'A' * 3_000_000}, raw=True)")  # a PNG's head
    for run in (lines, line, image):
        assert run.truncated and run.status == "ok"
        assert sum(len(str(o)) for o in run.outputs) < 2 * SMALL.max_output_bytes


def _huge_message(scratch: str) -> tuple:
    """In a fresh process: (the cell's run, its text, MB it added to this process's peak memory, the next cell's text)."""
    import resource

    with Kernel(Path(scratch), SMALL, sandboxed=True) as k:
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        run = k.run("from IPython.display import display\n"
                    "display({'text/plain': 'x' * 200_000_000}, raw=True)")
        grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
        return run.truncated, text(run), grown_mb, text(k.run("print('next')"))


def test_a_huge_message_is_dropped_unread_and_the_kernel_stays_usable(tmp_path):
    """Measured in a fresh process: the pytest process's own peak says nothing about this test."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        truncated, said, grown_mb, after = pool.submit(_huge_message, str(tmp_path)).result()
    assert truncated and "output lost" in said
    assert grown_mb < 100, f"the grader's memory grew by {grown_mb:.0f} MB"
    assert after == "next\n"


def test_cpu_time_limit_kills_the_kernel_cleanly(tmp_path):
    limits = Limits(cell_timeout_s=60, cpu_seconds=2, max_processes=64)
    with Kernel(tmp_path, limits, sandboxed=True) as k:
        run = k.run("while True:\n    pass")
        after = k.run("print(1)")
    assert run.status == "crashed" and "CPU-time limit" in run.error, run.error
    assert after.status == "not run"


def test_kernels_use_the_thread_count_a_parallel_batch_gives_them(tmp_path, monkeypatch):
    """In `autograde --workers 2` every kernel's torch uses cores // 2 threads (at least one)."""
    from grader.running.jobs import share_cores as _share_cores

    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.setenv(name, "")  # so that the test's teardown restores the grader's own value
        monkeypatch.delenv(name)
    _share_cores(2)  # what each worker process of the batch does first
    with Kernel(tmp_path / "w", SMALL, sandboxed=True) as k:
        run = k.run("import torch\nprint(torch.get_num_threads())")
    assert text(run).split() == [str(max(1, len(os.sched_getaffinity(0)) // 2))], text(run)


def test_a_fresh_kernel_reads_the_graders_font_list_instead_of_scanning_fonts(tmp_path):
    """Scanning the system's fonts again in every kernel cost about 0.4 s per submission."""
    with Kernel(tmp_path / "w", SMALL, sandboxed=True) as k:
        run = k.run("import logging\nlogging.basicConfig(level=logging.INFO)\n"
                    "import matplotlib.font_manager as fm\nprint(len(fm.fontManager.ttflist) > 0)")
    assert run.status == "ok" and text(run).split()[-1] == "True", text(run)
    assert "generated new fontManager" not in text(run)


@pytest.mark.required_in_ci(AS_ROOT)
@pytest.mark.skipif(os.geteuid() != 0, reason="only a root grader gives kernels a uid of their own")
def test_a_kernel_without_a_passwd_entry_can_still_name_its_user(kernel):
    """torch's compilers name their caches after getpass.getuser(); torch 2.11 failed to import
    torch._dynamo in the sandbox (KeyError from pwd) before the kernel had USER set."""
    run = kernel.run("import getpass, os\nprint(getpass.getuser(), os.getuid() != 0)")
    assert text(run).split() == ["student", "True"], run.error


def _arguments(monkeypatch, *, memory_in_cgroup: bool, gpus: list[str]) -> list[str]:
    from grader.engine.isolation import sandbox

    monkeypatch.setattr(sandbox, "gpu_devices", lambda: gpus)
    return sandbox.kernel_command(["python3"], workdir=Path("/tmp"), sockdir=None, limits=SMALL,
                                  unsafe=False, memory_in_cgroup=memory_in_cgroup)


def test_a_gpu_reaches_the_kernel_only_when_a_memory_cgroup_replaces_the_address_space_limit(monkeypatch):
    """CUDA cannot initialise under RLIMIT_AS (seen on an H100: cudaGetDeviceCount() 'out of
    memory', so torch saw no GPU), so the GPU comes with a cgroup's memory bound instead."""
    with_cgroup = _arguments(monkeypatch, memory_in_cgroup=True, gpus=["/dev/nvidia0", "/dev/nvidiactl"])
    assert "--dev-bind" in with_cgroup and with_cgroup[with_cgroup.index("--dev-bind") + 1] == "/dev/nvidia0"
    assert not any(a.startswith("--as=") for a in with_cgroup)
    without_cgroup = _arguments(monkeypatch, memory_in_cgroup=False, gpus=["/dev/nvidia0"])
    assert "/dev/nvidia0" not in without_cgroup and f"--as={SMALL.memory_mb * 1024 * 1024}" in without_cgroup
    no_gpu = _arguments(monkeypatch, memory_in_cgroup=True, gpus=[])
    assert "--dev-bind" not in no_gpu and f"--as={SMALL.memory_mb * 1024 * 1024}" in no_gpu


def test_the_instructors_choice_of_gpu_reaches_the_kernel_and_secrets_do_not(monkeypatch, tmp_path):
    from grader.engine.isolation.sandbox import kernel_env

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    monkeypatch.setenv("INSTRUCTOR_SECRET", "s3cret")
    monkeypatch.setenv("D2LITE_DATASET", "mnist5k")
    monkeypatch.setenv("D2LITE_TOKEN", "s3cret")  # the course's prefix is not a pass: only the names d2lite reads
    env = kernel_env(tmp_path, sandboxed=True)
    assert env["CUDA_VISIBLE_DEVICES"] == "1" and env["D2LITE_DATASET"] == "mnist5k"
    assert "INSTRUCTOR_SECRET" not in env and "D2LITE_TOKEN" not in env
