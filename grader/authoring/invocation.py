"""How to run course-grader, spelled so that a message's command works when pasted.

After ``make`` set-up the command lives in ``.venv/bin``, which is not on the user's PATH: a message
that says ``course-grader build`` would answer "command not found". :func:`command` names the
executable that is found from here, or ``python -m grader`` with this very interpreter.
"""
from __future__ import annotations

import os
import shlex
import shutil
import sys
from pathlib import Path

__all__ = ["command", "DEFAULT_ROOT"]

DEFAULT_ROOT = Path("build/course")  # the course directory when no --root is given


def _shown(path: Path) -> str:
    try:
        relative = os.path.relpath(path)
    except ValueError:  # another drive (Windows)
        return str(path)
    return relative if not relative.startswith("..") else str(path)


def _root_option(root: Path | str | None) -> str:
    """``"--root ROOT "`` for a course directory other than the default one, else ``""``."""
    if root is None or Path(root).resolve() == DEFAULT_ROOT.resolve():
        return ""
    return f"--root {shlex.quote(_shown(Path(root)))} "


def command(arguments: str, root: Path | str | None = None, *, module: bool = False) -> str:
    """``"course-grader " + arguments`` if that works in the user's shell, else a form that does.

    root: the course directory the command acts on; named (``--root ROOT``) unless it is the
    default ``build/course``, so that a suggested command acts on the course the user gave.
    module: always ``PYTHON -m grader ...`` with this interpreter (what the README shows students).
    """
    arguments = f"{_root_option(root)}{arguments}"
    if module:
        return f"{_shown(Path(sys.executable))} -m grader {arguments}"
    installed = Path(sys.executable).parent / "course-grader"
    found = shutil.which("course-grader")
    if found and installed.exists() and Path(found).resolve() == installed.resolve():
        return f"course-grader {arguments}"
    if installed.exists():
        return f"{_shown(installed)} {arguments}"
    return f"{_shown(Path(sys.executable))} -m grader {arguments}"
