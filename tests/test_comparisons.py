"""d2lite.comparisons and d2lite.spirals: the helpers behind 03b's optimizer and schedule figures."""
import math

import matplotlib.pyplot as plt
import pytest
import torch

import d2lite


@pytest.fixture(autouse=True)
def fresh_pyplot():
    plt.close("all")
    yield
    plt.close("all")


def test_plot_curves_draws_every_named_curve_with_its_style_and_label():
    curves = {"SGD": [1.0, 0.5, 0.25], "Adam": torch.tensor([1.0, 0.1, 0.01], requires_grad=True)}
    axes = d2lite.plot_curves(curves, xlabel="step", ylabel="loss", yscale="log", styles={"Adam": "--"})
    assert [line.get_label() for line in axes.lines] == ["SGD", "Adam"]
    assert list(axes.lines[1].get_ydata()) == pytest.approx([1.0, 0.1, 0.01])
    assert list(axes.lines[0].get_xdata()) == [0, 1, 2]
    assert axes.lines[0].get_linestyle() == "-" and axes.lines[1].get_linestyle() == "--"
    assert axes.get_yscale() == "log" and axes.get_xlabel() == "step"
    assert [text.get_text() for text in axes.get_legend().get_texts()] == ["SGD", "Adam"]


def test_plot_curves_refuses_what_it_cannot_draw():
    with pytest.raises(ValueError, match="non-empty dict"):
        d2lite.plot_curves({})
    with pytest.raises(ValueError, match="no values"):
        d2lite.plot_curves({"empty": []})
    with pytest.raises(ValueError, match=r"not there: \['Adma'\]"):
        d2lite.plot_curves({"Adam": [1.0]}, styles={"Adma": "--"})


def test_plot_panels_gives_each_series_its_own_titled_panel_on_one_y_scale():
    series = {"constant": [0.1] * 5, "decay": [0.1, 0.05, 0.01]}
    axes = d2lite.plot_panels(series, xlabel="optimizer step", ylabel="learning rate")
    assert len(axes) == 2 and axes[0].figure is axes[1].figure
    assert [ax.get_title() for ax in axes] == ["constant", "decay"]
    assert list(axes[1].lines[0].get_ydata()) == [0.1, 0.05, 0.01]
    assert axes[0].get_ylabel() == "learning rate" and axes[1].get_xlabel() == "optimizer step"
    assert axes[0].get_ylim() == axes[1].get_ylim()


def test_spirals_are_reproducible_balanced_points_within_the_unit_disc():
    X, y = d2lite.spirals(n_per_class=50, classes=4, seed=3)
    assert X.shape == (200, 2) and X.dtype == torch.float32 and y.dtype == torch.int64
    assert torch.bincount(y).tolist() == [50, 50, 50, 50]
    assert float(X.norm(dim=1).max()) <= 1 + 1e-6
    again, _ = d2lite.spirals(n_per_class=50, classes=4, seed=3)
    other, _ = d2lite.spirals(n_per_class=50, classes=4, seed=4)
    assert torch.equal(X, again) and not torch.equal(X, other)
    # without noise, the outermost point of arm c sits at angle 2 pi c / classes + 4 (radius 1)
    X0, _ = d2lite.spirals(n_per_class=10, classes=2, noise=0.0)
    outer = X0[19]
    assert math.atan2(outer[0], outer[1]) == pytest.approx(math.remainder(math.pi + 4.0, 2 * math.pi), abs=1e-5)


def test_spirals_refuses_empty_arms():
    with pytest.raises(ValueError, match="n_per_class >= 1"):
        d2lite.spirals(n_per_class=0)
