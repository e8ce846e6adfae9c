"""d2lite.plotting: d2l's static plot helpers draw what they are given and return what they drew on."""
import subprocess
import sys

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
from matplotlib.figure import Figure

import d2lite


@pytest.fixture(autouse=True)
def fresh_pyplot():
    figsize = matplotlib.rcParams["figure.figsize"]
    plt.close("all")
    yield
    plt.close("all")
    matplotlib.rcParams["figure.figsize"] = figsize


def test_plot_and_download_are_functions_and_plt_is_pyplot():
    """d2l calls d2l.plot(...) and d2l.download(...): they must be functions, not modules."""
    assert callable(d2lite.plot) and callable(d2lite.download)
    assert d2lite.plt is plt


def test_importing_d2lite_does_not_import_pyplot():
    code = "import sys, d2lite; print('matplotlib.pyplot' in sys.modules); d2lite.plt; print('matplotlib.pyplot' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "True"]


def test_plot_draws_each_curve_against_shared_x_values_on_the_current_axes():
    x = np.arange(0, 3, 0.5)
    axes = d2lite.plot(x, [x ** 2, 2 * x - 1], "x", "f(x)", legend=["f(x)", "tangent"])
    assert axes is plt.gca() and len(axes.lines) == 2
    np.testing.assert_allclose(axes.lines[0].get_xdata(), x)
    np.testing.assert_allclose(axes.lines[1].get_ydata(), 2 * x - 1)
    assert [t.get_text() for t in axes.get_legend().get_texts()] == ["f(x)", "tangent"]
    assert axes.get_xlabel() == "x" and axes.get_ylabel() == "f(x)"
    assert axes.lines[1].get_linestyle() == "--"  # the second of d2l's formats, 'm--'
    assert all(line.get_visible() for line in axes.get_xgridlines())


def test_plot_takes_tensors_that_require_grad_one_x_per_curve_or_only_ys():
    x = torch.linspace(-2, 2, 5, requires_grad=True)
    axes = d2lite.plot(x, torch.relu(x))  # no .detach() needed
    np.testing.assert_allclose(axes.lines[0].get_ydata(), [0, 0, 0, 1, 2])
    axes = d2lite.plot([[0, 1], [0, 1, 2]], [[5, 6], [7, 8, 9]], axes=axes)
    assert len(axes.lines) == 2 and list(axes.lines[1].get_xdata()) == [0, 1, 2]
    axes = d2lite.plot(torch.tensor([3.0, 1.0, 2.0]), axes=axes)  # Y omitted: against 0, 1, 2
    assert list(axes.lines[0].get_xdata()) == [0, 1, 2] and list(axes.lines[0].get_ydata()) == [3, 1, 2]
    many = d2lite.plot(np.arange(3), [np.arange(3) * k for k in range(6)], axes=axes)
    assert len(many.lines) == 6, "more curves than formats: the formats repeat, no curve is dropped"


def test_plot_draws_on_given_axes_and_rejects_mismatched_curves():
    axes = Figure().add_subplot()
    assert d2lite.plot([1, 2], [3, 4], axes=axes) is axes and plt.get_fignums() == []
    with pytest.raises(ValueError, match="2 x sequences for 3 curves"):
        d2lite.plot([[1], [2]], [[1], [2], [3]], axes=axes)
    with pytest.raises(TypeError, match="X must be a sequence"):
        d2lite.plot(3.0, axes=axes)


def test_set_figsize_sizes_new_figures_and_set_axes_keeps_the_grid_on():
    assert d2lite.set_figsize((6, 4.5)) == (6, 4.5)
    assert tuple(plt.figure().get_size_inches()) == (6, 4.5)
    axes = Figure().add_subplot()
    for _ in range(2):  # twice: a second call must not toggle the grid off
        d2lite.set_axes(axes, "epoch", "loss", [1, 10], None, "linear", "log", None)
    assert axes.get_xlim() == (1, 10) and axes.get_yscale() == "log" and axes.get_legend() is None
    assert all(line.get_visible() for line in axes.get_ygridlines())


def test_use_svg_display_does_nothing_outside_ipython():
    assert d2lite.use_svg_display() is False  # pytest is no IPython shell


def test_show_images_titles_a_grid_and_hides_the_axes():
    images = torch.rand(6, 1, 8, 8)
    axes = d2lite.show_images(images, 2, 3, titles=[str(i) for i in range(6)], scale=1.0)
    assert axes.shape == (6,) and [ax.get_title() for ax in axes] == list("012345")
    assert axes[0].figure.get_size_inches().tolist() == [3.0, 2.0]
    np.testing.assert_allclose(axes[4].images[0].get_array(), images[4, 0].numpy())
    assert not axes[0].get_xaxis().get_visible()
    one = d2lite.show_images(torch.rand(1, 3, 4, 4), 1, 1)  # (C, H, W) colour images become (H, W, C)
    assert one[0].images[0].get_array().shape == (4, 4, 3)
    with pytest.raises(ValueError, match="at least 1"):
        d2lite.show_images(images, 0, 3)


def test_animator_config_axes_applies_its_settings_again():
    animator = d2lite.Animator(xlabel="epoch", ylabel="acc", xlim=[1, 5], legend=["train"], display=False)
    animator.add(1, 0.5)
    ax = animator.axes[0]
    ax.set_xlabel("something else")
    ax.set_xlim(0, 100)
    animator.config_axes()
    assert ax.get_xlabel() == "epoch" and ax.get_xlim() == (1, 5)
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["train"]
