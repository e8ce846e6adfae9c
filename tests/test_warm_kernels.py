"""Warm kernel starts (grader.engine.isolation.warm): a kernel forked from a template that imported torch once
sees exactly the sandbox a cold kernel sees, shares no random state with its siblings, ends as a cold kernel
ends, and when a warm start is not possible the kernel starts cold and says why.

Everything here is observed from inside real sandboxed kernels, started the way grading starts them.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from grader.engine.isolation import warm
from grader.engine.isolation.kernel import Kernel
from grader.engine.isolation.sandbox import Limits

SMALL = Limits(cell_timeout_s=60, memory_mb=3072, cpu_seconds=60, max_processes=64, max_file_mb=4,
               max_output_bytes=50_000)

# What a kernel can see of its own process and sandbox; paths are made relative to its working folder.
PROBE = r'''
import json, os, socket, sys
keys = ("Uid", "Gid", "Groups", "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp")
status = {k: v.strip() for k, _, v in (line.partition(":") for line in open("/proc/self/status")) if k in keys}
mask = os.umask(0o22); os.umask(mask)
try:
    os.close(os.open("/dev/tty", os.O_RDWR)); tty = "has a controlling terminal"
except OSError as exc:
    tty = exc.strerror
print(json.dumps({
    "status": status, "limits": open("/proc/self/limits").read(), "cgroup": open("/proc/self/cgroup").read(),
    "root": sorted(os.listdir("/")), "interfaces": socket.if_nameindex(), "hostname": socket.gethostname(),
    "mounts": [" ".join(line.split()[4:6]) for line in open("/proc/self/mountinfo")],
    "fds": sorted(os.listdir("/proc/self/fd")), "cwd": os.getcwd(), "path": sys.path, "argv0": sys.argv[0],
    "env": dict(os.environ), "flags": repr(sys.flags), "umask": mask, "executable": sys.executable,
    "terminal": tty, "main": sys.modules["__main__"].__name__,
    "visible_pids": len([p for p in os.listdir("/proc") if p.isdigit()]),
    "own_environ_readable": bool(open("/proc/self/environ", "rb").read()),
}))
'''


def probe(kernel: Kernel) -> dict:
    run = kernel.run(PROBE)
    assert run.status == "ok", run.error
    seen = json.loads("".join(o.get("text", "") for o in run.outputs))
    text = json.dumps(seen)
    text = text.replace(str(kernel.workdir), "<workdir>").replace(str(kernel._sockdir), "<sockdir>")
    return json.loads(re.sub(r"course-grader-kernel-[0-9]+-[0-9]+", "<group>", text))


def started(tmp_path: Path, name: str, *, warm_switch: str, monkeypatch) -> Kernel:
    monkeypatch.setenv(warm.SWITCH, warm_switch)
    return Kernel(tmp_path / name, SMALL, sandboxed=True)


def test_a_warm_kernel_sees_exactly_the_sandbox_a_cold_kernel_sees(tmp_path, monkeypatch):
    with started(tmp_path, "cold", warm_switch="0", monkeypatch=monkeypatch) as cold:
        assert not cold.warm
        seen_cold = probe(cold)
    with started(tmp_path, "warm", warm_switch="1", monkeypatch=monkeypatch) as hot:
        assert hot.warm, "the kernel should have been forked from the template"
        seen_warm = probe(hot)
    # One process more is visible in a warm sandbox: the holder shell, beside the kernel (both the kernel uid's).
    assert seen_warm.pop("visible_pids") == seen_cold.pop("visible_pids") + 1
    assert seen_warm == seen_cold
    assert seen_cold["status"]["NoNewPrivs"] == "1" and seen_cold["status"]["CapEff"] == "0000000000000000"


def test_warm_kernels_share_no_random_state(tmp_path, monkeypatch):
    cell = ("import random, numpy, torch, multiprocessing\n"
            "print(random.random(), numpy.random.random(), torch.initial_seed(), torch.rand(1).item(),"
            " multiprocessing.current_process().authkey.hex())")
    draws = []
    for name in ("a", "b"):
        with started(tmp_path, name, warm_switch="1", monkeypatch=monkeypatch) as kernel:
            assert kernel.warm
            run = kernel.run(cell)
            assert run.status == "ok", run.error
            draws.append(run.outputs[0]["text"].split())
    assert all(x != y for x, y in zip(*draws)), draws


STOP_THE_OTHERS = ("for p in os.listdir('/proc'):\n"
                   "    if p.isdigit() and int(p) not in (1, os.getpid()): os.kill(int(p), signal.SIGSTOP)\n"
                   "os._exit(0)")


@pytest.mark.parametrize("ending", ["os._exit(3)", "os.kill(os.getpid(), signal.SIGSEGV)",
                                    "os.kill(os.getpid(), signal.SIGKILL)", STOP_THE_OTHERS],
                         ids=["exit", "segfault", "sigkill", "stops-the-holder-first"])
def test_a_warm_kernel_ends_as_a_cold_kernel_ends(tmp_path, monkeypatch, ending):
    reasons = {}
    for switch in ("0", "1"):
        with started(tmp_path, f"k{switch}", warm_switch=switch, monkeypatch=monkeypatch) as kernel:
            assert kernel.warm == (switch == "1")
            run = kernel.run(f"import os, signal\n{ending}")
            assert run.status == "crashed"
            reasons[switch] = run.error
    assert reasons["1"] == reasons["0"], reasons
    assert any(end in reasons["0"] for end in ("exit status 3", "segmentation", "SIGKILL", "exit status 0"))


def test_without_a_template_the_kernel_starts_cold_and_says_why(tmp_path, monkeypatch, capfd):
    monkeypatch.setattr(warm, "_failed", [])  # the process's later kernels start cold too: only this test's
    class Broken(warm.Template):
        def __init__(self):
            self.path, self.owner = str(tmp_path / "no-socket-here"), os.getpid()

        def close(self):
            pass

    monkeypatch.setattr("grader.engine.isolation.kernel.template_for", lambda env: Broken())
    with started(tmp_path, "k", warm_switch="1", monkeypatch=monkeypatch) as kernel:
        assert not kernel.warm
        run = kernel.run("print(6 * 7)")
        assert run.status == "ok" and run.outputs[0]["text"] == "42\n"
    assert "kernels start cold (the kernel template did not answer" in capfd.readouterr().err
    monkeypatch.setattr("grader.engine.isolation.kernel.template_for", warm.template_for)
    with started(tmp_path, "later", warm_switch="1", monkeypatch=monkeypatch) as kernel:
        assert not kernel.warm, "after a failed warm start the process's kernels start cold"


@pytest.mark.parametrize("registry", ["", "not json", "[1, 2]", '{"KEY": 3}', '{"KEY": "/etc/passwd"}',
                                      '{"KEY": "/tmp/s"}'])
def test_a_malformed_registry_of_templates_is_ignored(tmp_path, monkeypatch, registry):
    """The variable that hands templates to a grader's workers is read with care: garbage, or a path outside a
    folder of this user's that nobody else may open, is not used (a template of the process's own is)."""
    from grader.engine.isolation.sandbox import kernel_env

    key, _ = warm._key(kernel_env(None, sandboxed=True))  # the key this test's kernels look up
    monkeypatch.setattr(warm, "_templates", {})
    monkeypatch.setenv(warm.REGISTRY, registry.replace("KEY", key))
    try:
        with started(tmp_path, "k", warm_switch="1", monkeypatch=monkeypatch) as kernel:
            assert kernel.warm
    finally:
        for template in warm._templates.values():
            template.close()


def test_the_template_makes_no_kernel_outside_a_sandbox(tmp_path):
    """Asked to fork a kernel beside a process that is not sandboxed, the template refuses: a kernel is only
    ever made inside namespaces bubblewrap built."""
    template = warm.template_for({"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "TEST": "outside"})
    plain = subprocess.Popen(["sleep", "60"])
    status_r, status_w = os.pipe()
    try:
        with pytest.raises(warm.WarmUnavailable, match="not in a sandbox of its own"):
            template.fork_kernel(plain.pid, (status_w, status_w), {
                "cgroup_procs": [], "uid": None, "env": {}, "workdir": str(tmp_path), "rlimits": [], "argv": []})
    finally:
        plain.kill()
        plain.wait()
        os.close(status_w)
        os.close(status_r)
        template.close()


def test_the_switch_turns_warm_starts_off(tmp_path, monkeypatch):
    with started(tmp_path, "k", warm_switch="0", monkeypatch=monkeypatch) as kernel:
        assert not kernel.warm


GRADER_KILLED = r'''
import os, sys
from pathlib import Path
from grader.engine.isolation.kernel import Kernel
from grader.engine.isolation.sandbox import Limits
kernel = Kernel(Path(sys.argv[1]), Limits(), sandboxed=True)
kernel.start()
assert kernel.warm
from grader.engine.isolation import warm
print(*[t.process.pid for t in warm._templates.values()], flush=True)
os.kill(os.getpid(), 9)
'''


def test_a_killed_grader_leaves_no_template_and_no_kernel(tmp_path):
    """The template dies with the process that started it, and its children (and the kernel) with it."""
    env = {name: value for name, value in os.environ.items() if name != warm.REGISTRY}  # none of this process's
    done = subprocess.run([sys.executable, "-c", GRADER_KILLED, str(tmp_path / "k")], capture_output=True,
                          text=True, timeout=300, env={**env, warm.SWITCH: "1"})
    assert done.returncode == -9, done.stderr
    template = int(done.stdout)
    deadline = time.monotonic() + 60  # a safety net: they end within a second
    while time.monotonic() < deadline and (template in _template_pids() or _kernel_uid_pids(tmp_path)):
        time.sleep(0.2)
    assert template not in _template_pids()
    assert not _kernel_uid_pids(tmp_path)


def _template_pids() -> set[int]:
    found = set()
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and str(warm.ZYGOTE).encode() in (entry / "cmdline").read_bytes():
                found.add(int(entry.name))
        except OSError:
            pass
    return found


def _kernel_uid_pids(workdir: Path) -> set[int]:
    """Processes whose working folder is under ``workdir`` (the kernel's, and its holder's)."""
    found = set()
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and os.readlink(entry / "cwd").startswith(str(workdir)):
                found.add(int(entry.name))
        except OSError:
            pass
    return found


GRADE = "import sys; from pathlib import Path; from grader.running.batch import autograde; autograde(Path(sys.argv[1]), workers=2)"


def test_a_pool_of_workers_forks_its_kernels_from_one_template_of_the_grader(tmp_path):
    """The grader starts the template before its workers (once, not once per worker); the workers' kernels are
    forked from it, so they are its grandchildren, while their sandboxes (the holders) are the workers'.
    Everything is gathered over the whole batch, so a busy machine that runs the kernels one at a time passes too."""
    import psutil

    from classroom import class_of, released_course, write_inbox
    from grader.intake.collect import collect

    root = released_course(tmp_path / "course")
    collect(root, write_inbox(tmp_path / "inbox", class_of(root)))
    env = {name: value for name, value in os.environ.items() if name != warm.REGISTRY}  # none of this process's
    batch = subprocess.Popen([sys.executable, "-c", GRADE, str(root)], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, env={**env, warm.SWITCH: "1"})
    templates, forked, holders, cold = set(), set(), set(), set()
    try:
        deadline = time.monotonic() + 900  # a safety net for a busy machine: the batch takes seconds
        while batch.poll() is None and time.monotonic() < deadline:  # what ever ran, seen over the whole batch
            try:
                tree = {p.pid: p for p in psutil.Process(batch.pid).children(recursive=True)}
            except psutil.NoSuchProcess:
                break
            lines = {pid: _cmdline(p) for pid, p in tree.items()}
            parents = {pid: _parent(p) for pid, p in tree.items()}
            holders |= {pid for pid, line in lines.items() if warm.HOLDER_ARGV[-1] in line}
            # The template, its children and the kernels they fork all carry the template's command line.
            ours = {pid for pid, line in lines.items() if str(warm.ZYGOTE) in line}
            templates |= {(pid, parents[pid]) for pid in ours if parents[pid] not in ours | {None}}
            forked |= {pid for pid in ours if parents[pid] in ours}
            cold |= {pid for pid, line in lines.items() if "ipykernel_launcher" in line}
            time.sleep(0.05)
        assert batch.wait() == 0, "the batch failed"
        assert len(holders) >= 2, "the batch should have run its kernels in sandboxes with holders"
        assert [parent for _, parent in templates] == [batch.pid], templates  # one template, the grader's
        assert forked, "no kernel was seen forked from the template"
        assert not cold, "a kernel started cold"
    finally:
        batch.kill()
        batch.wait()


def _parent(process) -> int | None:
    try:
        return process.ppid()
    except Exception:  # noqa: BLE001 - gone meanwhile
        return None


def _cmdline(process) -> str:
    try:
        return " ".join(process.cmdline())
    except Exception:  # noqa: BLE001 - gone meanwhile
        return ""


def test_a_runner_for_unsafe_jobs_starts_no_template(monkeypatch):
    """``--unsafe`` runs no sandboxed kernel, so its pool starts no template (about 2 s of CPU for nothing); a
    sandboxed run's pool starts one."""
    from grader.running import runner as runners

    started = []
    monkeypatch.setattr(runners, "_prestart_template", lambda workers: started.append(workers))
    with runners.open_runner(workers=1, sandboxed=False):
        pass
    assert started == []
    with runners.open_runner(workers=1):
        pass
    assert started == [1]
