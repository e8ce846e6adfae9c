"""The reference values file: what the trusted solution recorded in each graded test cell.

``references/<assignment>.json`` in the course directory, written after the trusted run of the
source notebook (:func:`grader.engine.grade.run_reference`) and read for every submission::

    {"format": 1, "source_sha256": "...", "seconds": 28.4,
     "cells": {"test_scale": {"x2": {"value": <grader.values wire form>, "rtol": 0.0, "atol": 0.0}}},
     "problems": ["cell 40 timed out after 300 s"]}

``problems``: what the trusted run reported beside the values (a cell that timed out, crashed or printed too
much; a file written before it was kept has none). Grading stops after a notebook's last graded cell, so for the
cells after it this run is the only one that can say so.

This module needs neither torch nor a kernel, so the batch driver can plan with it cheaply.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from .seal import seal, verify

__all__ = ["References", "sha256_of", "sha256_of_all"]


def sha256_of(path: Path) -> str:
    """The file's SHA-256 (hex): how a references file or a grade names the source it came from."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def sha256_of_all(paths: list[Path]) -> str:
    """One file's :func:`sha256_of`; for several (the notebooks of an assignment), the SHA-256 of their
    "name hash" lines, so that a change to any of them, or a file more or less, changes it."""
    if len(paths) == 1:
        return sha256_of(paths[0])
    lines = "".join(f"{Path(p).name} {sha256_of(p)}\n" for p in sorted(paths, key=lambda p: Path(p).name))
    return hashlib.sha256(lines.encode("utf-8")).hexdigest()


class References:
    """What each graded test cell of the solution recorded: grade_id -> key -> value+tolerance."""

    def __init__(self, cells: dict[str, dict[str, dict]], source_sha256: str = "", seconds: float = 0.0,
                 problems: list[str] | None = None):
        self.cells, self.source_sha256 = cells, source_sha256
        self.seconds = seconds  # how long the reference run took: what one submission may cost
        self.problems = list(problems or [])  # what the run reported beside the values (module docstring)

    def to_dict(self) -> dict:
        """The file's content: plain JSON types (what a job carries to a worker)."""
        return {"format": 1, "source_sha256": self.source_sha256, "seconds": self.seconds,
                "cells": self.cells, "problems": self.problems}

    @classmethod
    def from_dict(cls, data: dict, where: str = "the reference values") -> "References":
        if not isinstance(data, dict) or data.get("format") != 1 or not isinstance(data.get("cells"), dict):
            raise ValueError(f"{where} is not a course-grader references file; run the reference again")
        seconds, problems = data.get("seconds", 0.0), data.get("problems", [])
        return cls(data["cells"], data.get("source_sha256", ""),
                   float(seconds) if isinstance(seconds, (int, float)) else 0.0,
                   [p for p in problems if isinstance(p, str)] if isinstance(problems, list) else [])

    def save(self, path: Path, key: bytes | None = None) -> None:
        """Write the file; with the course's ``key`` (grader.engine.verdict.seal) it carries a seal."""
        data = self.to_dict()
        if key is not None:
            data["seal"] = seal(key, self.to_dict())
        path = Path(path)
        partial = path.with_name(f".{path.name}.{os.getpid()}.partial")  # a reader never sees half a file
        partial.write_text(json.dumps(data), encoding="utf-8")
        os.replace(partial, path)

    @classmethod
    def load(cls, path: Path, key: bytes | None = None) -> "References":
        """Read the file; with ``key``, refuse (ValueError) one whose seal does not match."""
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        if key is not None and not (isinstance(data, dict) and verify(key, {k: v for k, v in data.items()
                                                                            if k != "seal"}, data.get("seal"))):
            raise ValueError(f"{path} was changed after the grader wrote it; it is computed again")
        return cls.from_dict({k: v for k, v in data.items() if k != "seal"} if isinstance(data, dict) else data,
                             str(path))
