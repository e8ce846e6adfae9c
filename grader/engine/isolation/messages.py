"""Receiving a kernel's messages within a byte budget, counted before anything is parsed.

A student's kernel holds the session key, so it can sign any message it likes: many messages of
just under ZMQ's size cap (``MAX_MESSAGE_BYTES``) each pass every per-message check and, parsed one
after the other or queued faster than they are parsed, fill the grading worker's memory. So every
message is counted by the raw size of its frames as it comes off the socket, against a budget per
cell and one per submission (:class:`MessageBudget`); once either is spent, :func:`receive` raises
:class:`BudgetSpent` without parsing the message, and the caller kills the kernel. ZMQ's own
queues are bounded too (:data:`QUEUED_MESSAGES` per socket, in :func:`socket_options`): what the
grader has not read yet stays in the kernel, whose memory is the kernel's budget, not the grader's.

    budget = MessageBudget(cell_bytes=256 << 20, total_bytes=1 << 30)
    budget.start_cell()
    msg = receive(kc.iopub_channel, 0.05, budget)   # a dict, or None (nothing, or unreadable)
"""
from __future__ import annotations

import zmq

__all__ = ["BudgetSpent", "MessageBudget", "receive", "socket_options", "MAX_MESSAGE_BYTES", "QUEUED_MESSAGES"]

MAX_MESSAGE_BYTES = 65 * 1024 * 1024  # one message (a cell's records fit: 64 MB); ZMQ drops a bigger one unread
QUEUED_MESSAGES = 4  # per socket, received by ZMQ and not read yet (ZMQ's default is 1000)


class BudgetSpent(Exception):
    """The kernel sent more message bytes than its budget allows; ``str()`` says which budget."""


class MessageBudget:
    """Bytes a kernel may still send: ``cell_bytes`` per cell (reset by :meth:`start_cell`) and
    ``total_bytes`` over the whole submission (every cell, every kernel restart)."""

    def __init__(self, cell_bytes: int, total_bytes: int):
        self.cell_bytes, self.total_bytes = int(cell_bytes), int(total_bytes)
        self.cell_used = self.total_used = 0

    def start_cell(self) -> None:
        self.cell_used = 0

    def spend(self, size: int) -> None:
        """Count ``size`` bytes just received; raise :class:`BudgetSpent` once a budget is over."""
        self.cell_used += size
        self.total_used += size
        if self.cell_used > self.cell_bytes:
            raise BudgetSpent(f"the kernel sent more than {_mb(self.cell_bytes)} of messages during one cell "
                              "(a limit that protects the grader's memory); it was stopped")
        if self.total_used > self.total_bytes:
            raise BudgetSpent(f"the kernel sent more than {_mb(self.total_bytes)} of messages in all "
                              "(a limit per submission that protects the grader's memory); it was stopped")


def _mb(size: int) -> str:
    return f"{size / (1024 * 1024):g} MB"


def socket_options(context: zmq.Context) -> None:
    """Bound what ZMQ keeps for every socket made from ``context``: one message's size and how many
    messages wait unread (past that ZMQ stops reading the socket, and the kernel's own queue fills)."""
    context.setsockopt(zmq.MAXMSGSIZE, MAX_MESSAGE_BYTES)
    context.setsockopt(zmq.RCVHWM, QUEUED_MESSAGES)


def receive(channel, timeout: float, budget: MessageBudget):
    """The next message of ``channel`` (a jupyter_client ZMQ channel) as a dict, or None when none
    came within ``timeout`` seconds or it cannot be read (the kernel's fault: it is skipped).

    Raises :class:`BudgetSpent`, leaving the message unparsed, when its bytes overspend ``budget``."""
    socket = channel.socket
    if socket is None or not socket.poll(int(timeout * 1000)):
        return None
    frames = socket.recv_multipart()
    budget.spend(sum(len(frame) for frame in frames))
    try:
        _identities, signed = channel.session.feed_identities(frames)
        msg = channel.session.deserialize(signed)
    except Exception:  # noqa: BLE001 - bad signature, JSON nested too deep, ...: skip the message
        return None
    return msg if isinstance(msg, dict) else None
