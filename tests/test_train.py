"""train_ch6 does what d2l's does (checked against a plain PyTorch loop) and returns its history;
accuracy and evaluate_accuracy_gpu against hand-computed counts."""
import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import d2lite


def blobs(n=96, seed=0):
    """Three well separated classes of 1x4x4 'images' (same classes for every seed)."""
    centers = torch.randn(3, 1, 4, 4, generator=torch.Generator().manual_seed(123)) * 3
    y = torch.arange(n) % 3
    return centers[y] + torch.randn(n, 1, 4, 4, generator=torch.Generator().manual_seed(seed)), y


def small_net():
    return nn.Sequential(nn.Flatten(), nn.Linear(16, 8), nn.ReLU(), nn.Linear(8, 3))


def loaders(batch_size=16):
    X, y = blobs()
    Xt, yt = blobs(seed=1)
    return (DataLoader(TensorDataset(X, y), batch_size=batch_size),
            DataLoader(TensorDataset(Xt, yt), batch_size=batch_size))


def reference_train(net, train_iter, test_iter, num_epochs, lr):
    """d2l's train_ch6, written out with plain PyTorch."""
    for m in net.modules():
        if isinstance(m, (nn.Linear, nn.Conv2d)):
            nn.init.xavier_uniform_(m.weight)
    optimizer = torch.optim.SGD(net.parameters(), lr=lr)
    history = {"train_loss": [], "train_acc": [], "test_acc": []}
    for _ in range(num_epochs):
        net.train()
        loss_sum, correct, n = 0.0, 0, 0
        for X, y in train_iter:
            optimizer.zero_grad()
            logits = net(X)
            loss = nn.functional.cross_entropy(logits, y)
            loss.backward()
            optimizer.step()
            loss_sum += loss.item() * len(y)
            correct += (logits.argmax(1) == y).sum().item()
            n += len(y)
        net.eval()
        with torch.no_grad():
            right = sum((net(X).argmax(1) == y).sum().item() for X, y in test_iter)
        history["train_loss"].append(loss_sum / n)
        history["train_acc"].append(correct / n)
        history["test_acc"].append(right / sum(len(y) for _, y in test_iter))
    return history


def test_train_ch6_matches_a_plain_pytorch_loop():
    train_iter, test_iter = loaders()
    torch.manual_seed(0)
    net = small_net()
    history = d2lite.train_ch6(net, train_iter, test_iter, 3, 0.3, "cpu",
                               animate=False, progress=False, verbose=False)
    torch.manual_seed(0)
    reference = small_net()
    expected = reference_train(reference, train_iter, test_iter, 3, 0.3)
    for name, tensor in reference.state_dict().items():
        torch.testing.assert_close(net.state_dict()[name], tensor, msg=f"{name} differs after training")
    assert history.train_loss == pytest.approx(expected["train_loss"], rel=1e-5)
    assert history.train_acc == pytest.approx(expected["train_acc"])
    assert history.test_acc == pytest.approx(expected["test_acc"])
    assert history.examples == [96, 96, 96]
    assert len(history.seconds) == 3 and all(s > 0 for s in history.seconds)
    assert history.test_acc[-1] > 0.9, "three separated blobs are easy"


def test_train_ch6_prints_d2l_summary_and_returns_history(capsys):
    train_iter, test_iter = loaders()
    history = d2lite.train_ch6(small_net(), train_iter, test_iter, 2, 0.3, torch.device("cpu"), progress=False)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "training on cpu"
    assert out[1] == (f"loss {history.train_loss[-1]:.3f}, train acc {history.train_acc[-1]:.3f}, "
                      f"test acc {history.test_acc[-1]:.3f}")
    assert out[2].endswith("examples/sec on cpu")
    assert set(history.as_dict()) == {"train_loss", "train_acc", "test_acc", "seconds", "examples"}
    assert repr(history).startswith("History(2 epochs")
    assert history.examples_per_sec == pytest.approx(192 / sum(history.seconds))


def test_train_ch6_is_quiet_when_asked_and_under_the_grader(capsys, monkeypatch):
    train_iter, test_iter = loaders()
    d2lite.train_ch6(small_net(), train_iter, test_iter, 1, 0.1, "cpu", verbose=False, progress=False)
    assert capsys.readouterr() == ("", "")
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    d2lite.train_ch6(small_net(), train_iter, test_iter, 1, 0.1, "cpu", verbose=False)
    assert capsys.readouterr().err == "", "no progress bar while nbgrader runs the notebook"


def test_train_ch6_shows_a_progress_bar_by_default(capsys, monkeypatch):
    for name in ("NBGRADER_EXECUTION", "COURSE_GRADER_RECORD"):
        monkeypatch.delenv(name, raising=False)
    train_iter, test_iter = loaders()
    d2lite.train_ch6(small_net(), train_iter, test_iter, 1, 0.1, "cpu", verbose=False)
    assert "6/6" in capsys.readouterr().err, "one tick per batch: 96 examples / 16"


