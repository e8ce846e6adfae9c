"""d2lite.read_idx: the IDX reader shared by Fashion-MNIST and mnist5k, against files written here."""
import gzip
import struct

import numpy as np
import pytest
import torch

from d2lite import IDXFormatError, read_idx


def idx_bytes(array: np.ndarray, type_code: int) -> bytes:
    """IDX serialisation written independently of d2lite: magic, big-endian sizes, big-endian values."""
    header = bytes([0, 0, type_code, array.ndim]) + struct.pack(f">{array.ndim}I", *array.shape)
    return header + array.astype(array.dtype.newbyteorder(">")).tobytes()


@pytest.mark.parametrize("dtype, code", [(np.uint8, 0x08), (np.int8, 0x09), (np.int16, 0x0B),
                                         (np.int32, 0x0C), (np.float32, 0x0D), (np.float64, 0x0E)])
@pytest.mark.parametrize("compress", [True, False])
def test_read_idx_round_trips_every_idx_type(tmp_path, dtype, code, compress):
    rng = np.random.default_rng(0)
    array = (rng.standard_normal((3, 5, 7)) * 100).astype(dtype)
    payload = idx_bytes(array, code)
    path = tmp_path / "a.idx"
    path.write_bytes(gzip.compress(payload) if compress else payload)
    tensor = read_idx(path)
    assert tensor.shape == (3, 5, 7)
    np.testing.assert_array_equal(tensor.numpy(), array)


def test_read_idx_checks_the_expected_shape(tmp_path):
    path = tmp_path / "labels.gz"
    path.write_bytes(gzip.compress(idx_bytes(np.arange(6, dtype=np.uint8).reshape(2, 3), 0x08)))
    assert read_idx(path, expected_shape=(None, 3)).shape == (2, 3)
    with pytest.raises(IDXFormatError, match=r"expected an array of shape \('any',\)"):
        read_idx(path, expected_shape=(None,))
    with pytest.raises(IDXFormatError, match=r"expected an array of shape \('any', 28, 28\), found \(2, 3\)"):
        read_idx(path, expected_shape=(None, 28, 28))


def test_read_idx_rejects_a_bad_magic_number(tmp_path):
    path = tmp_path / "x.gz"
    path.write_bytes(gzip.compress(b"\x01\x00\x08\x01" + struct.pack(">I", 1) + b"\x05"))
    with pytest.raises(IDXFormatError, match="not an IDX file"):
        read_idx(path)


def test_read_idx_rejects_an_unknown_type_code(tmp_path):
    path = tmp_path / "x.gz"
    path.write_bytes(gzip.compress(b"\x00\x00\x07\x01" + struct.pack(">I", 1) + b"\x05"))
    with pytest.raises(IDXFormatError, match="unknown IDX type code 0x07"):
        read_idx(path)


def test_read_idx_rejects_data_shorter_or_longer_than_the_header_says(tmp_path):
    payload = idx_bytes(np.zeros((4, 28, 28), dtype=np.uint8), 0x08)
    path = tmp_path / "x.gz"
    for broken in (payload[:-1], payload + b"\x00"):
        path.write_bytes(gzip.compress(broken))
        with pytest.raises(IDXFormatError, match=r"shape \(4, 28, 28\) \(3136 bytes of data\)"):
            read_idx(path)


def test_read_idx_rejects_a_cut_gzip_stream(tmp_path):
    compressed = gzip.compress(idx_bytes(np.arange(1000, dtype=np.uint8).reshape(10, 100) % 7, 0x08))
    path = tmp_path / "x.gz"
    path.write_bytes(compressed[: len(compressed) // 2])
    with pytest.raises(IDXFormatError, match="gzip stream is damaged or cut short"):
        read_idx(path)


def test_read_idx_returns_a_writable_tensor(tmp_path):
    path = tmp_path / "x"
    path.write_bytes(idx_bytes(np.arange(4, dtype=np.uint8), 0x08))
    t = read_idx(path)
    t += 1  # would warn or fail on a tensor sharing a read-only buffer
    assert t.dtype == torch.uint8 and t.tolist() == [1, 2, 3, 4]
