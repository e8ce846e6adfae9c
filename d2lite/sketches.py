"""Explanatory drawings of notebooks 01 and 03, made from the tensors and modules they are given.

Each function draws one picture with pyplot and returns its ``Figure`` (the notebook calls
``plt.show()``):

- ``strided_views``: which storage element each entry of a 2-D view reads (shape, stride, offset);
- ``broadcasting``: two tensors stretched along their size-1 dimensions, and their sum;
- ``module_tree``: a module and its submodules as a tree, with their names and parameter counts;
- ``shared_parameters``: the names under which a module reaches each of its parameter tensors.
"""
from __future__ import annotations

from .plotting import pyplot

__all__ = ["strided_views", "broadcasting", "module_tree", "shared_parameters"]


def _grid(ax, values, colours, title, faded=None) -> None:
    """Draw the (rows, cols) nested list ``values`` as labelled squares; ``colours`` has the same
    shape (RGBA); entries where ``faded`` is True are drawn pale (they repeat another entry)."""
    rows, cols = len(values), len(values[0]) if values else 0
    for i in range(rows):
        for j in range(cols):
            pale = faded is not None and faded[i][j]
            ax.add_patch(pyplot().Rectangle((j, rows - 1 - i), 1, 1, facecolor=colours[i][j], edgecolor="white",
                                            alpha=0.35 if pale else 1.0))
            ax.text(j + 0.5, rows - 0.5 - i, str(values[i][j]), ha="center", va="center", fontsize=8)
    ax.set_xlim(0, max(cols, 1))
    ax.set_ylim(0, max(rows, 1))
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(title, fontsize=9)


def strided_views(views: dict):
    """The storage of 2-D views of one tensor, and which storage element each entry reads.

    views: {title: tensor}, each (rows, cols) and sharing one storage. Entry ``[i, j]`` of a view
    reads storage element ``offset + i * stride[0] + j * stride[1]``; the top row draws the storage
    (its length taken from the first view), and each view's entries are coloured by the element they
    read, so that one element has one colour everywhere.
    """
    first = next(iter(views.values()))
    length = first.untyped_storage().nbytes() // first.element_size()
    flat = first.new_empty(0).set_(first.untyped_storage(), 0, (length,), (1,))   # (length,): the storage
    cmap = pyplot().get_cmap("tab20")
    fig = pyplot().figure(figsize=(max(2.2 * len(views), 0.4 * length), 3.0))
    grid = fig.add_gridspec(2, len(views), height_ratios=[1, 3])
    top = fig.add_subplot(grid[0, :])
    _grid(top, [flat.tolist()], [[cmap(k % 20) for k in range(length)]], "storage (element 0, 1, 2, ...)")
    for k, (title, view) in enumerate(views.items()):
        if view.ndim != 2:
            raise ValueError(f"strided_views: {title!r} must be a 2-D tensor, got shape {tuple(view.shape)}")
        (s0, s1), offset = view.stride(), view.storage_offset()
        index = [[offset + i * s0 + j * s1 for j in range(view.shape[1])] for i in range(view.shape[0])]
        ax = fig.add_subplot(grid[1, k])
        _grid(ax, view.tolist(), [[cmap(e % 20) for e in row] for row in index],
              f"{title}\nshape {tuple(view.shape)}, stride {view.stride()}" + (f", offset {offset}" if offset else ""))
        ax.set_xlim(0, max(v.shape[1] for v in views.values()))   # one cell size in every panel, top-aligned
        ax.set_ylim(view.shape[0] - max(v.shape[0] for v in views.values()), view.shape[0])
    fig.tight_layout()
    return fig


def broadcasting(a, b):
    """``a``, ``b`` and ``a + b`` for two tensors of at most 2 dimensions that broadcast.

    Each operand is drawn at the result's shape (rows, cols): its own entries solid, the entries that
    broadcasting repeats pale (they read the same memory: stride 0 in ``expand``). Titles give each
    operand's shape and the stride of its expanded view.
    """
    import torch

    result = a + b
    if result.ndim > 2:
        raise ValueError(f"broadcasting: draws at most 2 dimensions, the result has shape {tuple(result.shape)}")
    shape = (1,) * (2 - result.ndim) + tuple(result.shape)
    fig, axes = pyplot().subplots(1, 3, figsize=(1.0 + 0.45 * 3 * shape[1] + 1.2, 0.45 * shape[0] + 1.2))
    for ax, (name, t), colour in zip(axes, [("a", a), ("b", b)], ("tab:blue", "tab:orange")):
        rows, cols = (1,) * (2 - t.ndim) + tuple(t.shape)          # t's own sizes, as 2-D
        wide = t.reshape(rows, cols).expand(shape)
        _grid(ax, wide.tolist(), [[colour] * shape[1]] * shape[0],
              f"{name}: {tuple(t.shape)}\nexpanded: stride {wide.stride()}",
              faded=[[i >= rows or j >= cols for j in range(shape[1])] for i in range(shape[0])])
    _grid(axes[2], torch.as_tensor(result).reshape(shape).tolist(), [["tab:green"] * shape[1]] * shape[0],
          f"a + b: {tuple(result.shape)}")
    fig.tight_layout()
    return fig


