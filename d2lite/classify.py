"""Classifiers trained from scratch, as in d2l's softmax-regression and MLP chapters:
``train_epoch_ch3``, ``train_ch3`` and ``predict_ch3``, with ``evaluate_accuracy`` and
``evaluate_loss``.

The model may be an ``nn.Module`` or any function of a batch. The updater is a torch optimizer
or a function ``updater(batch_size)`` that updates the parameters by hand, e.g.
``lambda batch_size: d2lite.sgd([W, b], lr, batch_size)``. Losses give one value per example
(``reduction='none'``), as in d2l; a loss that already averages (a 0-d tensor) works too.
Like ``train_ch6``, ``train_ch3`` returns its :class:`History` instead of asserting d2l's
Fashion-MNIST figures.
"""
from __future__ import annotations

import torch
from torch import nn

from .animator import Animator
from .images import get_fashion_mnist_labels
from .plotting import show_images
from .timer import Timer
from .train import History, _num_correct, evaluate_accuracy_gpu

__all__ = ["evaluate_accuracy", "evaluate_loss", "train_epoch_ch3", "train_ch3", "predict_ch3"]


def evaluate_accuracy(net, data_iter) -> float:
    """Fraction of the examples of ``data_iter`` that ``net`` classifies correctly (d2l's
    ``evaluate_accuracy``). A module is evaluated in eval mode where its parameters live, and
    its mode restored; a plain function sees the batches as they are. Same as
    :func:`evaluate_accuracy_gpu` without a device."""
    return evaluate_accuracy_gpu(net, data_iter)


def evaluate_loss(net, data_iter, loss) -> float:
    """Mean per-example ``loss`` of ``net`` over ``data_iter`` (d2l's ``evaluate_loss``).

    Labels are reshaped to the output's shape when they hold as many values (regression:
    y (n,) against outputs (n, 1)). A module is evaluated in eval mode, its mode restored.
    """
    was_training = net.training if isinstance(net, nn.Module) else None
    if was_training:
        net.eval()
    total, count = torch.zeros(()), 0
    try:
        with torch.no_grad():
            for X, y in data_iter:
                out = net(X)
                if y.numel() == out.numel():
                    y = y.reshape(out.shape)
                values = loss(out, y)
                total = total + values.sum().cpu()
                count += values.numel()
    finally:
        if was_training:
            net.train()
    if count == 0:
        raise ValueError("evaluate_loss: data_iter yielded no examples")
    return float(total) / count


def _step(updater, losses: torch.Tensor, batch_size: int) -> None:
    """One update: a torch optimizer minimises the mean loss; a function ``updater(batch_size)``
    gets the gradient of the summed loss, as d2l's ``sgd`` expects."""
    if isinstance(updater, torch.optim.Optimizer):
        updater.zero_grad()
        losses.mean().backward()
        updater.step()
    elif callable(updater):
        losses.sum().backward()
        updater(batch_size)
    else:
        raise TypeError(f"updater must be a torch optimizer or a function of the batch size, got "
                        f"{type(updater).__name__}; e.g. lambda n: d2lite.sgd([W, b], lr, n)")


def train_epoch_ch3(net, train_iter, loss, updater) -> tuple[float, float]:
    """Train ``net`` for one pass over ``train_iter`` (d2l's ``train_epoch_ch3``).

    train_iter: (X, y) batches, y (n,) int64 labels; net(X): (n, classes) scores.
    loss(y_hat, y): (n,) per-example losses (or their mean, 0-d). updater: see the module doc.
    Returns (mean training loss, training accuracy) over the examples seen.
    """
    train_loss, train_acc, _ = _train_epoch(net, train_iter, loss, updater)
    return train_loss, train_acc


def _train_epoch(net, train_iter, loss, updater) -> tuple[float, float, int]:
    """train_epoch_ch3's loop; also returns the number of examples seen."""
    if isinstance(net, nn.Module):
        net.train()
    loss_sum, correct, n = torch.zeros(()), torch.zeros((), dtype=torch.int64), 0
    for X, y in train_iter:
        y_hat = net(X)
        losses = loss(y_hat, y)
        _step(updater, losses, X.shape[0])
        with torch.no_grad():
            batch_loss = losses.detach().sum() if losses.ndim else losses.detach() * y.numel()
            loss_sum = loss_sum + batch_loss.cpu()
            correct = correct + _num_correct(y_hat, y).cpu()
        n += y.numel()
    if n == 0:
        raise ValueError("train_epoch_ch3: train_iter yielded no batches")
    return float(loss_sum) / n, int(correct) / n, n


def train_ch3(net, train_iter, test_iter, loss, num_epochs: int, updater, *,
              animate: bool = True) -> History:
    """Train for ``num_epochs`` passes, evaluating on ``test_iter`` after each (d2l's ``train_ch3``).

    Plots train loss, train and test accuracy with an :class:`Animator` (ylim 0.3-0.9 as in d2l;
    silent where nobody watches; ``animate=False`` for none). Returns a :class:`History` with one
    entry per epoch; d2l's version returns nothing and asserts its Fashion-MNIST results instead.
    """
    if num_epochs < 1:
        raise ValueError(f"train_ch3: num_epochs must be at least 1, got {num_epochs}")
    animator = (Animator(xlabel="epoch", xlim=[1, num_epochs], ylim=[0.3, 0.9],
                         legend=["train loss", "train acc", "test acc"]) if animate else None)
    history, timer = History(), Timer()
    try:
        for epoch in range(num_epochs):
            timer.start()
            train_loss, train_acc, examples = _train_epoch(net, train_iter, loss, updater)
            history.seconds.append(timer.stop())
            history.test_acc.append(evaluate_accuracy(net, test_iter))
            history.train_loss.append(train_loss)
            history.train_acc.append(train_acc)
            history.examples.append(examples)
            if animator is not None:
                animator.add(epoch + 1, (train_loss, train_acc, history.test_acc[-1]))
    finally:
        if animator is not None:
            animator.close()
    return history


def predict_ch3(net, test_iter, n: int = 6) -> tuple[list[str], list[str]]:
    """Show the first ``n`` images of ``test_iter`` titled with their true and predicted labels
    (d2l's ``predict_ch3``), and return ``(true_labels, predicted_labels)`` as text.

    Label names come from the loader's ``classes`` when it has them (d2lite's loaders do), else
    from :func:`get_fashion_mnist_labels`.
    """
    if n < 1:
        raise ValueError(f"predict_ch3: n is the number of images to show, at least 1; got {n}")
    X, y = next(iter(test_iter))
    X, y = X[:n], y[:n]
    if isinstance(net, nn.Module):
        param = next(net.parameters(), None)
        if param is not None:
            X = X.to(param.device)
    with torch.no_grad():
        predicted = net(X).argmax(dim=1).cpu()
    classes = getattr(test_iter, "classes", None)
    names = (lambda labels: [classes[int(i)] for i in labels]) if classes else get_fashion_mnist_labels
    trues, preds = names(y), names(predicted)
    show_images(X.cpu(), 1, len(trues), titles=[f"{t}\n{p}" for t, p in zip(trues, preds)])
    return trues, preds
