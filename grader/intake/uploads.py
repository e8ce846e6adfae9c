"""Uploads: what a student handed in, read without ever following a symbolic link.

A student controls every byte of an upload, its file names and, in an nbgrader exchange, its
folder. A symbolic link named ``01_tensors.ipynb`` could point at the instructor's solution or at
another student's work; a link named ``hw`` at a whole folder of them. So an upload is read
through file descriptors: each folder is walked with :func:`os.fwalk` (links are listed, never
entered), each file is opened with ``O_NOFOLLOW`` and read only if it is a regular file. Links
and odd files are refused, one :class:`Rejected` each, saying what to do.

Student ids are compared the way people read them: two uploads whose ids differ only by
surrounding spaces, unicode normal form or letter case (``bob/`` beside ``bob.zip``, ``Bob``)
belong to one person, so :func:`collisions` finds them and collect refuses them all.
"""
from __future__ import annotations

import errno
import os
import stat
import unicodedata
from dataclasses import dataclass

from ..errors import GraderError

__all__ = ["Rejected", "Notebook", "check_student_id", "identity", "collisions", "open_folder", "open_file",
           "read_regular", "read_notebooks", "LINK_ADVICE", "CHECKPOINTS"]

FORBIDDEN = set('/\\*?[]:"<>|') | {chr(c) for c in range(32)} | {"\x7f"}
CHECKPOINTS = ".ipynb_checkpoints"
LINK_ADVICE = ("is a symbolic link; links are never followed (one could point at the instructor's "
               "solution or another student's work): upload the file or folder itself")
MAX_NOTEBOOK_BYTES = 64 * 1024 * 1024  # the limit engine/notebook/merge.py grades; larger uploads are refused here


@dataclass
class Rejected:
    where: str   # the upload, or the file inside it, as the instructor sees it in the inbox
    reason: str  # what was wrong and what to do


@dataclass
class Notebook:
    where: str           # path shown in reports: ``<upload>/<path inside it>``
    name: str            # file name, e.g. ``01_tensors.ipynb``
    data: bytes          # its bytes, read once; nothing opens the student's file again
    stamp: bytes | None  # a ``timestamp.txt`` in the same folder, if there is one
    mtime: float         # when it was last written (seconds since the epoch)


def check_student_id(raw: str) -> str:
    """The id, NFC-normalised and stripped; raises GraderError for ids that could escape the course."""
    student = unicodedata.normalize("NFC", raw).strip()
    if not student or student in (".", "..") or student.startswith(".") or FORBIDDEN & set(student) \
            or ".." in student or len(student) > 200:
        raise GraderError(f"refusing student id {raw!r}: ids may not be empty, start with '.', contain '..', "
                          "path separators, wildcards or control characters; rename the folder or zip")
    return student


def identity(student: str) -> str:
    """Who an id names: NFC, no surrounding spaces, case folded (``' Bob'`` and ``'bob'`` are one)."""
    return unicodedata.normalize("NFC", student).strip().casefold()


def collisions(ids: dict[str, str]) -> dict[str, list[str]]:
    """upload -> the other uploads whose student id names the same person; only colliding ones.

    ``ids`` maps each upload (as shown in reports) to its student id as written.
    """
    by_person: dict[str, list[str]] = {}
    for where, student in ids.items():
        by_person.setdefault(identity(student), []).append(where)
    return {where: [other for other in group if other != where]
            for group in by_person.values() if len(group) > 1 for where in group}


def open_folder(path: str | os.PathLike) -> int:
    """A file descriptor of the folder ``path``; GraderError if it is a link or not a folder."""
    try:
        return os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError as error:
        raise GraderError(_why_not(error, "opened as a folder")) from None


def open_file(name: str | os.PathLike, dir_fd: int | None = None) -> int:
    """A file descriptor of the regular file ``name`` (relative to ``dir_fd``); GraderError for anything else."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dir_fd)
    except OSError as error:
        raise GraderError(_why_not(error, "opened")) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise GraderError("is not a regular file (a device, pipe or socket); upload the file itself")
    return fd


def read_regular(name: str, dir_fd: int | None = None, limit: int = MAX_NOTEBOOK_BYTES) -> tuple[bytes, float]:
    """The bytes of the regular file ``name`` (relative to ``dir_fd``) and its mtime; GraderError otherwise."""
    with os.fdopen(open_file(name, dir_fd), "rb") as file:
        mtime = os.fstat(file.fileno()).st_mtime
        data = file.read(limit + 1)
    if len(data) > limit:
        raise GraderError(f"is larger than {limit >> 20} MB; clear the notebook's outputs "
                          "(Edit > Clear Outputs of All Cells), save, and upload it again")
    return data, mtime


def _why_not(error: OSError, action: str) -> str:
    """The reason an ``O_NOFOLLOW`` open failed: a link (ELOOP), or the system's words."""
    return LINK_ADVICE if error.errno == errno.ELOOP else f"could not be {action} ({error.strerror})"


def _is_link(name: str, dir_fd: int) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False  # gone meanwhile: opening it will say so


def read_notebooks(folder_fd: int, where: str, ignored: list[str] | None = None) -> tuple[list[Notebook], list[Rejected]]:
    """Every ``*.ipynb`` below the open folder (checkpoints skipped), and every link or odd file refused;
    ``ignored`` (when given) gets the path of every other file, which is not collected (notes, data, scripts)."""
    found: list[Notebook] = []
    refused: list[Rejected] = []
    for path, dirs, files, fd in os.fwalk(".", dir_fd=folder_fd, follow_symlinks=False):
        inside = os.path.normpath(path)
        shown = where if inside == "." else f"{where}/{inside}"
        links = {name for name in dirs + files if _is_link(name, fd)}
        dirs[:] = sorted(d for d in dirs if d != CHECKPOINTS and d not in links)
        refused += [Rejected(f"{shown}/{name}", f"{name} {LINK_ADVICE}") for name in sorted(links)]
        stamp = None
        if "timestamp.txt" in files and "timestamp.txt" not in links:
            try:
                stamp = read_regular("timestamp.txt", fd, limit=1024)[0]
            except GraderError:
                stamp = None
        if ignored is not None:
            ignored += [f"{shown}/{name}" for name in sorted(files)
                        if not name.endswith(".ipynb") and name != "timestamp.txt" and name not in links]
        for name in sorted(f for f in files if f.endswith(".ipynb") and f not in links):
            try:
                data, mtime = read_regular(name, fd)
                found.append(Notebook(f"{shown}/{name}", name, data, stamp, mtime))
            except GraderError as error:
                refused.append(Rejected(f"{shown}/{name}", f"{name} {error}"))
    return found, refused
