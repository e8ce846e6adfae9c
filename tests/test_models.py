"""Models and losses against torch's own layers and the shapes of d2l's LeNet chapter."""
import pytest
import torch
from torch import nn
from torch.nn import functional as F

import d2lite


def test_linreg_is_an_affine_map():
    g = torch.Generator().manual_seed(0)
    X, w, b = torch.randn(5, 3, generator=g), torch.randn(3, 1, generator=g), torch.tensor(0.7)
    torch.testing.assert_close(d2lite.linreg(X, w, b), F.linear(X, w.T, b.reshape(1)))


def test_squared_loss_is_half_the_squared_error_per_example():
    y_hat = torch.tensor([[1.0], [2.0], [4.0]])
    y = torch.tensor([0.0, 2.0, 1.0])  # d2l passes labels as (n,) and predictions as (n, 1)
    loss = d2lite.squared_loss(y_hat, y)
    assert loss.shape == (3, 1)
    torch.testing.assert_close(loss, F.mse_loss(y_hat, y.reshape(3, 1), reduction="none") / 2)


def test_squared_loss_rejects_a_different_number_of_targets():
    with pytest.raises(ValueError, match="one target per prediction"):
        d2lite.squared_loss(torch.zeros(3, 1), torch.zeros(4))


def test_lenet_layer_shapes_follow_d2l():
    net = d2lite.lenet()
    X = torch.rand(2, 1, 28, 28)
    shapes = []
    for layer in net:
        X = layer(X)
        shapes.append((type(layer).__name__, tuple(X.shape)))
    assert shapes == [
        ("Conv2d", (2, 6, 28, 28)), ("Sigmoid", (2, 6, 28, 28)), ("AvgPool2d", (2, 6, 14, 14)),
        ("Conv2d", (2, 16, 10, 10)), ("Sigmoid", (2, 16, 10, 10)), ("AvgPool2d", (2, 16, 5, 5)),
        ("Flatten", (2, 400)), ("Linear", (2, 120)), ("Sigmoid", (2, 120)),
        ("Linear", (2, 84)), ("Sigmoid", (2, 84)), ("Linear", (2, 10)),
    ]
    # LeNet-5 has 61,706 parameters: 156 + 2,416 + 48,120 + 10,164 + 850.
    assert sum(p.numel() for p in net.parameters()) == 61_706


def test_lenet_relu_maxpool_variant():
    net = d2lite.lenet(activation="relu", pool="max")
    kinds = {type(layer) for layer in net}
    assert nn.ReLU in kinds and nn.MaxPool2d in kinds
    assert nn.Sigmoid not in kinds and nn.AvgPool2d not in kinds
    assert net(torch.rand(3, 1, 28, 28)).shape == (3, 10)


@pytest.mark.parametrize("kwargs, word", [({"activation": "tanh"}, "activation"), ({"pool": "min"}, "pool")])
def test_lenet_rejects_unknown_options(kwargs, word):
    with pytest.raises(ValueError, match=word):
        d2lite.lenet(**kwargs)


def test_lenet_params_shapes_and_seeding():
    params = d2lite.lenet_params(generator=torch.Generator().manual_seed(1))
    assert [tuple(p.shape) for p in params] == [
        (20, 1, 3, 3), (20,), (50, 20, 5, 5), (50,), (800, 128), (128,), (128, 10), (10,)]
    again = d2lite.lenet_params(generator=torch.Generator().manual_seed(1))
    for p, q in zip(params, again):
        torch.testing.assert_close(p, q)
    assert all(torch.count_nonzero(b) == 0 for b in params[1::2]), "biases start at zero"
    assert 0.005 < params[4].std().item() < 0.015, "weights are 0.01 * N(0, 1)"


