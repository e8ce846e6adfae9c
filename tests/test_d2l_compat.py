"""Code written in the style of the d2l book runs unchanged with `import d2lite as d2l`.

The snippet is run in a fresh interpreter (as a student's script would be), on the bundled
data (D2LITE_DATASET=mnist5k), with no display: it must run, print d2l's lines, and its own
asserts check the results.
"""
import os
import subprocess
import sys
import textwrap

import pytest
import torch

SNIPPET = textwrap.dedent(
    """
    import torch
    from torch import nn
    import d2lite as d2l

    # --- Linear regression from scratch ---------------------------------------------------
    true_w = torch.tensor([2, -3.4])
    true_b = 4.2
    torch.manual_seed(0)
    features, labels = d2l.synthetic_data(true_w, true_b, 1000)
    w = torch.normal(0, 0.01, size=(2, 1), requires_grad=True)
    b = torch.zeros(1, requires_grad=True)
    lr, num_epochs, batch_size = 0.03, 3, 10
    net, loss = d2l.linreg, d2l.squared_loss
    timer = d2l.Timer()
    for epoch in range(num_epochs):
        for X, y in d2l.data_iter(batch_size, features, labels):
            l = loss(net(X, w, b), y)
            l.sum().backward()
            d2l.sgd([w, b], lr, batch_size)
        with torch.no_grad():
            train_l = loss(net(features, w, b), labels)
            print(f'epoch {epoch + 1}, loss {float(train_l.mean()):f}')
    print(f'{timer.stop():.2f} sec')
    print(f'error in estimating w: {true_w - w.reshape(true_w.shape)}')
    print(f'error in estimating b: {true_b - b}')
    assert (true_w - w.reshape(true_w.shape)).abs().max() < 0.05 and abs(true_b - b.item()) < 0.05

    # --- Timer, Accumulator, Animator the way the book uses them -----------------------------
    metric = d2l.Accumulator(2)
    metric.add(3, 4)
    metric.add(1.0, torch.tensor(2))
    assert metric[0] / metric[1] == 4 / 6
    animator = d2l.Animator(xlabel='epoch', xlim=[1, 3], ylim=[0.3, 0.9],
                            legend=['train loss', 'train acc', 'test acc'])
    for epoch in range(3):
        train_metrics = (0.8 - 0.1 * epoch, 0.5 + 0.1 * epoch)
        animator.add(epoch + 1, train_metrics + (0.6 + 0.05 * epoch,))
    assert animator.X[2] == [1, 2, 3] and len(animator.Y) == 3
    animator.fig.savefig('curves.png')
    print('cumulative times', timer.cumsum())

    # --- Devices --------------------------------------------------------------------------
    print(d2l.num_gpus(), d2l.try_gpu(), d2l.try_gpu(10), d2l.try_all_gpus())
    x = torch.ones(2, 3, device=d2l.try_gpu())

    # --- LeNet --------------------------------------------------------------------------
    net = d2l.lenet()
    X = torch.rand(size=(1, 1, 28, 28), dtype=torch.float32)
    for layer in net:
        X = layer(X)
        print(layer.__class__.__name__, 'output shape: \\t', X.shape)
    batch_size = 256
    train_iter, test_iter = d2l.load_data_fashion_mnist(batch_size=batch_size)
    lr, num_epochs = 0.9, 1
    d2l.train_ch6(net, train_iter, test_iter, num_epochs, lr, d2l.try_gpu())

    # --- Data parallelism from scratch (two replicas, here on one device) ----------------
    loss = nn.CrossEntropyLoss(reduction='none')
    params = d2l.lenet_params(generator=torch.Generator().manual_seed(1))
    devices = [d2l.try_gpu(0)] * 2
    device_params = [d2l.get_params(params, d) for d in devices]
    data = [torch.ones((1, 2), device=devices[i]) * (i + 1) for i in range(2)]
    d2l.allreduce(data)
    print('after allreduce:', data[0], data[1])
    X, y = next(iter(train_iter))
    X_shards, y_shards = d2l.split_batch(X, y, devices)
    ls = [loss(d2l.lenet_functional(X_shard, device_W), y_shard).sum()
          for X_shard, y_shard, device_W in zip(X_shards, y_shards, device_params)]
    for l in ls:
        l.backward()
    with torch.no_grad():
        for i in range(len(device_params[0])):
            d2l.allreduce([device_params[c][i].grad for c in range(len(devices))])
    for param in device_params:
        d2l.sgd(param, 0.2, X.shape[0])
    # The same step on one replica with the whole batch:
    single = d2l.get_params(params, devices[0])
    loss(d2l.lenet_functional(X.to(devices[0]), single), y.to(devices[0])).sum().backward()
    d2l.sgd(single, 0.2, X.shape[0])
    for replica in device_params:
        for p, q in zip(replica, single):
            torch.testing.assert_close(p, q, rtol=1e-4, atol=1e-6)
    print('data-parallel step equals the single-device step')
    """
)


