"""Training and evaluating classifiers: d2l's ``accuracy``, ``evaluate_accuracy_gpu`` and
``train_ch6`` (LeNet chapter), which here also RETURNS its history.

The loops never wait for the GPU per batch: losses and correct counts are summed in tensors on
the device and read once per epoch (plus the few points a live ``Animator`` plots), and batches
are copied with ``non_blocking=True``. A blocking copy from the CPU to a CUDA GPU waits until the
GPU has finished all queued work and the copy; a non-blocking one from pinned memory (e.g. a
``DataLoader(..., pin_memory=True)``) is queued like a kernel and the CPU goes on. From ordinary
(pageable) memory the CUDA driver first stages the data through a pinned buffer on the CPU and may
wait for the GPU, so nothing overlaps, and ``non_blocking=True`` does no harm. On the CPU,
``.to("cpu", non_blocking=True)`` returns the tensor itself.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

import torch
from torch import nn

from .device import try_gpu
from .animator import Animator
from .timer import Timer
from .unattended import under_grader

__all__ = ["accuracy", "evaluate_accuracy_gpu", "train_ch6", "History"]


def _num_correct(y_hat: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Number of correct predictions as a 0-d tensor on the device (no host sync)."""
    if y_hat.ndim > 1 and y_hat.shape[1] > 1:
        y_hat = y_hat.argmax(dim=1)
    return (y_hat.type(y.dtype) == y).sum()


def accuracy(y_hat: torch.Tensor, y: torch.Tensor) -> float:
    """The NUMBER of correct predictions, as a float (d2l's definition; divide by ``len(y)``
    for the fraction). y_hat: (n, classes) scores or (n,) predicted labels; y: (n,) labels."""
    return float(_num_correct(y_hat, y))


def _to(X, device):
    """A batch (a tensor, or a list/tuple of them) on ``device``; see the module docstring on
    ``non_blocking``. Pinning is the loader's job: pinning here would be one more copy per batch."""
    if device is None:
        return X
    if isinstance(X, (list, tuple)):
        return [x.to(device, non_blocking=True) for x in X]
    return X.to(device, non_blocking=True)


def evaluate_accuracy_gpu(net, data_iter, device=None) -> float:
    """Fraction of correctly classified examples of ``data_iter``, computed on ``device``.

    net: an ``nn.Module`` (evaluated in eval mode, its previous mode restored afterwards) or
        any function of a batch. device: where to compute; default: where the module's
        parameters live (for a plain function: wherever the batches already are).
    """
    was_training = None
    if isinstance(net, nn.Module):
        was_training = net.training
        net.eval()
        if device is None:
            param = next(net.parameters(), None)
            device = param.device if param is not None else None
    correct, total = 0, 0
    try:
        with torch.no_grad():
            for X, y in data_iter:
                y = _to(y, device)
                correct = correct + _num_correct(net(_to(X, device)), y)
                total += y.numel()
    finally:
        if was_training:
            net.train()
    if total == 0:
        raise ValueError("evaluate_accuracy_gpu: data_iter yielded no examples")
    return float(correct) / total


@dataclass
class History:
    """What ``train_ch6`` measured, one entry per epoch. ``seconds`` times the training loop
    (fetching batches included, evaluation not; CUDA synchronised), ``examples`` counts the
    training examples seen."""

    train_loss: list[float] = field(default_factory=list)
    train_acc: list[float] = field(default_factory=list)
    test_acc: list[float] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    examples: list[int] = field(default_factory=list)

    @property
    def examples_per_sec(self) -> float:
        return sum(self.examples) / sum(self.seconds)

    def as_dict(self) -> dict:
        return asdict(self)

    def __repr__(self) -> str:
        if not self.seconds:
            return "History(0 epochs)"
        epochs = f"{len(self.seconds)} epoch" + ("s" if len(self.seconds) != 1 else "")
        return (f"History({epochs}; last: train_loss {self.train_loss[-1]:.3f}, "
                f"train_acc {self.train_acc[-1]:.3f}, test_acc {self.test_acc[-1]:.3f}; "
                f"{sum(self.seconds):.1f} s)")


