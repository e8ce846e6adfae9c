"""Figures that compare runs side by side: several named curves on one axes (``plot_curves``),
or one small panel per named series (``plot_panels``).

A notebook cell then shows what it compares (the optimizers, the schedules), not the matplotlib
calls. Both draw with pyplot, so JupyterLab shows the figure below the cell; both return what they
drew on, and import pyplot only when called (see :mod:`d2lite.plotting`).
"""
from __future__ import annotations

import torch

from .plotting import pyplot

__all__ = ["plot_curves", "plot_panels"]


def _values(values, label):
    """A curve as a list of floats: tensors are detached, numbers and arrays kept."""
    if isinstance(values, torch.Tensor):
        values = values.detach().cpu().reshape(-1).tolist()
    values = list(values)
    if not values:
        raise ValueError(f"the curve {label!r} has no values; pass at least one number per curve")
    return values


def _check_named(named, what):
    if not isinstance(named, dict) or not named:
        raise ValueError(f"{what}: expected a non-empty dict {{label: values}}, got {named!r}")


def plot_curves(curves, *, xlabel=None, ylabel=None, yscale="linear", title=None, styles=None,
                figsize=(6, 3.2), axes=None):
    """Plot named curves on one axes, with a legend; returns the axes.

    curves: {label: values}, each values an (n_i,) sequence (list, array or tensor) plotted
    against 0, 1, ..., n_i - 1. styles: {label: matplotlib format} for the curves that need one
    (for example "--"); the others are solid lines. yscale: "linear" or "log". axes: draw there
    instead of on a new figure of size figsize (width, height in inches).

        d2lite.plot_curves({"SGD": sgd_losses, "Adam": adam_losses}, xlabel="step", yscale="log")
    """
    _check_named(curves, "plot_curves")
    styles = styles or {}
    unknown = sorted(set(styles) - set(curves))
    if unknown:
        raise ValueError(f"plot_curves: styles name curves that are not there: {unknown}; "
                         f"the curves are {list(curves)}")
    if axes is None:
        _, axes = pyplot().subplots(figsize=figsize)
    for label, values in curves.items():
        axes.plot(_values(values, label), styles.get(label, "-"), label=label)
    axes.set(xlabel=xlabel, ylabel=ylabel, yscale=yscale, title=title)
    axes.legend(fontsize=8)
    return axes


def plot_panels(series, *, xlabel=None, ylabel=None, panel_size=(3, 2.6), sharey=True):
    """One panel per named series, side by side in one row; returns the axes, one per series.

    series: {title: values}, each values an (n_i,) sequence plotted against 0, 1, ..., n_i - 1 in
    its own panel, titled by its key. xlabel goes under every panel, ylabel on the first.
    panel_size: (width, height) of one panel in inches. sharey: one y scale for every panel.
    """
    _check_named(series, "plot_panels")
    width, height = panel_size
    figure, axes = pyplot().subplots(1, len(series), figsize=(width * len(series), height),
                                     sharey=sharey, squeeze=False)
    axes = list(axes[0])
    for ax, (title, values) in zip(axes, series.items()):
        ax.plot(_values(values, title))
        ax.set_title(title, fontsize=9)
        ax.set_xlabel(xlabel)
    axes[0].set_ylabel(ylabel)
    figure.tight_layout()
    return axes
