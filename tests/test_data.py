"""d2lite.data: synthetic data, minibatch iterators and the bundled mnist5k data set."""
import gzip
import shutil

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

import d2lite
from d2lite import ChecksumError, TensorLoader, data_iter, load_array, load_data, synthetic_data
from d2lite.unattended import DATASET


# ---------------------------------------------------------------- synthetic_data

def test_synthetic_data_follows_the_linear_model_with_small_noise():
    w, b = torch.tensor([2.0, -3.4]), 4.2
    X, y = synthetic_data(w, b, 5000, generator=torch.Generator().manual_seed(0))
    assert X.shape == (5000, 2) and y.shape == (5000, 1)
    assert X.dtype == y.dtype == torch.float32
    # Independent reference: ordinary least squares recovers w and b; residuals have std 0.01.
    design = torch.cat([X, torch.ones(5000, 1)], dim=1).double()
    coef = torch.linalg.lstsq(design, y.double()).solution.squeeze(1)
    torch.testing.assert_close(coef, torch.tensor([2.0, -3.4, 4.2], dtype=torch.float64), atol=1e-3, rtol=0)
    residual_std = (y.double() - design @ coef.unsqueeze(1)).std().item()
    assert 0.009 < residual_std < 0.011
    assert abs(X.mean().item()) < 0.05 and abs(X.std().item() - 1) < 0.05


def test_synthetic_data_is_reproducible_with_a_generator_and_keeps_float64():
    w = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)
    first = synthetic_data(w, 0.5, 10, generator=torch.Generator().manual_seed(3))
    second = synthetic_data(w, 0.5, 10, generator=torch.Generator().manual_seed(3))
    assert first[0].dtype == torch.float64
    torch.testing.assert_close(first, second, rtol=0, atol=0)


# ---------------------------------------------------------------- data_iter

def epoch_of(batches):
    xs, ys = zip(*batches)
    return torch.cat(xs), torch.cat(ys)


