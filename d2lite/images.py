"""Image data sets: Fashion-MNIST (downloaded, checksum-verified) and the bundled MNIST digits.

d2l names with d2l semantics: ``load_data_fashion_mnist``, ``get_fashion_mnist_labels``,
``get_dataloader_workers``; plus ``load_data(name, ...)`` for "fashion_mnist" (see
``d2lite.downloads``) and "mnist5k" (4,000/1,000 real MNIST digits bundled with d2lite, for
offline use).

When the bundled digits stand in for Fashion-MNIST (``D2LITE_DATASET=mnist5k``),
``load_data_fashion_mnist`` makes each training epoch as long in steps as a Fashion-MNIST epoch
(60,000 examples: 15 reshuffled passes over the 4,000 digits) and prints so: d2l's chapters
choose epoch counts and learning rates for 60,000 images, and with 16 steps an epoch their
sigmoid LeNet would still sit at chance after 10 epochs.
"""
from __future__ import annotations

from pathlib import Path

import torch
import torch.nn.functional as F

from .data import TensorLoader
from .downloads import FASHION_MNIST, fetch, verify_sha256
from .idx import IDXFormatError, read_idx
from .unattended import DATASET, dataset_name

__all__ = ["load_data", "load_data_fashion_mnist", "get_fashion_mnist_labels", "get_dataloader_workers",
           "FASHION_MNIST_CLASSES", "DIGIT_CLASSES", "MNIST5K_DIR"]

FASHION_MNIST_CLASSES = ("t-shirt", "trouser", "pullover", "dress", "coat",
                         "sandal", "shirt", "sneaker", "bag", "ankle boot")
DIGIT_CLASSES = tuple(str(d) for d in range(10))

MNIST5K_DIR = Path(__file__).resolve().parent / "datasets" / "mnist5k"
# SHA-256 of the bundled files, as printed by scripts/build_mnist5k.py when it wrote them.
MNIST5K_SHA256 = {
    "train-images-idx3-ubyte.gz": "414811f135136db744ea7cc82b40dbfee7c473f5e4cc5b3b186fb0328c5ff187",
    "train-labels-idx1-ubyte.gz": "387339cb4d512c89c8fc667db02409099d2e11cb7be42663fcf0bbc05c1902ae",
    "t10k-images-idx3-ubyte.gz": "f8cbd79f2db37870d876942826b4ef9064643422dc5117ba4ab682bbc382d905",
    "t10k-labels-idx1-ubyte.gz": "b42ecc3004fe544b93f9e23b216103f6e8417d82f371ca2a47bbdcdb5ce44998",
}
DATASETS = ("fashion_mnist", "mnist5k")
CLASSES = {"fashion_mnist": FASHION_MNIST_CLASSES, "mnist5k": DIGIT_CLASSES}
FASHION_MNIST_TRAIN_SIZE = 60_000  # examples in a Fashion-MNIST training epoch


def get_fashion_mnist_labels(labels, *, dataset: str | None = None) -> list[str]:
    """Text labels of class indices (a tensor or sequence of ints) of the data set that
    ``load_data_fashion_mnist`` loads: clothing names for Fashion-MNIST, the digits "0"-"9"
    when the bundled digits stand in (``D2LITE_DATASET=mnist5k``).

    dataset: "fashion_mnist" or "mnist5k" to name the data set yourself (e.g. after
    ``load_data("mnist5k", ...)``); a loader's ``classes`` attribute holds the same names.
    """
    name = dataset if dataset is not None else dataset_name()
    if name not in CLASSES:
        raise ValueError(f"get_fashion_mnist_labels: unknown data set {name!r}; expected one of "
                         f"{', '.join(map(repr, DATASETS))}.")
    names = CLASSES[name]
    text = []
    for label in labels:
        index = int(label)
        if not 0 <= index < len(names):
            raise ValueError(f"get_fashion_mnist_labels: {index} is not a class index of {name} "
                             f"(0 to {len(names) - 1}); pass labels, not scores (use y_hat.argmax(dim=1)).")
        text.append(names[index])
    return text


def get_dataloader_workers() -> int:
    """Worker processes for a ``DataLoader`` (d2l's returns 4): 0, i.e. load in the main process.

    d2lite's own loaders index tensors in memory and need no workers; for a DataLoader over a
    small in-memory data set, worker processes cost more to start than they save.
    """
    return 0


def _target_size(resize) -> tuple[int, int] | None:
    """``resize`` (None, an int, or (height, width)) as a (height, width) pair or None."""
    if resize is None:
        return None
    size = (resize, resize) if isinstance(resize, int) else tuple(resize) if isinstance(resize, (tuple, list)) else ()
    if len(size) != 2 or not all(isinstance(s, int) and not isinstance(s, bool) and s > 0 for s in size):
        raise ValueError(f"resize must be a positive int or a pair (height, width) of them, got {resize!r}.")
    return size


def _image_transform(resize):
    """uint8 (B, H, W) -> float32 (B, 1, H', W') in [0, 1], resized bilinearly when asked."""
    size = _target_size(resize)

    def to_float(images: torch.Tensor) -> torch.Tensor:
        x = images.unsqueeze(1).to(torch.float32).div_(255)
        if size is not None and tuple(x.shape[-2:]) != size:
            x = F.interpolate(x, size=size, mode="bilinear", align_corners=False, antialias=True).clamp_(0, 1)
        return x

    return to_float


