"""How to run course-grader, spelled so that a message's command works when pasted.

After ``make`` set-up the command lives in ``.venv/bin``, which is not on the user's PATH: a message
that says ``course-grader build`` would answer "command not found". :func:`command` names the
executable that is found from here, or ``python -m grader`` with this very interpreter.
"""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

__all__ = ["command"]


def _shown(path: Path) -> str:
    try:
        relative = os.path.relpath(path)
    except ValueError:  # another drive (Windows)
        return str(path)
    return relative if not relative.startswith("..") else str(path)


def command(arguments: str) -> str:
    """``"course-grader " + arguments`` if that works in the user's shell, else a form that does."""
    installed = Path(sys.executable).parent / "course-grader"
    found = shutil.which("course-grader")
    if found and installed.exists() and Path(found).resolve() == installed.resolve():
        return f"course-grader {arguments}"
    if installed.exists():
        return f"{_shown(installed)} {arguments}"
    return f"{_shown(Path(sys.executable))} -m grader {arguments}"
