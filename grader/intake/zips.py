"""Zips: a student's ``.zip`` read within limits, in memory, never unpacked onto the disk.

A 1 MB zip can inflate to 1 GB (a "zip bomb"), and its headers may lie about sizes. So a zip is
refused as a whole, before anything is inflated, when it holds more than ``max_members`` entries,
declares more than ``max_bytes`` in total, or a member larger than 1 MB claims to shrink more than
``max_ratio`` times; then only the notebooks are inflated, in chunks, counting the bytes that
really come out against the same limits. Since nothing is written to the disk until the whole zip
was read, a refused zip leaves no partial files behind.

Members are never trusted as paths: a name that climbs out of the archive (``../x``, ``/etc/x``)
refuses the zip; a member stored as a symbolic link is refused (its "content" is a path).
"""
from __future__ import annotations

import lzma
import os
import stat
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import BinaryIO

from ..errors import GraderError
from .uploads import CHECKPOINTS, LINK_ADVICE, MAX_NOTEBOOK_BYTES, Notebook, Rejected

__all__ = ["ZipLimits", "read_zip", "MAX_UNZIPPED_BYTES", "MAX_MEMBERS", "MAX_RATIO"]

MAX_UNZIPPED_BYTES = 200 * 1024 * 1024  # a course's notebooks with their outputs stay far below
MAX_MEMBERS = 1000                      # files and folders in one zip
MAX_RATIO = 100                         # notebooks deflate 3-20x; bombs 1000x
RATIO_FLOOR_BYTES = 1024 * 1024         # smaller members may shrink any amount: they cannot hurt
CHUNK = 64 * 1024
BROKEN = (zipfile.BadZipFile, zlib.error, lzma.LZMAError, EOFError, OSError, RuntimeError,
          NotImplementedError, ValueError)  # what zipfile raises on damaged, encrypted or exotic zips


@dataclass(frozen=True)
class ZipLimits:
    max_bytes: int = MAX_UNZIPPED_BYTES  # uncompressed bytes, all members together
    max_members: int = MAX_MEMBERS
    max_ratio: float = MAX_RATIO         # uncompressed / compressed size of one member


def read_zip(file: BinaryIO, where: str, limits: ZipLimits = ZipLimits()) -> tuple[list[Notebook], list[Rejected]]:
    """The notebooks inside the zip ``file`` and the members refused; GraderError refuses the whole zip.

    Each notebook's ``mtime`` is the zip's own (when it was uploaded), not what its members claim.
    """
    try:
        mtime = os.fstat(file.fileno()).st_mtime
        with zipfile.ZipFile(file) as archive:
            members = archive.infolist()
            _check_declared(members, limits)
            return _inflate_notebooks(archive, members, where, limits, mtime)
    except BROKEN as error:
        raise GraderError(f"is not a readable zip ({type(error).__name__}: {error}); ask for it again, "
                          "or for the folder itself") from None


def _check_declared(members: list[zipfile.ZipInfo], limits: ZipLimits) -> None:
    """Refuse what the headers already show: too many members, too many bytes, a bomb, a path escape."""
    if len(members) > limits.max_members:
        raise GraderError(f"holds {len(members)} files, more than {limits.max_members}; zip only the "
                          "assignment's notebooks")
    declared = sum(m.file_size for m in members)
    if declared > limits.max_bytes:
        raise GraderError(f"unpacks to {declared >> 20} MB, more than {limits.max_bytes >> 20} MB; "
                          "zip only the assignment's notebooks")
    for member in members:
        path = PurePosixPath(member.filename.replace("\\", "/"))
        if path.is_absolute() or ".." in path.parts:
            raise GraderError(f"holds a member {member.filename!r} outside the archive; nothing was "
                              "unpacked: zip the folder again from inside it")
        if _too_compressed(member.file_size, member.compress_size, limits):
            raise GraderError(_bomb(member, limits))


def _too_compressed(size: int, compressed: int, limits: ZipLimits) -> bool:
    return size > RATIO_FLOOR_BYTES and size > limits.max_ratio * max(compressed, 1)


def _bomb(member: zipfile.ZipInfo, limits: ZipLimits) -> str:
    return (f"holds a member {member.filename!r} that exceeds the compression ratio limit of {limits.max_ratio:g} "
            "(a zip bomb?); nothing was unpacked: ask for the notebooks themselves")


def _is_link(member: zipfile.ZipInfo) -> bool:
    return member.create_system == 3 and stat.S_ISLNK(member.external_attr >> 16)


def _inflate_notebooks(archive: zipfile.ZipFile, members, where: str, limits: ZipLimits, mtime: float):
    found: list[Notebook] = []
    refused: list[Rejected] = []
    total = 0
    for member in members:
        path = PurePosixPath(member.filename.replace("\\", "/"))
        if member.is_dir() or CHECKPOINTS in path.parts:
            continue
        if _is_link(member):
            refused.append(Rejected(f"{where}/{path}", f"{path.name} {LINK_ADVICE}"))
            continue
        if path.suffix != ".ipynb":
            continue  # never inflated: its size was checked above from the header
        data = bytearray()
        with archive.open(member) as stream:
            while chunk := stream.read(CHUNK):
                data += chunk
                total += len(chunk)
                if total > limits.max_bytes:
                    raise GraderError(f"unpacks to more than {limits.max_bytes >> 20} MB (its headers said "
                                      "less); nothing was kept: zip only the assignment's notebooks")
                if _too_compressed(len(data), member.compress_size, limits):
                    raise GraderError(_bomb(member, limits))
                if len(data) > MAX_NOTEBOOK_BYTES:
                    break
        if len(data) > MAX_NOTEBOOK_BYTES:
            refused.append(Rejected(f"{where}/{path}", f"{path.name} is larger than {MAX_NOTEBOOK_BYTES >> 20} MB; "
                                    "clear its outputs (Edit > Clear Outputs of All Cells), save, and upload again"))
            continue
        found.append(Notebook(f"{where}/{path}", path.name, bytes(data), None, mtime))
    return found, refused