def _xavier(module: nn.Module) -> None:
    if type(module) in (nn.Linear, nn.Conv2d):
        nn.init.xavier_uniform_(module.weight)


def train_ch6(net: nn.Module, train_iter, test_iter, num_epochs: int, lr: float, device=None, *,
              animate: bool = True, progress: bool | None = None, init: bool = True,
              verbose: bool = True) -> History:
    """Train a classifier with minibatch SGD on the cross-entropy loss, as in d2l's LeNet chapter.

    net: a module mapping a batch X to (n, classes) scores; its Linear/Conv2d weights are
        re-initialised with Xavier-uniform (``init=False`` keeps them).
    train_iter, test_iter: iterables of (X, y) batches, y (n,) int64 labels. Batches are copied
        to ``device`` with ``non_blocking=True``; for a CUDA device, a ``DataLoader`` built with
        ``pin_memory=True`` makes those copies overlap with computing (``load_data(...,
        device=...)`` avoids the copies altogether).
    device: where to train (default ``try_gpu()``).
    animate: plot loss and accuracies with an :class:`Animator` (silent where no one watches).
    progress: tqdm progress bar; default on, except while nbgrader or the course grader runs.
    verbose: print d2l's "training on ..." line and the final summary.
    Returns a :class:`History` with one entry per epoch.
    """
    from tqdm.auto import tqdm

    if num_epochs < 1:
        raise ValueError(f"train_ch6: num_epochs must be at least 1, got {num_epochs}")
    device = torch.device(device) if device is not None else try_gpu()
    if init:
        net.apply(_xavier)
    if verbose:
        print("training on", device)
    net.to(device)
    optimizer = torch.optim.SGD(net.parameters(), lr=lr)
    loss = nn.CrossEntropyLoss()
    num_batches = len(train_iter) if hasattr(train_iter, "__len__") else None
    every = max(1, num_batches // 5) if num_batches else None
    animator = (Animator(xlabel="epoch", xlim=[1, num_epochs] if num_epochs > 1 else [0, 1],
                         legend=["train loss", "train acc", "test acc"]) if animate else None)
    show_progress = not under_grader() if progress is None else progress
    bar = tqdm(total=num_batches and num_batches * num_epochs, unit="batch", disable=not show_progress)
    timer, history = Timer(sync_cuda=True), History()
    try:
        for epoch in range(num_epochs):
            net.train()
            loss_sum = torch.zeros((), device=device)
            correct = torch.zeros((), device=device, dtype=torch.int64)
            n = 0
            timer.start()
            for i, (X, y) in enumerate(train_iter):
                X, y = _to(X, device), _to(y, device)
                optimizer.zero_grad()
                y_hat = net(X)
                l = loss(y_hat, y)
                l.backward()
                optimizer.step()
                with torch.no_grad():
                    loss_sum += l.detach() * y.shape[0]
                    correct += _num_correct(y_hat, y)
                n += y.shape[0]
                bar.update(1)
                if animator is not None and every and ((i + 1) % every == 0 or i + 1 == num_batches):
                    animator.add(epoch + (i + 1) / num_batches,
                                 (loss_sum.item() / n, correct.item() / n, None))
            history.seconds.append(timer.stop())
            if n == 0:
                raise ValueError("train_ch6: train_iter yielded no batches")
            history.examples.append(n)
            history.train_loss.append(loss_sum.item() / n)
            history.train_acc.append(correct.item() / n)
            history.test_acc.append(evaluate_accuracy_gpu(net, test_iter, device))
            bar.set_postfix(loss=f"{history.train_loss[-1]:.3f}", test_acc=f"{history.test_acc[-1]:.3f}")
            if animator is not None:
                if not every:  # no len(): one point per epoch
                    animator.add(epoch + 1, (history.train_loss[-1], history.train_acc[-1], None))
                animator.add(epoch + 1, (None, None, history.test_acc[-1]))
    finally:
        bar.close()
        if animator is not None:
            animator.close()
    if verbose:
        print(f"loss {history.train_loss[-1]:.3f}, train acc {history.train_acc[-1]:.3f}, "
              f"test acc {history.test_acc[-1]:.3f}")
        print(f"{history.examples_per_sec:.1f} examples/sec on {device}")
    return history
