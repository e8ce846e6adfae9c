"""The IDX file format of MNIST and Fashion-MNIST, read into tensors.

An IDX file is a 4-byte magic number ``0x00 0x00 <type code> <ndim>``, then ``ndim``
big-endian uint32 sizes, then the values in row-major order (big-endian for types wider
than a byte). MNIST-style data sets ship them gzip-compressed (``*-idx3-ubyte.gz``).
"""
from __future__ import annotations

import gzip
import math
import zlib
from pathlib import Path

import numpy as np
import torch

__all__ = ["IDXFormatError", "read_idx"]

# Type code (third magic byte) -> big-endian numpy dtype.
IDX_DTYPES = {
    0x08: np.dtype(">u1"),
    0x09: np.dtype(">i1"),
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}


class IDXFormatError(ValueError):
    """A file is not a valid IDX file, or not the one that was expected."""


def _raw_bytes(path: Path) -> bytes:
    data = path.read_bytes()
    if data[:2] != b"\x1f\x8b":  # not gzip: an uncompressed IDX file
        return data
    try:
        return gzip.decompress(data)
    except (EOFError, OSError, zlib.error) as err:
        raise IDXFormatError(
            f"{path}: the gzip stream is damaged or cut short ({err}). "
            "Delete the file and download it again."
        ) from None


def read_idx(path, expected_shape: tuple[int | None, ...] | None = None) -> torch.Tensor:
    """Read an IDX file (optionally gzip-compressed) into a tensor.

    path: the file. expected_shape: optional sizes to check, ``None`` for "any", e.g.
    ``(None, 28, 28)`` for images. Returns a CPU tensor of the file's shape, e.g.
    (N, 28, 28) uint8 for image files and (N,) uint8 for label files.
    Raises IDXFormatError (saying what was expected and what was found) on a bad magic
    number, an unknown type code, a size that does not match the data, or a shape
    that differs from ``expected_shape``.
    """
    path = Path(path)
    raw = _raw_bytes(path)
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0:
        raise IDXFormatError(
            f"{path}: not an IDX file (expected the magic number to start with two zero bytes, "
            f"found {raw[:4].hex() or 'an empty file'})."
        )
    type_code, ndim = raw[2], raw[3]
    if type_code not in IDX_DTYPES:
        known = ", ".join(f"0x{code:02X}" for code in IDX_DTYPES)
        raise IDXFormatError(f"{path}: unknown IDX type code 0x{type_code:02X} (expected one of {known}).")
    header_size = 4 + 4 * ndim
    if len(raw) < header_size:
        raise IDXFormatError(f"{path}: the header announces {ndim} sizes but the file ends after {len(raw)} bytes.")
    shape = tuple(int(s) for s in np.frombuffer(raw, dtype=">u4", count=ndim, offset=4))
    dtype = IDX_DTYPES[type_code]
    expected_bytes = math.prod(shape) * dtype.itemsize
    found_bytes = len(raw) - header_size
    if found_bytes != expected_bytes:
        raise IDXFormatError(
            f"{path}: the header says shape {shape} ({expected_bytes} bytes of data) but the file "
            f"holds {found_bytes} bytes after the header; it is truncated or corrupt."
        )
    if expected_shape is not None and (
        len(expected_shape) != len(shape)
        or any(want is not None and want != got for want, got in zip(expected_shape, shape))
    ):
        want = tuple("any" if s is None else s for s in expected_shape)
        raise IDXFormatError(f"{path}: expected an array of shape {want}, found {shape}.")
    values = np.frombuffer(raw, dtype=dtype, offset=header_size).reshape(shape)
    return torch.from_numpy(values.astype(dtype.newbyteorder("="), copy=True))