def test_d2l_style_code_runs_with_d2lite(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("NBGRADER_EXECUTION", "COURSE_GRADER_RECORD")}
    env["D2LITE_DATASET"] = "mnist5k"
    result = subprocess.run([sys.executable, "-c", SNIPPET], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=1500)
    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    assert "epoch 3, loss" in out
    device = "cuda:0" if torch.cuda.is_available() else "cpu"    # what d2l.try_gpu() picks (a GPU machine too)
    assert f"training on {device}" in out and f"examples/sec on {device}" in out
    assert "Linear output shape: \t torch.Size([1, 10])" in out
    assert "data-parallel step equals the single-device step" in out
    assert (tmp_path / "curves.png").stat().st_size > 0


# Every name that the PyTorch code of d2l 0.17's chapters 2-7 and sections 12.5-12.6 reaches through
# `d2l.` (read from the book's source), plus the helpers those chapters define and save into d2l.
D2L_NAMES_USED = (
    "Accumulator", "Animator", "Residual", "Timer", "accuracy", "corr2d", "evaluate_accuracy_gpu",
    "evaluate_loss", "get_fashion_mnist_labels", "linreg", "load_array", "load_data_fashion_mnist",
    "plot", "plt", "predict_ch3", "set_axes", "set_figsize", "sgd", "show_images", "squared_loss",
    "synthetic_data", "train_ch3", "train_ch6", "train_epoch_ch3", "try_all_gpus", "try_gpu",
    "use_svg_display",
)
D2L_NAMES_SAVED = (
    "evaluate_accuracy", "get_dataloader_workers", "download", "download_extract", "download_all",
    "DATA_HUB", "DATA_URL", "split_batch", "resnet18", "data_iter", "get_params", "allreduce",
)
D2L_ALIASES_USED = (
    "abs", "arange", "argmax", "astype", "concat", "exp", "float32", "log", "matmul", "normal", "numpy",
    "ones", "reduce_sum", "reshape", "size", "stack", "tensor", "transpose", "zeros",
)


def test_every_d2l_name_of_the_chapters_is_offered():
    import d2lite as d2l

    missing = [name for name in D2L_NAMES_USED + D2L_NAMES_SAVED if not hasattr(d2l, name)]
    assert missing == []
    assert callable(d2l.plot) and callable(d2l.download) and callable(d2l.Animator(display=False).config_axes)


def test_d2l_names_left_out_say_what_to_use_instead():
    import d2lite as d2l

    for name in D2L_ALIASES_USED + ("Module", "Trainer", "DataModule"):
        with pytest.raises(AttributeError) as info:
            getattr(d2l, name)
        message = str(info.value)
        assert message.startswith(f"d2lite does not offer d2l's {name!r}")
        assert "instead" in message or "nn.Module" in message, message  # says what to write
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        d2l.no_such_name
