"""Seals: an HMAC with the course's own secret key over what the grader writes and reads back.

The key (:attr:`grader.authoring.coursedir.CourseDir.key`, 32 random bytes, mode 0600) never leaves the instructor's
machine: kernels, workers and students never see the course directory. A file the grader reads
back - the reference values, above all - counts only when its seal matches; anything that changed
it afterwards (by hand, by a tool, through a bug) makes it count as missing, so it is computed
again instead of being used.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from pathlib import Path

__all__ = ["course_key", "seal", "verify"]


def course_key(path: Path) -> bytes:
    """The key in ``path``, made on first use; a key file that is a link or not ours is refused."""
    path = Path(path)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        pass
    else:
        with os.fdopen(fd, "wb") as out:
            out.write(secrets.token_bytes(32))
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as key_file:
        if os.fstat(key_file.fileno()).st_uid != os.geteuid():
            raise PermissionError(f"{path} belongs to another user; delete it (a new key is made)")
        key = key_file.read()
    if len(key) != 32:
        raise ValueError(f"{path} is damaged; delete it (a new key is made, and the reference values "
                         "are computed again)")
    return key


def _canonical(data: dict) -> bytes:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def seal(key: bytes, data: dict) -> str:
    """The HMAC-SHA256 of ``data`` (JSON types) under ``key``, hex."""
    return hmac.new(key, _canonical(data), hashlib.sha256).hexdigest()


def verify(key: bytes, data: dict, mac: object) -> bool:
    return isinstance(mac, str) and hmac.compare_digest(seal(key, data), mac)
