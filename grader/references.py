"""The reference values file: what the trusted solution recorded in each graded test cell.

``references/<assignment>.json`` in the course directory, written after the trusted run of the
source notebook (:func:`grader.execute.run_reference`) and read for every submission::

    {"format": 1, "source_sha256": "...", "seconds": 28.4,
     "cells": {"test_scale": {"x2": {"value": <grader.values wire form>, "rtol": 0.0, "atol": 0.0}}}}

This module needs neither torch nor a kernel, so the batch driver can plan with it cheaply.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

__all__ = ["References", "sha256_of"]


def sha256_of(path: Path) -> str:
    """The file's SHA-256 (hex): how a references file or a grade names the source it came from."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


class References:
    """What each graded test cell of the solution recorded: grade_id -> key -> value+tolerance."""

    def __init__(self, cells: dict[str, dict[str, dict]], source_sha256: str = "", seconds: float = 0.0):
        self.cells, self.source_sha256 = cells, source_sha256
        self.seconds = seconds  # how long the reference run took: what one submission may cost

    def to_dict(self) -> dict:
        """The file's content: plain JSON types (what a job carries to a worker)."""
        return {"format": 1, "source_sha256": self.source_sha256, "seconds": self.seconds,
                "cells": self.cells}

    @classmethod
    def from_dict(cls, data: dict, where: str = "the reference values") -> "References":
        if not isinstance(data, dict) or data.get("format") != 1 or not isinstance(data.get("cells"), dict):
            raise ValueError(f"{where} is not a course-grader references file; run the reference again")
        seconds = data.get("seconds", 0.0)
        return cls(data["cells"], data.get("source_sha256", ""),
                   float(seconds) if isinstance(seconds, (int, float)) else 0.0)

    def save(self, path: Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict()), encoding="utf-8")

    @classmethod
    def load(cls, path: Path) -> "References":
        return cls.from_dict(json.loads(Path(path).read_text(encoding="utf-8")), str(path))