def test_train_ch6_accepts_batches_from_a_generator_and_keeps_weights_with_init_false():
    X, y = blobs()
    net = small_net()
    before = {k: v.clone() for k, v in net.state_dict().items()}

    def batches():  # no len(): like d2l's data_iter
        yield from zip(X.split(32), y.split(32))

    class Reusable:
        def __iter__(self):
            return batches()

    history = d2lite.train_ch6(net, Reusable(), Reusable(), 2, 0.0, "cpu", init=False,
                               progress=False, verbose=False)
    assert history.examples == [96, 96]
    for name, tensor in before.items():
        torch.testing.assert_close(net.state_dict()[name], tensor, msg="lr=0, init=False: weights unchanged")


def test_train_ch6_trains_lenet_with_the_animator_headless():
    g = torch.Generator().manual_seed(0)
    X, y = torch.rand(32, 1, 28, 28, generator=g), torch.randint(0, 10, (32,), generator=g)
    it = DataLoader(TensorDataset(X, y), batch_size=8)
    history = d2lite.train_ch6(d2lite.lenet(), it, it, 1, 0.1, "cpu", progress=False, verbose=False)
    assert len(history.train_loss) == 1 and 0 <= history.test_acc[0] <= 1


def test_train_ch6_bad_input():
    train_iter, test_iter = loaders()
    with pytest.raises(ValueError, match="num_epochs"):
        d2lite.train_ch6(small_net(), train_iter, test_iter, 0, 0.1, "cpu")
    with pytest.raises(ValueError, match="no batches"):
        d2lite.train_ch6(small_net(), [], test_iter, 1, 0.1, "cpu", progress=False, verbose=False)


def test_accuracy_counts_correct_predictions_like_d2l():
    y = torch.tensor([0, 2, 1, 1])
    scores = torch.tensor([[0.9, 0.1, 0.0], [0.1, 0.2, 0.7], [0.8, 0.1, 0.1], [0.2, 0.5, 0.3]])
    assert d2lite.accuracy(scores, y) == 3.0, "a count, not a fraction"
    assert d2lite.accuracy(torch.tensor([0, 2, 2, 2]), y) == 2.0, "labels are compared directly"
    assert isinstance(d2lite.accuracy(scores, y), float)


def test_evaluate_accuracy_gpu_counts_over_all_batches_and_restores_the_mode():
    _, test_iter = loaders()
    torch.manual_seed(0)
    net = small_net()
    with torch.no_grad():
        expected = sum((net(X).argmax(1) == y).sum().item() for X, y in test_iter) / 96
    net.train()
    assert d2lite.evaluate_accuracy_gpu(net, test_iter) == pytest.approx(expected)
    assert net.training, "the module is put back in training mode"
    net.eval()
    assert d2lite.evaluate_accuracy_gpu(net, test_iter, torch.device("cpu")) == pytest.approx(expected)
    assert not net.training


def test_evaluate_accuracy_gpu_with_a_plain_function_and_empty_data():
    batches = [(torch.tensor([[1.0, 0.0], [0.0, 1.0]]), torch.tensor([0, 0]))]
    assert d2lite.evaluate_accuracy_gpu(lambda X: X, batches) == 0.5
    with pytest.raises(ValueError, match="no examples"):
        d2lite.evaluate_accuracy_gpu(small_net(), [])


class CopySpy(torch.Tensor):
    """A batch tensor that notes how it is copied: the ``non_blocking`` flag of each ``.to()``.
    The copy it returns is a plain tensor, so the model's own calls are not counted."""

    flags: list = []

    def to(self, *args, **kwargs):
        CopySpy.flags.append(kwargs.get("non_blocking", False))
        return torch.Tensor.to(self.as_subclass(torch.Tensor), *args, **kwargs)


def spied(loader):
    return [(X.as_subclass(CopySpy), y.as_subclass(CopySpy)) for X, y in loader]


def test_batches_are_copied_with_non_blocking_true(monkeypatch):
    """On a CUDA GPU a blocking copy from the CPU waits for the GPU; both loops ask for
    non_blocking=True (checked here on the CPU, where the call is the same)."""
    train_iter, test_iter = loaders()
    monkeypatch.setattr(CopySpy, "flags", [])
    d2lite.train_ch6(small_net(), spied(train_iter), spied(test_iter), 1, 0.1, "cpu",
                     animate=False, progress=False, verbose=False)
    assert len(CopySpy.flags) == 2 * (6 + 6), "X and y of every training and test batch are moved"
    assert all(CopySpy.flags), "every batch copy passes non_blocking=True"
    monkeypatch.setattr(CopySpy, "flags", [])
    net = small_net()
    d2lite.evaluate_accuracy_gpu(lambda Xs: net(Xs[0]), [([X, X], y) for X, y in spied(test_iter)], "cpu")
    assert CopySpy.flags and all(CopySpy.flags), "lists of inputs too"
