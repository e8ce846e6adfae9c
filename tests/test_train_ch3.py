"""d2lite.classify: chapter 3's loop (train_epoch_ch3, train_ch3, predict_ch3, evaluate_accuracy,
evaluate_loss) against the same steps written out in plain PyTorch."""
import copy

import pytest
import torch
from torch import nn

import d2lite
from d2lite import TensorLoader


def blobs(n=120, seed=0):
    """Three separable classes of 2-d points."""
    centers = torch.tensor([[4.0, 0.0], [-4.0, 0.0], [0.0, 4.0]])
    y = torch.arange(n) % 3
    return centers[y] + torch.randn(n, 2, generator=torch.Generator().manual_seed(seed)), y


def test_one_epoch_with_a_hand_written_updater_is_sgd_on_the_summed_loss():
    X, y = blobs()
    net = nn.Linear(2, 3)
    reference = copy.deepcopy(net)
    loss = nn.CrossEntropyLoss(reduction="none")
    params = list(net.parameters())
    train_loss, train_acc = d2lite.train_epoch_ch3(
        net, TensorLoader((X, y), 40), loss, lambda batch_size: d2lite.sgd(params, 0.5, batch_size))
    losses, correct = [], 0
    for start in range(0, 120, 40):  # the same batches, in order, with plain PyTorch
        Xb, yb = X[start:start + 40], y[start:start + 40]
        out = reference(Xb)
        l = loss(out, yb)
        reference.zero_grad()
        l.sum().backward()
        with torch.no_grad():
            for p in reference.parameters():
                p -= 0.5 * p.grad / len(yb)
        losses.append(l.detach().sum())
        correct += (out.argmax(1) == yb).sum().item()
    for p, q in zip(net.parameters(), reference.parameters()):
        torch.testing.assert_close(p, q)
    assert train_loss == pytest.approx(float(sum(losses)) / 120, rel=1e-6)
    assert train_acc == correct / 120


def test_an_optimizer_minimises_the_mean_loss_and_a_mean_loss_is_counted_per_example():
    X, y = blobs()
    net = nn.Linear(2, 3)
    reference = copy.deepcopy(net)
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
    train_loss, _ = d2lite.train_epoch_ch3(net, TensorLoader((X, y), 120), nn.CrossEntropyLoss(), optimizer)
    l = nn.CrossEntropyLoss()(reference(X), y)
    l.backward()
    with torch.no_grad():
        for p in reference.parameters():
            p -= 0.1 * p.grad
    for p, q in zip(net.parameters(), reference.parameters()):
        torch.testing.assert_close(p, q)
    assert train_loss == pytest.approx(l.item(), rel=1e-6)


def test_train_ch3_learns_and_returns_its_history_and_evaluate_loss_is_the_mean_loss():
    torch.manual_seed(0)
    train_iter, test_iter = TensorLoader(blobs(), 20, shuffle=True), TensorLoader(blobs(seed=1), 50)
    net = nn.Sequential(nn.Linear(2, 3))
    history = d2lite.train_ch3(net, train_iter, test_iter, nn.CrossEntropyLoss(reduction="none"), 3,
                               torch.optim.SGD(net.parameters(), lr=0.1))
    assert len(history.test_acc) == 3 and history.examples == [120] * 3
    assert history.test_acc[-1] > 0.95 and history.train_loss[-1] < history.train_loss[0]
    assert d2lite.evaluate_accuracy(net, test_iter) == history.test_acc[-1]
    X, y = blobs(seed=1)
    expected = nn.CrossEntropyLoss()(net(X), y).item()
    assert d2lite.evaluate_loss(net, test_iter, nn.CrossEntropyLoss(reduction="none")) == pytest.approx(expected, rel=1e-5)


def test_bad_updaters_and_epoch_counts_are_explained():
    train_iter = TensorLoader(blobs(), 40)
    with pytest.raises(TypeError, match="updater must be a torch optimizer or a function of the batch size"):
        d2lite.train_epoch_ch3(nn.Linear(2, 3), train_iter, nn.CrossEntropyLoss(reduction="none"), 0.1)
    with pytest.raises(ValueError, match="num_epochs must be at least 1"):
        d2lite.train_ch3(nn.Linear(2, 3), train_iter, train_iter, nn.CrossEntropyLoss(), 0, None)


def test_predict_ch3_names_true_and_predicted_labels_with_the_loaders_classes():
    import matplotlib.pyplot as plt

    _, test_iter = d2lite.load_data("mnist5k", 10)
    X, y = next(iter(test_iter))

    def oracle(images):  # "predicts" the true labels of the first batch
        return nn.functional.one_hot(y[:len(images)], 10).float()

    trues, preds = d2lite.predict_ch3(oracle, test_iter, n=4)
    assert trues == preds == [str(int(v)) for v in y[:4]]
    assert [ax.get_title() for ax in plt.gcf().axes] == [f"{t}\n{t}" for t in trues]
    plt.close("all")
