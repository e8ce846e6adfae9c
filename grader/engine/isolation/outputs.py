"""What a kernel sends, rebuilt from checked fields: safe to keep, to save and to print.

A student's kernel can put anything on its sockets, not only what ipykernel would send: text with
lone surrogates or invalid UTF-8, fields of the wrong type, NaN, JSON nested hundreds deep, stream
names that are escape sequences, HTML with scripts, image metadata that breaks out of an ``<img>``
tag. Nothing of a message is kept as it came. :func:`output` builds a fresh nbformat output from
the fields it checked (or None): strings cleaned of lone surrogates, then only what
:mod:`grader.engine.notebook.allowlist` allows (known MIME types, cleaned HTML, numeric image sizes), so that
saving the notebook (``nbformat.writes``, then UTF-8, then strict JSON readers) never fails and
no page made from it (feedback, formgrader) runs the student's markup; :class:`OutputSink` keeps
a cell's outputs within a byte cap.
"""
from __future__ import annotations

import json

import nbformat

from ..notebook.allowlist import clean_text, safe_output

__all__ = ["OutputSink", "output"]

STREAMS = ("stdout", "stderr")


def _data(data) -> dict:
    """A MIME bundle of clean strings (str or list of str values only; the allowlist decides the rest)."""
    bundle = {}
    for mime, value in data.items() if isinstance(data, dict) else ():
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            value = "".join(value)
        if isinstance(mime, str) and isinstance(value, str):
            bundle[clean_text(mime)] = clean_text(value)
    return bundle


def output(kind, content) -> nbformat.NotebookNode | None:
    """The nbformat output for one iopub message (its type and content), rebuilt from checked
    fields; None for a message that is no output, or one with nothing usable in it."""
    if not isinstance(content, dict):
        return None
    if kind == "stream":
        text = content.get("text")
        if isinstance(text, list) and all(isinstance(t, str) for t in text):
            text = "".join(text)
        if content.get("name") not in STREAMS or not isinstance(text, str):
            return None
        return nbformat.v4.new_output("stream", name=content["name"], text=clean_text(text))
    if kind in ("display_data", "execute_result"):
        return safe_output({"output_type": kind, "data": _data(content.get("data")),
                            "metadata": content.get("metadata"), "execution_count": content.get("execution_count")})
    if kind == "error":
        trace = content.get("traceback")
        return nbformat.v4.new_output(
            "error", ename=clean_text(content.get("ename")) or "Error",
            evalue=clean_text(content.get("evalue")) or "",
            traceback=[clean_text(t) for t in trace if isinstance(t, str)] if isinstance(trace, list) else [])
    return None


class OutputSink:
    """A cell's outputs, capped at ``cap`` bytes of JSON in all."""

    def __init__(self, cap: int):
        self.cap, self.used, self.outputs, self.truncated = cap, 0, [], False

    def lost(self, message_cap: int) -> None:
        """Say that messages were dropped unread: one over ``message_cap`` bytes, or more than the
        grader's queue holds, sent faster than it could take them in."""
        self.truncated = True
        self.outputs.append(nbformat.v4.new_output(
            "stream", name="stderr", text=f"\n[course-grader: output lost (a message over {message_cap} "
            "bytes, or more messages than the grader could take in, was dropped)]\n"))

    def clear(self) -> None:
        self.outputs, self.used = [], 0

    def add(self, out: nbformat.NotebookNode) -> None:
        """Keep ``out`` (built by :func:`output`) while the cap allows."""
        if self.truncated:
            return
        size = len(json.dumps(out))
        if self.used + size > self.cap:
            if out.get("output_type") == "stream" and self.used < self.cap:
                keep = max(0, self.cap - self.used - 200)
                out["text"] = out["text"][:keep]
                self._append(out)
            self.truncated = True
            self.outputs.append(nbformat.v4.new_output(
                "stream", name="stderr",
                text=f"\n[course-grader: output truncated at {self.cap} bytes]\n"))
            return
        self.used += size
        self._append(out)

    def _append(self, out) -> None:
        last = self.outputs[-1] if self.outputs else None
        if (out.get("output_type") == "stream" and last is not None
                and last.get("output_type") == "stream" and last.get("name") == out.get("name")):
            last["text"] += out["text"]
        else:
            self.outputs.append(out)
