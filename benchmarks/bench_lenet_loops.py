"""LeNet training: d2lite's loop against a d2l-style loop, same data, model and device.

The d2l-style loop is written here the way the d2l book's ``train_ch6`` works: a
``DataLoader(TensorDataset)`` with 4 worker processes, a host sync per batch (``float()`` of
the loss and of the accuracy), and an animator that clears and redraws its figure at every
point it is given (five per epoch plus the test accuracy; we render the PNG each time, as the
inline backend does in a notebook). d2lite's ``train_ch6`` reads the device once per epoch,
batches by tensor indexing (on a GPU: the whole data set resident on the device) and redraws
live plots throttled to a bounded share of the time; it is measured with live plotting
switched on, so both loops pay for their plots.

Figures: seconds per epoch (median over REPEATS runs of EPOCHS epochs, the two loops
alternating) and their ratio.
"""
from __future__ import annotations

import contextlib
import io
import os
import statistics
import time
import warnings

import torch
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import d2lite
import d2lite.animator

EPOCHS = int(os.environ.get("BENCH_EPOCHS", "2"))
REPEATS = int(os.environ.get("BENCH_REPEATS", "3"))
BATCH_SIZE, LR = 256, 0.9


class RedrawEveryPointAnimator:
    """The d2l book's animator behaviour: every point clears the axes and draws everything again."""

    def __init__(self, legend):
        self.fig = Figure(figsize=(3.5, 2.5))
        FigureCanvasAgg(self.fig)
        self.ax = self.fig.add_subplot()
        self.legend, self.X, self.Y = legend, [[] for _ in legend], [[] for _ in legend]

    def add(self, x, ys):
        for i, y in enumerate(ys):
            if y is not None:
                self.X[i].append(x)
                self.Y[i].append(y)
        self.ax.cla()
        for xs, values, fmt in zip(self.X, self.Y, ("-", "m--", "g-.")):
            self.ax.plot(xs, values, fmt)
        self.ax.legend(self.legend)
        self.fig.savefig(io.BytesIO(), format="png")


def xavier(module):
    if isinstance(module, (nn.Linear, nn.Conv2d)):
        nn.init.xavier_uniform_(module.weight)


def d2l_style_train(net, data, device, num_epochs):
    (train_X, train_y), (test_X, test_y) = data
    train = DataLoader(TensorDataset(train_X, train_y), BATCH_SIZE, shuffle=True, num_workers=4)
    test = DataLoader(TensorDataset(test_X, test_y), BATCH_SIZE, num_workers=4)
    net.apply(xavier)
    net.to(device)
    optimizer = torch.optim.SGD(net.parameters(), lr=LR)
    loss = nn.CrossEntropyLoss()
    animator = RedrawEveryPointAnimator(["train loss", "train acc", "test acc"])
    num_batches = len(train)
    for epoch in range(num_epochs):
        net.train()
        total_loss = total_correct = total = 0.0
        for i, (X, y) in enumerate(train):
            X, y = X.to(device), y.to(device)
            optimizer.zero_grad()
            y_hat = net(X)
            l = loss(y_hat, y)
            l.backward()
            optimizer.step()
            with torch.no_grad():
                total_loss += float(l) * X.shape[0]                       # host sync
                total_correct += float((y_hat.argmax(1) == y).sum())      # host sync
                total += X.shape[0]
            if (i + 1) % (num_batches // 5) == 0 or i == num_batches - 1:
                animator.add(epoch + (i + 1) / num_batches, (total_loss / total, total_correct / total, None))
        net.eval()
        correct = count = 0.0
        with torch.no_grad():
            for X, y in test:
                X, y = X.to(device), y.to(device)
                correct += float((net(X).argmax(1) == y).sum())
                count += y.numel()
        animator.add(epoch + 1, (None, None, correct / count))
    return correct / count


def d2lite_train(net, data, device, num_epochs):
    (train_X, train_y), (test_X, test_y) = data
    where = device if device.type == "cuda" else None   # device-resident data path on a GPU
    train = d2lite.load_array((train_X.to(device), train_y.to(device)) if where else (train_X, train_y), BATCH_SIZE)
    test = d2lite.load_array((test_X.to(device), test_y.to(device)) if where else (test_X, test_y), BATCH_SIZE, is_train=False)
    history = d2lite.train_ch6(net, train, test, num_epochs, LR, device, animate=True, progress=False, verbose=False)
    return history.test_acc[-1]


def mnist5k_tensors():
    """The bundled set as float tensors: ((4000, 1, 28, 28), (4000,)), ((1000, 1, 28, 28), (1000,))."""
    with contextlib.redirect_stdout(io.StringIO()):
        train_iter, test_iter = d2lite.load_data("mnist5k", 1000)

    def whole(loader):
        parts = list(zip(*(batch for batch in loader)))
        return torch.cat(parts[0]), torch.cat(parts[1])

    test = whole(test_iter)
    train_iter.shuffle = False
    return whole(train_iter), test


def seconds_per_epoch(train, data, device) -> tuple[float, float]:
    torch.manual_seed(0)
    net = d2lite.lenet()
    with contextlib.redirect_stdout(io.StringIO()):   # live plots go to a display that is not there
        start = time.perf_counter()
        accuracy = train(net, data, device, EPOCHS)
        if device.type == "cuda":
            torch.cuda.synchronize()
    return (time.perf_counter() - start) / EPOCHS, accuracy


def main() -> str:
    # d2l uses 4 loader workers whatever the machine; keep that, without the warning about it.
    warnings.filterwarnings("ignore", message="This DataLoader will create")
    d2lite.animator.live_display_available = lambda: True   # draw as in a notebook
    device = d2lite.try_gpu()
    data = mnist5k_tensors()
    times = {"d2l-style loop": [], "d2lite.train_ch6": []}
    accuracy = {}
    for _ in range(REPEATS):
        for name, train in (("d2l-style loop", d2l_style_train), ("d2lite.train_ch6", d2lite_train)):
            seconds, accuracy[name] = seconds_per_epoch(train, data, device)
            times[name].append(seconds)
    slow, fast = statistics.median(times["d2l-style loop"]), statistics.median(times["d2lite.train_ch6"])
    return "\n".join([
        f"## LeNet training loop on {device} (MNIST-5k, batch {BATCH_SIZE}, {EPOCHS} epochs x {REPEATS} runs)",
        f"<!-- headline: LeNet epoch, d2lite.train_ch6 vs d2l-style loop ({device.type}) | "
        f"{slow / fast:.2f}x faster | >= 5x on a GPU -->",
        "",
        "| loop | median s/epoch | test accuracy (last run) |",
        "| --- | ---: | ---: |",
        *(f"| {name} | {statistics.median(times[name]):.2f} | {accuracy[name]:.3f} |" for name in times),
        "",
        f"d2lite's loop is **{slow / fast:.2f}x** as fast as the d2l-style loop on {device} "
        "(goal on a GPU: >= 5x; on a CPU the convolutions dominate, so the loop's own overhead "
        "- worker start-up, per-batch syncs, redraws - is a smaller share).",
    ])


if __name__ == "__main__":
    print(main())
