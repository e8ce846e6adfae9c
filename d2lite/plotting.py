"""Static plots the way d2l's chapters make them: ``plot`` a few curves, ``show_images`` in a
grid, and the matplotlib settings the chapters call (``use_svg_display``, ``set_figsize``,
``set_axes``).

Like d2l's, ``plot`` and ``show_images`` draw with pyplot, so JupyterLab shows the figure below
the cell (for curves that grow while a model trains, use :class:`d2lite.Animator`). Unlike
d2l's, they return what they drew on, accept tensors that require grad, and pyplot is imported
on first use rather than when d2lite is imported: ``d2lite.plt`` is ``matplotlib.pyplot``,
loaded the first time it is read. Headless runs (scripts, CI) use whatever backend matplotlib
picks there (Agg without a display); nothing here switches backends.
"""
from __future__ import annotations

import itertools
import sys

import numpy as np
import torch

__all__ = ["use_svg_display", "set_figsize", "set_axes", "plot", "show_images"]


def pyplot():
    """``matplotlib.pyplot``, imported on first use (``d2lite.plt`` is this module)."""
    import matplotlib.pyplot

    return matplotlib.pyplot


def __getattr__(name: str):  # PEP 562: ``plotting.plt`` imports pyplot only when read
    if name == "plt":
        return pyplot()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def use_svg_display() -> bool:
    """Show pyplot figures as SVG in Jupyter (sharp at any zoom), as d2l does.

    Returns True when an IPython shell was there to configure, False in a plain script, where
    there is no inline display and so nothing to change.
    """
    if "IPython" not in sys.modules:
        return False
    from IPython import get_ipython

    if get_ipython() is None:
        return False
    try:
        from matplotlib_inline.backend_inline import set_matplotlib_formats
    except ImportError:  # an IPython without the inline backend: keep its default format
        return False
    set_matplotlib_formats("svg")
    return True


def set_figsize(figsize=(3.5, 2.5)) -> tuple[float, float]:
    """Make new figures ``figsize`` = (width, height) inches (matplotlib's ``figure.figsize``)
    and show them as SVG in Jupyter. Returns the size now in effect."""
    import matplotlib

    use_svg_display()
    width, height = figsize
    matplotlib.rcParams["figure.figsize"] = (width, height)
    return tuple(matplotlib.rcParams["figure.figsize"])


def set_axes(axes, xlabel, ylabel, xlim, ylim, xscale, yscale, legend):
    """Label, scale and limit one matplotlib ``Axes``, add a legend (when ``legend`` names any
    curves) and a grid. ``xlim``/``ylim`` of None keep the automatic limits. Returns ``axes``."""
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    axes.set_xscale(xscale)
    axes.set_yscale(yscale)
    if xlim is not None:
        axes.set_xlim(xlim)
    if ylim is not None:
        axes.set_ylim(ylim)
    if legend:
        axes.legend(legend)
    axes.grid(True)  # True, not grid(): a bare call toggles, so a second set_axes would hide it
    return axes


def _values(curve) -> np.ndarray:
    """One curve's values as a 1-d float array (tensors detached and moved to the CPU)."""
    if isinstance(curve, torch.Tensor):
        return curve.detach().cpu().numpy()
    return np.asarray([float(v) if isinstance(v, torch.Tensor) else v for v in curve])


def _is_one_curve(values) -> bool:
    """True for one curve (a 1-d tensor/array, or a sequence of numbers); False for a list of curves."""
    if hasattr(values, "ndim"):
        return values.ndim == 1
    first = next(iter(values), None)
    if first is None or isinstance(first, (list, tuple)):
        return first is None
    return getattr(first, "ndim", 0) == 0


def _curves(values, what: str) -> list:
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise TypeError(f"plot: {what} must be a sequence of numbers or a list of them, "
                        f"got {type(values).__name__}")
    if not hasattr(values, "__len__"):  # a generator: read it once
        values = list(values)
    return [_values(values)] if _is_one_curve(values) else [_values(c) for c in values]


def plot(X, Y=None, xlabel=None, ylabel=None, legend=None, xlim=None, ylim=None,
         xscale="linear", yscale="linear", fmts=("-", "m--", "g-.", "r:"), figsize=(3.5, 2.5),
         axes=None):
    """Plot one or more curves on ``axes`` (default: pyplot's current axes), as d2l's ``plot``.

    X: x values, (n,) shared by every curve or one (n_i,) per curve. Y: one (n,) curve or a
    list of them; when Y is None, X holds the curves and they are plotted against 0, 1, ...
    Values may be tensors (detached), arrays or lists. fmts: matplotlib line formats, used in
    turn (repeating when there are more curves). The axes are cleared first. Returns the axes.

        x = torch.arange(0, 3, 0.1)
        d2l.plot(x, [x ** 2, 2 * x - 1], 'x', 'f(x)', legend=['f(x)', 'tangent at x=1'])
    """
    if not fmts:
        raise ValueError("plot: fmts must name at least one line format, e.g. ('-',)")
    if Y is None:
        ys = _curves(X, "X")
        xs = [None] * len(ys)
    else:
        xs, ys = _curves(X, "X"), _curves(Y, "Y")
        if len(xs) == 1:
            xs = xs * len(ys)
        elif len(xs) != len(ys):
            raise ValueError(f"plot: got {len(xs)} x sequences for {len(ys)} curves; pass one x "
                             "sequence shared by every curve, or one per curve")
    set_figsize(figsize)
    axes = axes if axes is not None else pyplot().gca()
    axes.cla()
    for x, y, fmt in zip(xs, ys, itertools.cycle(fmts)):
        if x is None:
            axes.plot(y, fmt)
        else:
            axes.plot(x, y, fmt)
    return set_axes(axes, xlabel, ylabel, xlim, ylim, xscale, yscale, legend)


def _image(img):
    """A tensor image (H, W), (1, H, W) or (C, H, W) as an (H, W) or (H, W, C) array; other
    images (PIL, numpy) unchanged."""
    if not isinstance(img, torch.Tensor):
        return img
    img = img.detach().cpu()
    if img.ndim == 3:
        img = img[0] if img.shape[0] == 1 else img.permute(1, 2, 0)
    if img.ndim not in (2, 3):
        raise ValueError(f"show_images: an image must be (H, W), (1, H, W) or (C, H, W), got {tuple(img.shape)}")
    return img.numpy()


def show_images(imgs, num_rows: int, num_cols: int, titles=None, scale: float = 1.5):
    """Show images in a ``num_rows`` x ``num_cols`` grid (d2l's ``show_images``), axes hidden.

    imgs: a sequence (or tensor (N, H, W) / (N, C, H, W)) of images: tensors, arrays or PIL
    images; the first ``num_rows * num_cols`` are shown. titles: one string per image, or None.
    Each image is ``scale`` inches wide. Returns the (num_rows * num_cols,) array of Axes.
    """
    if num_rows < 1 or num_cols < 1:
        raise ValueError(f"show_images: num_rows and num_cols must be at least 1, got {num_rows} x {num_cols}")
    _, axes = pyplot().subplots(num_rows, num_cols, figsize=(num_cols * scale, num_rows * scale),
                                squeeze=False)
    axes = axes.ravel()
    for i, (ax, img) in enumerate(zip(axes, imgs)):
        ax.imshow(_image(img))
        ax.get_xaxis().set_visible(False)
        ax.get_yaxis().set_visible(False)
        if titles:
            ax.set_title(titles[i])
    return axes
