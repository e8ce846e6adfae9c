"""Remove a folder a kernel could write into, whatever it left there; never raises.

A student's code may leave a tree deeper than Python's recursion limit (``shutil.rmtree`` in
Python 3.11 recurses once per level, and holds a file descriptor per level), paths longer than
``PATH_MAX``, links to host files, folders without write or search permission, or files of
another uid. :func:`remove_tree` hands the folder to GNU ``rm -rf --one-file-system``, which walks
any depth without recursion (fts with ``openat``), never follows a link (it removes the link) and
stays on the folder's file system; a second pass first gives the tree back its permissions
(``chmod -R u+rwx``, which changes no link and no file behind one), for a grader that is not root.

    left = remove_tree(path)   # "" when nothing is left, else what is left and why

The temporary folders of grading (a kernel's working and socket folders) are named for the process
that made them, ``course-grader-<kind>-<pid>-<random>`` (:func:`owned_folder`): a worker killed from
outside cannot remove its own, and :func:`remove_orphans` (run by the batch when it replaces a dead
worker, and at the start of each batch) removes those whose process is gone.
"""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

__all__ = ["owned_folder", "remove_orphans", "remove_tree", "scratch_folder"]

PREFIX = "course-grader-"
_OWNED = re.compile(rf"^{PREFIX}([a-z]+)-([0-9]+)-")

TIMEOUT_S = 600  # removing millions of entries takes a while; a stuck file system must not hang a batch


def _run(argv: list[str]) -> str:
    """Run ``argv``; the first line of its complaint, or "" when it succeeded."""
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              timeout=TIMEOUT_S, env={"PATH": "/usr/bin:/bin", "LC_ALL": "C"})
    except (OSError, subprocess.SubprocessError) as error:
        return f"{argv[0]} could not run ({type(error).__name__})"
    if done.returncode == 0:
        return ""
    lines = done.stderr.decode("utf-8", "replace").strip().splitlines()
    return lines[0][:300] if lines else f"{argv[0]} exited with status {done.returncode}"


def remove_tree(path: Path | str | None) -> str:
    """Remove ``path`` (a folder, a file or a link; a link is removed, never followed) and all it holds.

    Returns "" when nothing is left at ``path``, else one sentence saying what is left and why (a
    problem for the instructor); never raises."""
    if path is None:
        return ""
    path = os.path.abspath(os.fspath(path))
    try:
        if not os.path.lexists(path):
            return ""
        if shutil.which("rm", path="/usr/bin:/bin") is None:
            return f"could not remove {path}: the rm command is missing"
        why = _run(["rm", "-rf", "--one-file-system", "--", path])
        if why and os.path.isdir(path) and not os.path.islink(path):  # e.g. folders without permissions
            _run(["chmod", "-R", "u+rwx", "--", path])
            why = _run(["rm", "-rf", "--one-file-system", "--", path])
        return f"could not remove {path}: {why or 'it is still there'}" if os.path.lexists(path) else ""
    except Exception as error:  # noqa: BLE001 - a cleanup must never stop grading
        return f"could not remove {Path(path)}: {type(error).__name__}"


def owned_folder(kind: str) -> Path:
    """A new temporary folder ``course-grader-<kind>-<this process id>-<random>`` (``kind``: lower-case letters)."""
    return Path(tempfile.mkdtemp(prefix=f"{PREFIX}{kind}-{os.getpid()}-"))


def remove_orphans() -> list[str]:
    """Remove the temporary folders (:func:`owned_folder`) of processes that no longer run; never raises.
    Returns what could not be removed."""
    problems = []
    try:
        entries = list(Path(tempfile.gettempdir()).iterdir())
    except OSError:
        return problems
    for entry in entries:
        match = _OWNED.match(entry.name)
        if match and not Path(f"/proc/{match.group(2)}").exists():
            problems.append(remove_tree(entry))
    return [p for p in problems if p]


@contextlib.contextmanager
def scratch_folder(kind: str):
    """A new temporary folder (:func:`owned_folder`), removed afterwards whatever a kernel left in it
    (:func:`remove_tree`: any depth, links not followed); the removal never raises."""
    folder = owned_folder(kind)
    try:
        yield folder
    finally:
        remove_tree(folder)
