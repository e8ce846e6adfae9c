"""d2lite.sketches: each drawing shows what the tensors and modules it is given hold (headless, Agg)."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402

import d2lite  # noqa: E402


def teardown_function():
    plt.close("all")


def _texts(ax):
    return [t.get_text() for t in ax.texts]


def test_strided_views_draws_the_storage_and_what_each_view_reads():
    X = torch.arange(12).reshape(3, 4)
    fig = d2lite.strided_views({"X": X, "X.T": X.T, "X[:, ::2]": X[:, ::2]})
    storage, plain, transposed, every_other = fig.axes
    assert _texts(storage) == [str(k) for k in range(12)]
    assert _texts(transposed) == [str(v) for v in X.T.flatten().tolist()]
    assert _texts(every_other) == ["0", "2", "4", "6", "8", "10"]
    assert transposed.get_title().endswith("stride (1, 4)"), transposed.get_title()
    # one storage element, one colour: X[0, 1] and X.T[1, 0] read element 1
    colour = {ax: [p.get_facecolor() for p in ax.patches] for ax in (storage, plain, transposed)}
    assert colour[plain][1] == colour[transposed][3] == colour[storage][1]


def test_strided_views_refuses_other_than_2d():
    with pytest.raises(ValueError, match="2-D"):
        d2lite.strided_views({"x": torch.arange(4)})


def test_broadcasting_fades_the_repeated_entries():
    a, b = torch.arange(3).reshape(3, 1) * 10, torch.arange(4)
    fig = d2lite.broadcasting(a, b)
    left, middle, right = fig.axes
    assert _texts(right) == [str(v) for v in (a + b).flatten().tolist()]
    solid = [p.get_alpha() == 1.0 for p in left.patches]
    assert sum(solid) == 3 and solid[::4] == [True] * 3, "a's own column is solid, its copies pale"
    assert sum(p.get_alpha() == 1.0 for p in middle.patches) == 4
    assert "stride (1, 0)" in left.get_title() and "stride (0, 1)" in middle.get_title()


def test_module_tree_has_a_node_per_module_and_highlights_a_path():
    net = nn.Sequential(nn.Sequential(nn.Linear(2, 3), nn.ReLU()), nn.Linear(3, 1))
    ax, = d2lite.module_tree(net, highlight="0.0").axes
    labels = _texts(ax)
    assert labels == ["(root): Sequential", "0: Sequential", "0: Linear  (9 params)", "1: ReLU", "1: Linear  (4 params)"]
    coloured = [t.get_text() for t in ax.texts if t.get_bbox_patch().get_facecolor() != (1.0, 1.0, 1.0, 1.0)]
    assert coloured == labels[:3]


def test_shared_parameters_joins_every_name_to_its_tensor():
    shared = nn.Linear(3, 3)
    net = nn.Sequential(nn.Linear(2, 3), shared, nn.ReLU(), shared)
    ax, = d2lite.shared_parameters(net).axes
    texts = _texts(ax)
    assert [t for t in texts if not t.startswith("Parameter")] == ["0.weight", "0.bias", "1.weight", "1.bias",
                                                                    "3.weight", "3.bias"]
    assert [t for t in texts if t.startswith("Parameter")] == ["Parameter (3, 2)", "Parameter (3,)",
                                                               "Parameter (3, 3)", "Parameter (3,)"]
    assert len(ax.lines) == 6
    assert sum(line.get_color() == "tab:orange" for line in ax.lines) == 4, "1.* and 3.* reach shared tensors"
