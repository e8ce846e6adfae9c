"""Run notebook cells in one (possibly sandboxed) Jupyter kernel, cell by cell, with limits.

The grader talks to the kernel over ZMQ ``ipc`` sockets in a private folder, so a sandboxed
kernel needs no network. Each cell gets a wall-clock deadline; on a timeout the kernel is
interrupted and, if it does not answer, killed. Outputs are capped by bytes. Record outputs
(``grader.record``) are taken out of the cell's outputs and returned separately, as JSON text:
deciding what they mean is the job of :mod:`grader.engine.verdict.compare`. Every other output is rebuilt from
checked fields (:mod:`grader.engine.isolation.outputs`): a kernel may send anything.

Each kernel start (restarts too) gets a fresh working folder and socket folder made by the grader,
which writes only new files there and never opens what an earlier kernel could have written, and
removes them when the kernel stops (:mod:`grader.engine.isolation.cleanup`). Sandboxed kernels get a control group
each (:mod:`grader.engine.isolation.cgroups`): memory, CPU and processes of the kernel and its children together.
Messages are counted in bytes before they are parsed (:mod:`grader.engine.isolation.messages`); a kernel that
overspends its budget, or its memory, is stopped.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import zmq
from jupyter_client import KernelManager

from d2lite import unattended

from ...record import MIME_TYPE
from ..notebook.cells import safe_relative_name
from .cgroups import KernelGroup, kernel_cores
from .cleanup import owned_folder, remove_tree
from .messages import MAX_MESSAGE_BYTES, BudgetSpent, MessageBudget, receive, socket_options
from .outputs import OutputSink, output
from .sandbox import (Limits, copy_new, hand_over, kernel_command, kernel_env, kernel_uid, new_folder,
                      sandboxed_rlimits, seed_font_list)
from .warm import HOLDER_ARGV, WarmUnavailable, find_holder, give_up, read_end, template_for, warm_enabled

__all__ = ["CellRun", "Kernel"]

INTERRUPT_GRACE_S = 10.0
MAX_RECORD_BYTES = 64 * 1024 * 1024  # per cell, all record payloads together
IDLE_GRACE_S = 5.0  # how long the kernel may stay silent after its execute reply
STARTUP_TIMEOUT_S = 120.0


@dataclass
class CellRun:
    """What happened when one cell ran."""

    status: str  # "ok" | "error" | "timeout" | "crashed" | "not run"
    outputs: list = field(default_factory=list)
    records: list = field(default_factory=list)  # each payload's JSON text; None: over a size limit
    error: str = ""  # "Name: message" of the exception, when status == "error"
    truncated: bool = False
    part: str = ""  # for a test cell run in parts: "visible" or "hidden", the part that failed
    tainted: bool = False  # ran after a hidden test had started: its outputs may quote hidden code
    record_bytes: int = 0  # the size of ``records`` (JSON text)

    def payloads(self) -> list:
        """The record payloads, parsed (None for one dropped at a size limit; {} for one nested too
        deeply to parse here: a malformed record)."""
        return [None if text is None else _loads(text) for text in self.records]


def _loads(text: str):
    try:
        return json.loads(text)
    except RecursionError:
        return {}


class _SandboxedKernelManager(KernelManager):
    """A KernelManager whose kernel command line is ours (bwrap + setpriv + prlimit + python, or, for a warm
    start, bwrap + setpriv + prlimit + the holder shell of :mod:`.warm`)."""

    wrap = None  # set per instance: callable(argv) -> argv
    holder = False  # set per instance: run the warm start's holder instead of python

    def kernel_arguments(self) -> list[str]:
        return ["-f", self.connection_file, "--HistoryManager.enabled=False"]

    def format_kernel_cmd(self, extra_arguments=None):
        if self.holder:
            return self.wrap(list(HOLDER_ARGV))
        argv = [sys.executable, "-m", "ipykernel_launcher", *self.kernel_arguments()]
        return self.wrap(argv + list(extra_arguments or []))


class Kernel:
    """One kernel process; use as a context manager. ``run(source)`` executes one cell.

    scratch: a folder of the grader's, never given to a kernel: each start makes the kernel's
        working folder in it (``kernel-1``, then ``kernel-2`` after a restart, ...).
    support: (relative name, path) of each file copied into each new working folder, at that
        name (the assignment's support files, :func:`grader.engine.notebook.cells.support_files_under`)."""

    def __init__(self, scratch: Path, limits: Limits, *, sandboxed: bool, record: bool = True,
                 support: tuple[tuple[str, Path], ...] = ()):
        self.scratch, self.limits, self.sandboxed, self.record = Path(scratch), limits, sandboxed, record
        self.support = [(name, Path(path)) for name, path in support]
        self.km = self.kc = self.group = None
        self.workdir = self._sockdir = None  # the current kernel's folders
        self.dead_reason = ""
        self.budget = MessageBudget(limits.max_cell_message_mb << 20, limits.max_notebook_message_mb << 20)
        self.problems: list[str] = []  # what could not be cleaned up
        self.starts = 0
        self.warm = False  # whether the running kernel was forked from the warm template (:mod:`.warm`)
        self._end_fd = None  # a warm kernel's status pipe from the template (the grader's own; read_end)
        self._end = None  # what it said: how the warm kernel ended

    def __enter__(self) -> "Kernel":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- life cycle ---------------------------------------------------------------------------
    def start(self) -> None:
        """A kernel in new folders of its own; when it cannot start, nothing is left behind. A sandboxed
        kernel starts warm (:mod:`.warm`) where it can, else cold."""
        warm = self.sandboxed and warm_enabled()
        try:
            self._launch(warm)
        except WarmUnavailable as why:
            give_up(str(why))
            self.stop()
            self.start_cold()
        except Exception:
            self.stop()
            raise

    def start_cold(self) -> None:
        try:
            self._launch(False)
        except Exception:
            self.stop()
            raise

    def _launch(self, warm: bool) -> None:
        self.starts += 1  # kernel-1, kernel-2, ...: a restart's name differs, though the old folder is gone
        self.workdir = new_folder(self.scratch, "kernel-", self.starts)
        self._sockdir = sockdir = owned_folder("ipc")
        if not self.sandboxed:
            (self.workdir / ".tmp").mkdir()
        for name, path in self.support:  # the folder is new: nothing a kernel made is in it yet
            target = self.workdir / safe_relative_name(name)
            target.parent.mkdir(parents=True, exist_ok=True)
            copy_new(path, target)
        seed_font_list(self.workdir)
        km = _SandboxedKernelManager(transport="ipc", ip=str(sockdir / "k"),
                                     connection_file=str(sockdir / "kernel.json"))
        kernel_vars = kernel_env(self.workdir, sandboxed=self.sandboxed)
        if self.record:
            kernel_vars[unattended.COURSE_GRADER_RECORD] = "1"
        if self.sandboxed:
            self.group = KernelGroup.create(self.limits, kernel_cores(self.limits.cpu_cores))
        join = self.group.wrap if self.group is not None else list
        km.wrap = lambda argv: join(kernel_command(argv, workdir=self.workdir, sockdir=sockdir,
                                                   limits=self.limits, unsafe=not self.sandboxed, env=kernel_vars,
                                                   memory_in_cgroup=self.group is not None,
                                                   processes_in_cgroup=self._processes_in_group()))
        km.write_connection_file()
        if self.sandboxed:  # bwrap --clearenv: the variables travel as --setenv arguments
            hand_over(sockdir)
            hand_over(self.workdir)
        launch_env = {"PATH": "/usr/bin:/bin"} if self.sandboxed else kernel_vars
        self.warm, self._end = False, None
        if warm:
            self.km, self.dead_reason = km, ""
            self._start_warm(km, launch_env, kernel_vars)
            self.warm = True
        else:
            km.start_kernel(env=launch_env, cwd=str(self.workdir), stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.km, self.dead_reason = km, ""
        try:
            self._connect(STARTUP_TIMEOUT_S)
        except RuntimeError as exc:
            raise RuntimeError(f"the kernel did not start: {exc}") from None

    def _processes_in_group(self) -> bool:
        """Whether this kernel's control group counts its processes (``pids.max``)."""
        return self.group is not None and "pids" in self.group.controllers

    def _start_warm(self, km: "_SandboxedKernelManager", launch_env: dict, kernel_vars: dict) -> None:
        """bwrap runs the holder; the template forks the kernel into its sandbox (:mod:`.warm`)."""
        try:
            template = template_for(kernel_vars)
        except OSError as exc:
            raise WarmUnavailable(f"the kernel template could not start: {exc}") from None
        km.holder = True
        holder_r, holder_w = os.pipe()  # how the kernel ended: to the holder (whose stdin it is) ...
        self._end_fd, end_w = os.pipe()  # ... and to the grader, which believes only this one
        os.set_blocking(self._end_fd, False)
        self._end = None
        try:
            km.start_kernel(env=launch_env, cwd=str(self.workdir), stdin=holder_r,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            os.close(holder_r)
            holder_r = None
            holder = find_holder(km.provisioner.process, STARTUP_TIMEOUT_S)
            procs = sorted({str(d / "cgroup.procs") for d in self.group.dirs.values()}) if self.group else []
            template.fork_kernel(holder, (holder_w, end_w), {
                "cgroup_procs": procs, "uid": kernel_uid(), "env": kernel_vars, "workdir": str(self.workdir),
                "rlimits": sandboxed_rlimits(self.limits, memory_in_cgroup=self.group is not None,
                                             processes_in_cgroup=self._processes_in_group()),
                "argv": km.kernel_arguments()})
        finally:
            for fd in (holder_r, holder_w, end_w):
                if fd is not None:
                    os.close(fd)

    def _connect(self, timeout: float) -> None:
        context = zmq.Context()
        socket_options(context)  # messages over MAX_MESSAGE_BYTES are dropped unread; queues are short
        self.kc = self.km.client(context=context)
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=timeout)

    def stop(self) -> None:
        if self.kc is not None:
            self.kc.stop_channels()
            self.kc.context.destroy(linger=0)
        if self.km is not None:
            try:
                self.km.shutdown_kernel(now=True)
            except Exception:  # noqa: BLE001 - a dead kernel may fail to shut down; it is gone
                pass
        self.km = self.kc = None
        if self._end_fd is not None:
            os.close(self._end_fd)
            self._end_fd = None
        if self.group is not None:  # whatever the kernel started, it ends here
            self.problems += [self.group.close()]
            self.group = None
        for folder in (self._sockdir, self.workdir):  # the kernel could write there: removed, never reused
            self.problems += [remove_tree(folder)]
        self._sockdir = None
        self.problems = [p for p in self.problems if p]

    def restart(self) -> None:
        """A fresh kernel in place of this one (nothing of the old one's state survives)."""
        self.stop()
        self.start()

    def alive(self) -> bool:
        return self.km is not None and self.km.is_alive() and not self._warm_ended()

    def _warm_ended(self) -> bool:
        """Whether a warm kernel has ended, as the template's child told the grader (the holder, which the kernel
        can stop, may still run)."""
        if self._end is None and self._end_fd is not None:
            self._end = read_end(self._end_fd)
        return self._end is not None

    def _out_of_memory(self) -> str:
        """The reason to stop the kernel when the out-of-memory killer ran in its group, else ""."""
        if self.group is None or not self.group.oom_kills():
            return ""
        return (f"the kernel was stopped: its processes together used more than its memory budget "
                f"({self.limits.memory_mb} MB)")

    def _death(self) -> str:
        if self._out_of_memory():
            return self._out_of_memory()
        if self._end == "lost":
            return "the kernel ended with its template, a process of the grader's (grade it again)"
        if self._end is not None:
            code = int(self._end[1:]) * (-1 if self._end[0] == "k" else 1)
        else:
            code = self.km.provisioner.process.poll() if self.km and self.km.provisioner else None
        if code is None:
            return "the kernel stopped responding"
        if code < 0 or code > 128:
            sig = -code if code < 0 else code - 128
            names = {9: "was killed (SIGKILL: out of memory or a resource limit)",
                     11: "crashed (segmentation fault)", 24: "was stopped at its CPU-time limit",
                     6: "aborted", 7: "crashed (bus error)"}
            return "the kernel " + names.get(sig, f"was killed by signal {sig}")
        return f"the kernel exited (exit status {code})"

    # -- running cells ------------------------------------------------------------------------
    def run(self, source: str, timeout: float | None = None, *, store_history: bool = True) -> CellRun:
        """Execute ``source`` within ``timeout`` seconds (default: the cell limit); never raises
        for anything the cell does. ``store_history=False`` keeps the code out of the kernel's
        input history (``In``, ``_ih``)."""
        if not self.alive():
            return CellRun("not run", error=self.dead_reason or "the kernel is not running")
        msg_id = self.kc.execute(source, store_history=store_history, allow_stdin=False,
                                 stop_on_error=False)
        run, sink = CellRun("ok"), OutputSink(self.limits.max_output_bytes)
        self.budget.start_cell()
        deadline = time.monotonic() + (self.limits.cell_timeout_s if timeout is None else timeout)
        reply = idle = False
        interrupted_at = reply_at = None
        heard = time.monotonic()  # when this cell's last message arrived
        while not (reply and idle):
            now = time.monotonic()
            if reply_at is not None and now > max(reply_at, heard) + IDLE_GRACE_S:
                sink.lost(MAX_MESSAGE_BYTES)  # the kernel answered, its outputs stopped: a dropped message
                self._reconnect()
                break
            if interrupted_at is None and now > deadline:
                run.status, interrupted_at = "timeout", now
                self._interrupt()
            if interrupted_at is not None and now > interrupted_at + INTERRUPT_GRACE_S:
                self.dead_reason = "the kernel was killed after a cell ignored the interrupt"
                self.stop()
                break
            try:
                msg = receive(self.kc.iopub_channel, 0.05, self.budget)
                shell = receive(self.kc.shell_channel, 0 if msg is not None else 0.05, self.budget)
            except BudgetSpent as spent:  # stop reading: the kernel goes, with what it sent unread
                self.dead_reason, run.status = str(spent), "crashed"
                self.stop()
                break
            if msg is not None and _parent(msg) == msg_id:
                heard = time.monotonic()
                try:
                    idle |= self._handle(msg, run, sink)
                except Exception:  # noqa: BLE001 - a malformed message from the kernel: drop it
                    pass
            if shell is not None and _parent(shell) == msg_id:
                reply, reply_at = True, time.monotonic()
                content = shell.get("content")
                if isinstance(content, dict) and content.get("status") == "error" \
                        and run.status == "ok":
                    run.status = "error"
            if msg is None and shell is None and (self._out_of_memory() or not self.alive()):
                self.dead_reason, run.status = self._death(), "crashed"
                self.stop()
                break
        run.outputs, run.truncated = sink.outputs, sink.truncated
        if run.status == "crashed":
            run.error = self.dead_reason
        return run

    def _reconnect(self) -> None:
        """New channels to the same kernel (ZMQ drops a connection that sent a huge message)."""
        self.kc.stop_channels()
        self.kc.context.destroy(linger=0)
        try:
            self._connect(30)
        except Exception:  # noqa: BLE001 - cannot talk to it any more: it counts as dead
            self.dead_reason = "the kernel stopped answering"
            self.stop()

    def _interrupt(self) -> None:
        msg = self.kc.session.msg("interrupt_request", content={})
        self.kc.control_channel.send(msg)

    def _handle(self, msg: dict, run: CellRun, sink: OutputSink) -> bool:
        kind, content = msg["header"]["msg_type"], msg["content"]
        if not isinstance(content, dict):
            return False
        if kind == "status":
            return content.get("execution_state") == "idle"
        data = content.get("data")
        if kind in ("display_data", "execute_result") and isinstance(data, dict) and MIME_TYPE in data:
            _keep_record(data[MIME_TYPE], run)
            return False
        out = output(kind, content)
        if kind == "error":
            if run.status == "ok":
                run.status = "error"
            run.error = f"{out.ename}: {out.evalue}" if out is not None else "Error: "
        if kind == "clear_output":
            sink.clear()
        elif out is not None:
            sink.add(out)
        return False


def _keep_record(payload, run: CellRun) -> None:
    """Keep a record payload as compact JSON text (what its size limit counts), or None once the
    cell's records pass MAX_RECORD_BYTES (then the record counts as made, and cannot match)."""
    try:
        text = json.dumps(payload, separators=(",", ":"))
    except (ValueError, TypeError, RecursionError):
        text = "null"  # malformed: verdict/compare.py says so
    if run.record_bytes + len(text) > MAX_RECORD_BYTES:
        run.records.append(None)
        return
    run.records.append(text)
    run.record_bytes += len(text)


def _parent(msg: dict):
    parent = msg.get("parent_header")
    return parent.get("msg_id") if isinstance(parent, dict) else None