def test_lenet_functional_equals_the_same_network_built_from_layers():
    params = d2lite.lenet_params(scale=0.1, generator=torch.Generator().manual_seed(2))
    W1, b1, W2, b2, W3, b3, W4, b4 = params
    reference = nn.Sequential(
        nn.Conv2d(1, 20, 3), nn.ReLU(), nn.AvgPool2d(2),
        nn.Conv2d(20, 50, 5), nn.ReLU(), nn.AvgPool2d(2),
        nn.Flatten(), nn.Linear(800, 128), nn.ReLU(), nn.Linear(128, 10))
    with torch.no_grad():
        for layer, (W, b) in zip([reference[0], reference[3]], [(W1, b1), (W2, b2)]):
            layer.weight.copy_(W), layer.bias.copy_(b)
        for layer, (W, b) in zip([reference[7], reference[9]], [(W3, b3), (W4, b4)]):
            layer.weight.copy_(W.T), layer.bias.copy_(b)
    X = torch.rand(4, 1, 28, 28, generator=torch.Generator().manual_seed(3))
    torch.testing.assert_close(d2lite.lenet_functional(X, params), reference(X))


def test_lenet_functional_needs_eight_parameters():
    with pytest.raises(ValueError, match="8 tensors"):
        d2lite.lenet_functional(torch.rand(1, 1, 28, 28), d2lite.lenet_params()[:6])


# ---------------------------------------------------------------- corr2d (d2l's conv-layer section)

def test_corr2d_matches_conv2d_and_the_books_small_example():
    X = torch.arange(9.0).reshape(3, 3)
    K = torch.arange(4.0).reshape(2, 2)
    assert d2lite.corr2d(X, K).tolist() == [[19.0, 25.0], [37.0, 43.0]]
    g = torch.Generator().manual_seed(0)
    X, K = torch.randn(7, 9, generator=g), torch.randn(3, 2, generator=g)
    reference = F.conv2d(X[None, None], K[None, None])[0, 0]  # torch's layer, an independent reference
    torch.testing.assert_close(d2lite.corr2d(X, K), reference)
    edges = d2lite.corr2d(torch.ones(6, 8).index_fill_(1, torch.arange(2, 6), 0), torch.tensor([[1.0, -1.0]]))
    assert edges.shape == (6, 7) and edges[0].tolist() == [0, 1, 0, 0, 0, -1, 0]


def test_corr2d_gradients_reach_the_kernel_and_bad_shapes_are_explained():
    K = torch.ones(2, 2, requires_grad=True)
    d2lite.corr2d(torch.ones(3, 3), K).sum().backward()
    assert K.grad.tolist() == [[4.0, 4.0], [4.0, 4.0]]
    with pytest.raises(ValueError, match="must be 2-d.*conv2d"):
        d2lite.corr2d(torch.ones(1, 3, 3), torch.ones(2, 2))
    with pytest.raises(ValueError, match="larger than the image"):
        d2lite.corr2d(torch.ones(2, 2), torch.ones(3, 1))


# ---------------------------------------------------------------- ResNet (d2l's Residual, resnet18)

def test_residual_blocks_keep_or_halve_the_shape_as_the_resnet_section_shows():
    X = torch.rand(4, 3, 6, 6)
    assert d2lite.Residual(3, 3)(X).shape == (4, 3, 6, 6)
    assert d2lite.Residual(3, 6, use_1x1conv=True, strides=2)(X).shape == (4, 6, 3, 3)
    with pytest.raises(ValueError, match="pass use_1x1conv=True"):
        d2lite.Residual(3, 6)


def test_resnet18_classifies_small_images_and_names_its_stages_like_d2l():
    net = d2lite.resnet18(10)
    assert net(torch.rand(2, 1, 28, 28)).shape == (2, 10)
    assert [name for name, _ in net.named_children()][3:] == [
        "resnet_block1", "resnet_block2", "resnet_block3", "resnet_block4", "global_avg_pool", "fc"]
    convs = [m for m in net.modules() if isinstance(m, nn.Conv2d)]
    assert len(convs) == 1 + 16 + 3  # the stem, two 3x3 in each of 8 blocks, three 1x1 shortcuts
    assert d2lite.resnet18(5, in_channels=3)(torch.rand(1, 3, 32, 32)).shape == (1, 5)