def module_tree(module, highlight: str | None = None):
    """``module`` and its submodules as a tree, root on the left, leaves in a column on the right.

    Each node reads ``name: ClassName``, and its own parameter count (``recurse=False``) when it has
    parameters. ``highlight``: a qualified name such as ``"0.block1.0"``; the nodes on its path are
    coloured. A module reached twice is drawn twice.
    """
    nodes, children = [], {}   # nodes: (qualified name, short name, module, depth), depth first

    def walk(mod, qualified, name, depth):
        nodes.append((qualified, name, mod, depth))
        children[qualified] = []
        for child_name, child in mod.named_children():
            child_qualified = f"{qualified}.{child_name}" if qualified else child_name
            children[qualified].append(child_qualified)
            walk(child, child_qualified, child_name, depth + 1)

    walk(module, "", "(root)", 0)
    leaves = [qualified for qualified, *_ in nodes if not children[qualified]]
    position = {qualified: row for row, qualified in enumerate(leaves)}
    for qualified, *_ in reversed(nodes):   # a parent sits in the middle of its children
        if children[qualified]:
            position[qualified] = sum(position[k] for k in children[qualified]) / len(children[qualified])
    on_path = set()
    if highlight is not None:
        parts = highlight.split(".")
        on_path = {""} | {".".join(parts[:k]) for k in range(1, len(parts) + 1)}
    depth_max = max(n[3] for n in nodes)
    fig, ax = pyplot().subplots(figsize=(1.9 * (depth_max + 1), 0.24 * len(leaves) + 0.4))
    for qualified, name, mod, depth in nodes:
        y = -position[qualified]
        if qualified:
            parent = qualified.rpartition(".")[0]
            px, py = depth - 1, -position[parent]
            ax.plot([px + 0.55, px + 0.75, px + 0.75, depth], [py, py, y, y], color="grey", lw=0.7)
        count = sum(p.numel() for p in mod.parameters(recurse=False))
        label = f"{name}: {type(mod).__name__}" + (f"  ({count} params)" if count else "")
        ax.text(depth, y, label, va="center", fontsize=7,
                bbox=dict(boxstyle="round,pad=0.2", fc="moccasin" if qualified in on_path else "white", lw=0.6))
    ax.set_xlim(-0.1, depth_max + 1.2)
    ax.set_ylim(-len(leaves) + 0.5, 0.5)
    ax.axis("off")
    return fig


def shared_parameters(module):
    """Every qualified parameter name of ``module`` (left) and the parameter tensor it reaches
    (right, with its shape), joined by a line. A tensor reached under several names (tied, shared)
    is drawn in orange: several lines meet at it. Only a picture: it returns the figure, not the
    groups of names, which notebook 03's exercise ``tied_groups`` asks the student to compute."""
    names = list(module.named_parameters(remove_duplicate=False))
    tensors = []                                  # distinct Parameter objects, in order of first use
    for _, p in names:
        if not any(p is q for q in tensors):
            tensors.append(p)
    reached = [sum(p is q for _, q in names) for p in tensors]
    fig, ax = pyplot().subplots(figsize=(4.6, 0.26 * max(len(names), len(tensors)) + 0.5))
    left = {name: -row * len(tensors) / max(len(names), 1) for row, (name, _) in enumerate(names)}
    for row, (name, p) in enumerate(names):
        target = next(k for k, q in enumerate(tensors) if p is q)
        shared = reached[target] > 1
        ax.plot([0.3, 0.7], [left[name], -target], color="tab:orange" if shared else "grey", lw=1.5 if shared else 0.7)
        ax.text(0.28, left[name], name, ha="right", va="center", fontsize=8)
    for k, p in enumerate(tensors):
        ax.text(0.72, -k, f"Parameter {tuple(p.shape)}", va="center", fontsize=8,
                bbox=dict(boxstyle="round,pad=0.2", fc="moccasin" if reached[k] > 1 else "white", lw=0.6))
    ax.set_xlim(-0.2, 1.3)
    ax.set_ylim(-max(len(tensors), 1) + 0.4, 0.6)
    ax.axis("off")
    ax.set_title("names (named_parameters(remove_duplicate=False))  ->  parameter tensors", fontsize=8)
    return fig