@pytest.mark.parametrize("n, batch_size", [(100, 10), (103, 10), (5, 32), (1, 1)])
def test_data_iter_yields_every_example_exactly_once_per_epoch(n, batch_size):
    features = torch.arange(n, dtype=torch.float32).unsqueeze(1) * torch.tensor([[1.0, -1.0]])
    labels = torch.arange(n)
    batches = list(data_iter(batch_size, features, labels))
    sizes = [len(y) for _, y in batches]
    assert sizes == [batch_size] * (n // batch_size) + ([n % batch_size] if n % batch_size else [])
    X, y = epoch_of(batches)
    assert sorted(y.tolist()) == list(range(n))
    torch.testing.assert_close(X, features[y])  # rows stay paired with their labels


def test_data_iter_shuffles_and_is_reproducible_with_a_generator():
    features, labels = torch.randn(200, 3), torch.arange(200)
    order = lambda seed: epoch_of(data_iter(16, features, labels, generator=torch.Generator().manual_seed(seed)))[1]
    assert torch.equal(order(7), order(7))
    assert not torch.equal(order(7), order(8))
    assert not torch.equal(order(7), labels), "data_iter must shuffle"


@pytest.mark.parametrize("batch_size", [0, -3, 2.5, True])
def test_data_iter_rejects_a_bad_batch_size_at_the_call(batch_size):
    with pytest.raises(ValueError, match="batch_size must be a positive integer"):
        data_iter(batch_size, torch.zeros(4, 2), torch.zeros(4))


def test_data_iter_rejects_features_and_labels_of_different_lengths_at_the_call():
    with pytest.raises(ValueError, match=r"same number of examples.*\[10, 9\]"):
        data_iter(2, torch.zeros(10, 2), torch.zeros(9))


# ---------------------------------------------------------------- load_array

def test_load_array_without_shuffle_matches_a_dataloader_batch_for_batch():
    X, y = torch.randn(37, 4), torch.arange(37)
    ours = list(load_array((X, y), 8, is_train=False))
    reference = list(DataLoader(TensorDataset(X, y), 8, shuffle=False))
    assert len(ours) == len(reference) == len(load_array((X, y), 8, is_train=False))
    for (xa, ya), (xb, yb) in zip(ours, reference):
        torch.testing.assert_close((xa, ya), (xb, yb), rtol=0, atol=0)


def test_load_array_shuffles_each_epoch_and_can_be_iterated_again():
    X, y = torch.randn(50, 2), torch.arange(50)
    loader = load_array((X, y), 7)
    epochs = [epoch_of(loader) for _ in range(3)]
    for Xe, ye in epochs:
        assert sorted(ye.tolist()) == list(range(50))
        torch.testing.assert_close(Xe, X[ye])
    assert not all(torch.equal(epochs[0][1], e[1]) for e in epochs[1:])
    assert len(loader) == 8 and len(loader.dataset) == 50 and loader.batch_size == 7


# ---------------------------------------------------------------- mnist5k

def all_of(loader):
    X, y = epoch_of(loader)
    return X, y


def test_mnist5k_sizes_classes_dtypes_and_pixel_range(capsys):
    train_iter, test_iter = load_data("mnist5k", 256)
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and "mnist5k" in out and "4,000" in out and "1,000" in out
    for loader, n, per_class in ((train_iter, 4000, 400), (test_iter, 1000, 100)):
        X, y = all_of(loader)
        assert X.shape == (n, 1, 28, 28) and X.dtype == torch.float32
        assert y.shape == (n,) and y.dtype == torch.int64
        assert torch.bincount(y, minlength=10).tolist() == [per_class] * 10
        assert X.min().item() == 0.0 and X.max().item() == 1.0
        assert len(loader) == -(-n // 256)
    assert train_iter.classes == tuple("0123456789")


def test_mnist5k_pixels_match_an_independent_decoding_of_the_bundled_files():
    _, test_iter = load_data("mnist5k", 1000)
    X, y = next(iter(test_iter))  # the test iterator keeps the file order
    raw = gzip.decompress((d2lite.MNIST5K_DIR / "t10k-images-idx3-ubyte.gz").read_bytes())
    pixels = np.frombuffer(raw, dtype=np.uint8, offset=16).reshape(1000, 1, 28, 28)
    labels = np.frombuffer(gzip.decompress((d2lite.MNIST5K_DIR / "t10k-labels-idx1-ubyte.gz").read_bytes()),
                           dtype=np.uint8, offset=8)
    torch.testing.assert_close(X, torch.from_numpy(pixels.astype(np.float32) / 255))
    assert y.tolist() == labels.tolist()


@pytest.mark.parametrize("resize, shape", [(32, (32, 32)), (64, (64, 64)), ((20, 24), (20, 24)), (28, (28, 28))])
def test_mnist5k_resize_gives_the_asked_shape_within_unit_range(resize, shape):
    train_iter, test_iter = load_data("mnist5k", 50, resize=resize)
    for loader in (train_iter, test_iter):
        X, y = next(iter(loader))
        assert X.shape == (50, 1, *shape) and X.dtype == torch.float32 and y.shape == (50,)
        assert 0 <= X.min().item() and X.max().item() <= 1


@pytest.mark.parametrize("size", [(64, 64), (14, 14), (20, 24)])
def test_resize_matches_pil_bilinear_like_d2l_transforms_resize(size):
    from PIL import Image

    _, test_iter = load_data("mnist5k", 8, resize=size)
    X, _ = next(iter(test_iter))
    # d2l resizes PIL images with torchvision's Resize, i.e. PIL's antialiased bilinear filter.
    reference = torch.stack([
        torch.from_numpy(np.array(Image.fromarray(image.numpy()).resize(size[::-1], Image.BILINEAR)))
        for image in test_iter.dataset.tensors[0][:8]
    ]).float().unsqueeze(1) / 255
    torch.testing.assert_close(X, reference, rtol=0, atol=1.5 / 255)  # PIL rounds to uint8


@pytest.mark.parametrize("resize", [0, -5, (28,), (10, 0), 2.5])
def test_a_bad_resize_is_rejected_before_loading(resize):
    with pytest.raises(ValueError, match="resize must be a positive int or a pair"):
        load_data("mnist5k", 10, resize=resize)


def test_mnist5k_training_order_is_reshuffled_per_epoch_and_reproducible_with_a_generator():
    a, _ = load_data("mnist5k", 100, generator=torch.Generator().manual_seed(0))
    b, _ = load_data("mnist5k", 100, generator=torch.Generator().manual_seed(0))
    first_a, first_b = all_of(a)[1], all_of(b)[1]
    assert torch.equal(first_a, first_b)
    assert not torch.equal(first_a, all_of(a)[1])


def test_device_resident_loader_gives_the_same_batches_as_the_default_one():
    host, host_test = load_data("mnist5k", 128, generator=torch.Generator().manual_seed(1))
    dev, dev_test = load_data("mnist5k", 128, device="cpu", generator=torch.Generator().manual_seed(1))
    assert dev.device == torch.device("cpu")
    torch.testing.assert_close(all_of(host), all_of(dev), rtol=0, atol=0)
    torch.testing.assert_close(all_of(host_test), all_of(dev_test), rtol=0, atol=0)


def test_load_data_fashion_mnist_follows_d2lite_dataset_and_says_so(monkeypatch, capsys):
    monkeypatch.setenv(DATASET, "mnist5k")
    train_iter, test_iter = d2lite.load_data_fashion_mnist(32, resize=None)
    out = capsys.readouterr().out
    assert "mnist5k" in out and "D2LITE_DATASET=mnist5k" in out
    assert train_iter.name == "mnist5k" and len(test_iter.dataset) == 1000


def test_digits_standing_in_for_fashion_mnist_make_epochs_as_long_as_fashion_mnist_ones(monkeypatch, capsys):
    """d2l's chapters pick epochs and learning rates for 60,000 images: a stand-in epoch has as many."""
    monkeypatch.setenv(DATASET, "mnist5k")
    train_iter, test_iter = d2lite.load_data_fashion_mnist(256)
    out = capsys.readouterr().out
    assert "One training epoch is 60,000 examples: 15 reshuffled passes over the 4,000" in out
    assert "As many steps per epoch as Fashion-MNIST's 60,000 images" in out
    assert len(train_iter) == 235 and len(test_iter) == 4  # ceil(60,000 / 256); the test set once
    X, y = all_of(train_iter)
    assert X.shape == (60_000, 1, 28, 28)
    assert torch.bincount(y, minlength=10).tolist() == [6000] * 10  # each digit 15 times
    single, _ = d2lite.load_data_fashion_mnist(256, epoch_size=None)
    assert len(single) == 16 and "One training epoch" not in capsys.readouterr().out


def test_a_longer_epoch_is_several_reshuffled_passes():
    X, y = torch.arange(10).float(), torch.arange(10)
    loader = TensorLoader((X, y), 4, shuffle=True, epoch_size=25)
    _, seen = epoch_of(loader)
    assert len(loader) == 7 and len(seen) == 25
    assert sorted(seen[:20].tolist()) == sorted(list(range(10)) * 2)  # two whole passes, then part of a third
    assert len(set(seen[20:].tolist())) == 5
    ordered = TensorLoader((X, y), 4, epoch_size=15)
    assert epoch_of(ordered)[1].tolist() == list(range(10)) + list(range(5))
    for bad in (0, -3, 2.5, True):
        with pytest.raises(ValueError, match="epoch_size must be a positive number of examples"):
            TensorLoader((X, y), 4, epoch_size=bad)


def test_unknown_data_set_names_are_rejected(monkeypatch):
    with pytest.raises(ValueError, match="unknown data set 'cifar10'.*fashion_mnist.*mnist5k"):
        load_data("cifar10", 32)
    monkeypatch.setenv("D2LITE_DATASET", "mnist")
    with pytest.raises(ValueError, match="D2LITE_DATASET='mnist'"):
        d2lite.load_data_fashion_mnist(32)


def test_a_modified_mnist5k_file_is_rejected_by_its_checksum(tmp_path):
    for f in d2lite.MNIST5K_DIR.glob("*.gz"):
        shutil.copy(f, tmp_path / f.name)
    load_data("mnist5k", 10, root=tmp_path)  # an intact copy loads
    path = tmp_path / "train-labels-idx1-ubyte.gz"
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF  # one flipped byte
    path.write_bytes(bytes(data))
    with pytest.raises(ChecksumError, match="train-labels-idx1-ubyte.gz: SHA-256 is"):
        load_data("mnist5k", 10, root=tmp_path)


def test_get_fashion_mnist_labels_names_the_ten_classes_in_d2l_order(monkeypatch):
    monkeypatch.delenv(DATASET, raising=False)
    assert d2lite.get_fashion_mnist_labels(torch.tensor([0, 9, 5])) == ["t-shirt", "ankle boot", "sandal"]
    assert len(set(d2lite.get_fashion_mnist_labels(range(10)))) == 10


def test_get_fashion_mnist_labels_names_digits_when_the_digits_stand_in(monkeypatch):
    monkeypatch.setenv(DATASET, "mnist5k")
    assert d2lite.get_fashion_mnist_labels(torch.tensor([0, 9, 5])) == ["0", "9", "5"]
    monkeypatch.delenv(DATASET)
    assert d2lite.get_fashion_mnist_labels([3], dataset="mnist5k") == ["3"]
    _, test_iter = load_data("mnist5k", 8)
    assert d2lite.get_fashion_mnist_labels([7], dataset=test_iter.name) == [test_iter.classes[7]] == ["7"]


def test_get_fashion_mnist_labels_says_what_is_wrong_with_bad_labels():
    with pytest.raises(ValueError, match="10 is not a class index of fashion_mnist.*argmax"):
        d2lite.get_fashion_mnist_labels([10], dataset="fashion_mnist")
    with pytest.raises(ValueError, match="unknown data set 'cifar10'"):
        d2lite.get_fashion_mnist_labels([1], dataset="cifar10")


def test_get_dataloader_workers_gives_a_count_a_dataloader_accepts():
    loader = DataLoader(TensorDataset(torch.arange(6)), batch_size=4, num_workers=d2lite.get_dataloader_workers())
    assert [len(b[0]) for b in loader] == [4, 2]


def test_d2l_style_linear_regression_input_pipeline_runs_unchanged():
    import d2lite as d2l

    true_w, true_b = torch.tensor([2, -3.4]), 4.2
    features, labels = d2l.synthetic_data(true_w, true_b, 1000)
    seen = 0
    for X, y in d2l.data_iter(10, features, labels):
        seen += len(X)
    data_iter_ = d2l.load_array((features, labels), 10)
    X, y = next(iter(data_iter_))
    assert seen == 1000 and X.shape == (10, 2) and y.shape == (10, 1)


def test_dataset_holds_the_stored_uint8_images_and_transform_turns_them_into_batches():
    _, test_iter = load_data("mnist5k", 100, resize=32)
    X, y = next(iter(test_iter))
    images, labels = test_iter.dataset[:100]
    assert images.dtype == torch.uint8 and images.shape == (100, 28, 28) and len(test_iter.dataset) == 1000
    torch.testing.assert_close(test_iter.transform(images), X, rtol=0, atol=0)
    assert torch.equal(labels, y)
