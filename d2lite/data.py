"""Data for the course: synthetic regression data and minibatch iterators over tensors.

d2l names with d2l semantics: ``synthetic_data``, ``data_iter``, ``load_array``; ``spirals``, a
small classification problem in the plane for comparing optimizers; the image data sets (Fashion-MNIST, the bundled digits) are in :mod:`d2lite.images`.

Loaders batch by tensor indexing instead of a DataLoader: the whole (small) data set is
one tensor, each minibatch is ``tensor[indices]``. With ``device=`` the data set is moved
to the device once and batches are shuffled and converted there.
"""
from __future__ import annotations

import math

import torch
from torch.utils.data import TensorDataset

__all__ = ["synthetic_data", "spirals", "data_iter", "TensorLoader", "load_array"]


def synthetic_data(w: torch.Tensor, b, num_examples: int, *, generator: torch.Generator | None = None):
    """Linear-regression data ``y = Xw + b + noise`` (d2l's ``synthetic_data``).

    w: (d,) weights; b: scalar bias. Returns X: (num_examples, d) drawn from N(0, 1) and
    y: (num_examples, 1), with noise drawn from N(0, 0.01**2). Floating w keeps its dtype.
    """
    dtype = w.dtype if w.is_floating_point() else torch.get_default_dtype()
    X = torch.normal(0.0, 1.0, (num_examples, len(w)), generator=generator, dtype=dtype)
    y = X @ w.to(dtype) + b
    y += torch.normal(0.0, 0.01, y.shape, generator=generator, dtype=dtype)
    return X, y.reshape((-1, 1))


def spirals(n_per_class: int = 100, classes: int = 3, *, noise: float = 0.2, seed: int = 0):
    """Points on ``classes`` interleaved spiral arms in the plane, a classification problem that
    no linear model solves.

    Arm c holds n_per_class points at radii evenly spaced from 0 to 1, turning 4 radians from the
    centre out, rotated by 2 pi c / classes; noise: standard deviation of the angle (radians).
    Returns X: (classes * n_per_class, 2) float32 and y: (classes * n_per_class,) int64, arm by
    arm; the same seed gives the same points (the global generator is not used).
    """
    if n_per_class < 1 or classes < 1:
        raise ValueError(f"spirals needs n_per_class >= 1 and classes >= 1; got {n_per_class} and {classes}")
    generator = torch.Generator().manual_seed(seed)
    radius = torch.linspace(0.0, 1.0, n_per_class).repeat(classes)
    y = torch.arange(classes).repeat_interleave(n_per_class)
    angle = y * (2 * math.pi / classes) + 4.0 * radius + noise * torch.randn(len(y), generator=generator)
    return torch.stack([radius * torch.sin(angle), radius * torch.cos(angle)], dim=1), y


def _check_batching(batch_size, tensors) -> int:
    """Number of examples shared by ``tensors``; clear errors for bad batch sizes or lengths."""
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}.")
    lengths = [len(t) for t in tensors]
    if len(set(lengths)) > 1:
        raise ValueError(
            f"all tensors must have the same number of examples (first dimension), got lengths {lengths}; "
            "pass features and labels of the same data set."
        )
    return lengths[0]


def _permutation(n: int, device, generator: torch.Generator | None) -> torch.Tensor:
    """A random permutation of range(n) on ``device``, drawn with ``generator`` if given."""
    where = generator.device if generator is not None else device
    return torch.randperm(n, generator=generator, device=where).to(device)


def data_iter(batch_size: int, features: torch.Tensor, labels: torch.Tensor, *,
              generator: torch.Generator | None = None):
    """Shuffled minibatches ``(features[i], labels[i])`` of one epoch (d2l's ``data_iter``).

    features: (n, ...), labels: (n, ...). Yields ``(X, y)`` with ``batch_size`` examples each
    (the last batch smaller when batch_size does not divide n); every example appears
    exactly once. Rows are gathered with ``index_select``, the fastest form of
    ``features[indices]``. ``generator`` makes the order reproducible. Errors are raised at the call,
    not at the first ``next()``.
    """
    n = _check_batching(batch_size, (features, labels))
    indices = _permutation(n, features.device, generator)

    def batches():
        for start in range(0, n, batch_size):
            batch = indices[start:start + batch_size]
            yield features.index_select(0, batch), labels.index_select(0, batch)

    return batches()