def _read_split(paths: dict, prefix: str):
    """(images (N, 28, 28) uint8, labels (N,) int64) of the 'train' or 't10k' files."""
    images = read_idx(paths[f"{prefix}-images-idx3-ubyte.gz"], expected_shape=(None, 28, 28))
    labels = read_idx(paths[f"{prefix}-labels-idx1-ubyte.gz"], expected_shape=(None,))
    if len(images) != len(labels):
        raise IDXFormatError(f"{prefix}: {len(images)} images but {len(labels)} labels; the files do not belong together.")
    return images, labels.to(torch.int64)


def _mnist5k_paths(root) -> dict:
    folder = Path(root) if root is not None else MNIST5K_DIR
    return {f: verify_sha256(folder / f, digest) for f, digest in MNIST5K_SHA256.items()}


def load_data(name: str, batch_size: int, resize=None, *, root=None, device=None,
              generator: torch.Generator | None = None, base_url: str | None = None,
              reason: str = "", progressbar: bool = True, epoch_size: int | None = None):
    """Load an image data set as ``(train_iter, test_iter)`` and print what was loaded.

    name: "fashion_mnist" (60,000/10,000 clothing images, downloaded once into the
    cache, see d2lite.downloads) or "mnist5k" (4,000/1,000 MNIST digits bundled with
    d2lite, 400/100 per class). Batches are X: float32 (B, 1, 28, 28) in [0, 1] (or
    (B, 1, h, w) with ``resize=h`` or ``resize=(h, w)``) and y: int64 (B,). The training
    iterator is reshuffled every epoch (with ``generator`` if given); the test iterator
    keeps the file order. root: folder holding the files (fashion_mnist: the cache
    folder, default ``$D2LITE_DATA`` or ``~/.cache/d2lite``; mnist5k: default the bundled
    copy). device: move the whole data set there once and make batches there.
    base_url: where to download Fashion-MNIST from (default ``$D2LITE_FASHION_MNIST_URL``
    or the official mirror). reason: appended to the printed line. epoch_size: training
    examples per epoch (default: each training example once); a larger value makes an epoch
    several reshuffled passes over the training set, and a second printed line says so.
    """
    transform = _image_transform(resize)
    if name == "fashion_mnist":
        paths = fetch(FASHION_MNIST, root=root, base_url=base_url, progressbar=progressbar)
        title, classes = "Fashion-MNIST (clothing images)", FASHION_MNIST_CLASSES
    elif name == "mnist5k":
        paths = _mnist5k_paths(root)
        title, classes = "mnist5k (MNIST handwritten digits bundled with d2lite)", DIGIT_CLASSES
    else:
        raise ValueError(f"unknown data set {name!r}; expected one of {', '.join(map(repr, DATASETS))}.")
    (train_x, train_y), (test_x, test_y) = _read_split(paths, "train"), _read_split(paths, "t10k")
    if device is not None:
        train_x, train_y, test_x, test_y = (t.to(device) for t in (train_x, train_y, test_x, test_y))
    train_iter = TensorLoader((train_x, train_y), batch_size, shuffle=True, transform=transform,
                              generator=generator, name=name, classes=classes, epoch_size=epoch_size)
    test_iter = TensorLoader((test_x, test_y), batch_size, shuffle=False, transform=transform,
                             name=name, classes=classes)
    shape = tuple(transform(test_x[:1]).shape[1:])
    folder = Path(next(iter(paths.values()))).parent
    print(f"Loaded {title}{reason}: {len(train_x):,} training and {len(test_x):,} test images of shape "
          f"{shape}, batch_size {batch_size}, on {train_x.device}, from {folder}")
    if train_iter.epoch_size != len(train_x):
        print(f"One training epoch is {train_iter.epoch_size:,} examples: {train_iter.epoch_size / len(train_x):.3g} "
              f"reshuffled passes over the {len(train_x):,} training images ({len(train_iter)} batches).")
    return train_iter, test_iter


def load_data_fashion_mnist(batch_size: int, resize=None, **options):
    """Fashion-MNIST as ``(train_iter, test_iter)`` (d2l's name), or the set named by ``D2LITE_DATASET``.

    With ``D2LITE_DATASET=mnist5k`` (CI, offline classrooms) the bundled MNIST digits are
    loaded instead, and the printed lines say so. A training epoch of the digits is then as
    long in steps as one of Fashion-MNIST: 60,000 examples, i.e. 15 reshuffled passes over the
    4,000 digits (``epoch_size=None`` in ``options`` gives single passes). ``options`` go to
    ``load_data``.
    """
    name = dataset_name()
    if name not in DATASETS:
        raise ValueError(f"{DATASET}={name!r} is not a data set d2lite knows; "
                         f"expected one of {', '.join(DATASETS)} (or unset it for fashion_mnist).")
    if name == "fashion_mnist":
        return load_data(name, batch_size, resize, **options)
    options.setdefault("epoch_size", FASHION_MNIST_TRAIN_SIZE)
    loaders = load_data(name, batch_size, resize, reason=f" instead of Fashion-MNIST ({DATASET}={name})", **options)
    if options["epoch_size"] == FASHION_MNIST_TRAIN_SIZE:
        print("(As many steps per epoch as Fashion-MNIST's 60,000 images, so that d2l's epoch counts and "
              "learning rates train as in the book; epoch_size=None for single passes.)")
    return loaders