class TensorLoader:
    """Minibatches of tensors held in memory; each ``iter()`` is one epoch.

    tensors: tensors with the same first dimension n (on any device; batches are made
    there). shuffle: new random order every epoch (drawn with ``generator``), else the
    stored order. transform: optional function applied to the first tensor of each batch
    (e.g. uint8 images -> float). epoch_size: examples per epoch (default n, each example
    once); a larger value makes an epoch several passes, each reshuffled (in stored order when
    not shuffling), so every example appears about epoch_size / n times.
    ``len(loader)`` is the number of batches per epoch.
    Attributes like a DataLoader's: ``batch_size`` and ``dataset``, a TensorDataset view (no
    copy) of the tensors AS STORED: for image sets from ``load_data`` that is uint8
    (N, 28, 28) images, so code that batches ``dataset`` itself (e.g. with a
    DistributedSampler) applies ``transform`` to each batch. Also ``name``, ``classes``
    (class names by label) and ``device``.
    """

    def __init__(self, tensors, batch_size: int, shuffle: bool = False, *, transform=None,
                 generator: torch.Generator | None = None, name: str | None = None, classes=None,
                 epoch_size: int | None = None):
        self.tensors = tuple(tensors)
        self.num_examples = _check_batching(batch_size, self.tensors)
        if epoch_size is not None and (isinstance(epoch_size, bool) or not isinstance(epoch_size, int)
                                       or epoch_size <= 0):
            raise ValueError(f"epoch_size must be a positive number of examples (or None for one pass "
                             f"over the {self.num_examples}), got {epoch_size!r}.")
        self.epoch_size = self.num_examples if epoch_size is None else epoch_size
        self.batch_size, self.shuffle = batch_size, shuffle
        self.transform, self.generator = transform, generator
        self.name, self.classes = name, classes
        self.dataset = TensorDataset(*self.tensors)

    @property
    def device(self) -> torch.device:
        return self.tensors[0].device

    def __len__(self) -> int:
        return math.ceil(self.epoch_size / self.batch_size)

    def _epoch_order(self) -> torch.Tensor | None:
        """The row indices of one epoch (epoch_size of them), or None for one pass in stored order."""
        n, wanted = self.num_examples, self.epoch_size
        if not self.shuffle and wanted == n:
            return None
        passes = math.ceil(wanted / n)
        if self.shuffle:
            orders = [_permutation(n, self.device, self.generator) for _ in range(passes)]
        else:
            orders = [torch.arange(n, device=self.device)] * passes
        return torch.cat(orders)[:wanted]

    def __iter__(self):
        size = self.batch_size
        order = self._epoch_order()
        for start in range(0, self.epoch_size, size):
            if order is None:
                batch = [t[start:start + size] for t in self.tensors]
            else:
                rows = order[start:start + size]
                batch = [t.index_select(0, rows) for t in self.tensors]
            if self.transform is not None:
                batch[0] = self.transform(batch[0])
            yield tuple(batch)

    def __repr__(self) -> str:
        what = f"{self.name}, " if self.name else ""
        epoch = f", epoch_size={self.epoch_size}" if self.epoch_size != self.num_examples else ""
        return (f"TensorLoader({what}{self.num_examples} examples{epoch}, batch_size={self.batch_size}, "
                f"shuffle={self.shuffle}, device={self.device})")


def load_array(data_arrays, batch_size: int, is_train: bool = True) -> TensorLoader:
    """Minibatches of ``data_arrays`` (a tuple of tensors), shuffled when ``is_train``.

    d2l returns ``DataLoader(TensorDataset(*data_arrays), batch_size, shuffle=is_train)``;
    this yields the same batches by tensor indexing, much faster, and can be iterated
    again for every epoch.
    """
    return TensorLoader(data_arrays, batch_size, shuffle=is_train)
