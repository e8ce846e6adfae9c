"""Explanatory diagrams of notebooks 04-06c, drawn from numbers a cell measured.

Each function draws one picture with pyplot and returns its ``Figure`` (the notebook calls
``plt.show()``), so that a cell shows its idea in one line instead of thirty of matplotlib:

- ``sync_timeline``: CPU and GPU work of a few training steps, without and with a host sync per step;
- ``partitioning``: the three ways to split a network over two devices;
- ``collectives``: what each process holds after ``all_gather``, ``broadcast`` and ``all_reduce``;
- ``accelerator_path``: how device-agnostic code picks its device, this machine's path in colour;
- ``profile_summary``: a profiler's operators with the most self time, and one step's timeline.
"""
from __future__ import annotations

from .plotting import pyplot

__all__ = ["sync_timeline", "partitioning", "collectives", "accelerator_path", "profile_summary"]


def _draw_steps(ax, t_host: float, t_gpu: float, sync: bool, steps: int, kernels: int) -> float:
    """Draw ``steps`` steps of ``kernels`` kernels each on ``ax``; return when the GPU finishes.

    The host's time of a step is spread evenly over its kernel launches, and the GPU starts each
    kernel as soon as it is queued and the one before it is done. With ``sync``, the host starts the
    next step only when the GPU has finished this one. Times in one unit (ms)."""
    launch, run = t_host / kernels, t_gpu / kernels
    cpu_free = gpu_free = 0.0
    for k in range(steps):
        for j in range(kernels):
            queued = cpu_free + (j + 1) * launch
            gpu_start = max(queued, gpu_free)
            for row, start, length, color in [(1, queued - launch, launch, "tab:blue"), (0, gpu_start, run, "tab:orange")]:
                ax.broken_barh([(start, length)], (row + 0.1, 0.8), facecolor=color, edgecolor="white")
            gpu_free = gpu_start + run
        ax.text(cpu_free + t_host / 2, 1.5, str(k + 1), ha="center", va="center", color="white")
        cpu_free = gpu_free if sync else cpu_free + t_host           # a sync waits for the GPU's queue
    ax.set_yticks([0.5, 1.5], ["GPU runs", "CPU enqueues"])
    return gpu_free


def sync_timeline(t_host_ms: float, t_gpu_ms: float, steps: int = 4, kernels: int = 6):
    """Two rows of ``steps`` training steps of ``kernels`` kernels each (CPU enqueues, GPU runs),
    without a sync and with a sync per step. Times in ms, per step; the titles give each schedule's
    total. Kernels start as soon as they are queued, so a sync per step costs the GPU about one
    launch per step (and the CPU one kernel's run), not a whole step's host time."""
    fig, axes = pyplot().subplots(2, 1, figsize=(8, 3.4), sharex=True)
    for ax, sync in zip(axes, (False, True)):
        total = _draw_steps(ax, t_host_ms, t_gpu_ms, sync, steps, kernels)
        ax.set_title(("a sync every step" if sync else "no sync") + f": {total:.2f} ms for {steps} steps", fontsize=10)
    axes[1].set_xlabel("time (ms)")
    fig.tight_layout()
    return fig


def _devices(ax, title: str, layout) -> None:
    """``layout``: for each of two devices, a list of (layer index, fraction of its width, label)."""
    ax.set_title(title, fontsize=10)
    colors = ["tab:blue", "tab:orange"]
    for dev, blocks in enumerate(layout):
        ax.add_patch(pyplot().Rectangle((0.02 + 0.5 * dev, 0.02), 0.46, 0.96, fill=False, ls="--", color=colors[dev]))
        ax.text(0.25 + 0.5 * dev, 0.93, f"device {dev}", ha="center", color=colors[dev], fontsize=9)
        for layer, width, label in blocks:
            x = 0.05 + 0.5 * dev
            ax.add_patch(pyplot().Rectangle((x, 0.1 + 0.2 * layer), 0.4 * width, 0.12, color=colors[dev], alpha=0.6))
            ax.text(x + 0.2 * width, 0.16 + 0.2 * layer, label, ha="center", va="center", fontsize=8)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.axis("off")


def partitioning():
    """Network partitioning, layer-wise partitioning and data parallelism of a 4-layer network on
    two devices, side by side."""
    fig, axes = pyplot().subplots(1, 3, figsize=(11, 3.2))
    _devices(axes[0], "network partitioning", [[(0, 1, "layer 1"), (1, 1, "layer 2")],
                                               [(2, 1, "layer 3"), (3, 1, "layer 4")]])
    _devices(axes[1], "layer-wise partitioning", [[(i, 0.5, f"L{i + 1} ½") for i in range(4)]] * 2)
    _devices(axes[2], "data parallelism", [[(i, 1, f"layer {i + 1}") for i in range(4)]] * 2)
    axes[0].annotate("", xy=(0.55, 0.5), xytext=(0.45, 0.36), arrowprops=dict(arrowstyle="->"))
    axes[0].text(0.5, 0.25, "activations", ha="center", fontsize=8)
    for layer in range(3):
        axes[1].annotate("", xy=(0.55, 0.3 + 0.2 * layer), xytext=(0.45, 0.22 + 0.2 * layer),
                         arrowprops=dict(arrowstyle="<->"))
    axes[2].text(0.5, 0.04, "half of each batch per device; gradients all-reduced", ha="center", fontsize=8)
    fig.tight_layout()
    return fig


def collectives(panels: dict):
    """One bar chart per panel. ``panels``: title -> list with, for each process, the 1-D tensor it
    holds (all of one length ``n``); bars of the processes side by side for each of the ``n`` entries."""
    import torch

    fig, axes = pyplot().subplots(1, len(panels), figsize=(3 * len(panels), 2.6), sharey=True, squeeze=False)
    for ax, (title, held) in zip(axes[0], panels.items()):
        for rank, values in enumerate(held):
            positions = torch.arange(len(values)) + 0.38 * (rank - (len(held) - 1) / 2)
            ax.bar(positions, values, width=0.36, label=f"process {rank}")
        ax.set_title(title, fontsize=9)
        ax.set_xticks(range(len(held[0])), [f"[{i}]" for i in range(len(held[0]))])
    axes[0][0].set_ylabel("value")
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    return fig


def accelerator_path(build, usable):
    """The two questions of ``torch.accelerator`` as boxes and arrows. ``build``: what
    ``current_accelerator()`` returned (a device or None); ``usable``: what
    ``current_accelerator(check_available=True)`` returned. The path taken is drawn in colour."""
    boxes = {  # name: (x, y, text)
        "build": (0.17, 0.5, f"current_accelerator()\nthis build supports:\n{build.type if build else 'none'}"),
        "usable": (0.5, 0.75, "is_available()?\n(driver, a visible device)"),
        "accelerator": (0.83, 0.75, f"computes on\n{usable if usable else 'cuda:0 / mps / xpu:0'}"),
        "cpu": (0.83, 0.25, "computes on\ncpu"),
    }
    taken = {("build", "usable"), ("usable", "accelerator")} if usable else \
        ({("build", "usable"), ("usable", "cpu")} if build else {("build", "cpu")})
    fig, ax = pyplot().subplots(figsize=(8, 2.8))
    drawn = {}
    for name, (x, y, text) in boxes.items():
        on_path = any(name in edge for edge in taken)
        drawn[name] = ax.text(x, y, text, ha="center", va="center", fontsize=9,
                              bbox=dict(boxstyle="round", fc="moccasin" if on_path else "white"))
    fig.canvas.draw()  # so that each box has its size, and arrows can stop at its edge
    for start, end, label in [("build", "usable", "a type"), ("build", "cpu", "None"),
                              ("usable", "accelerator", "yes"), ("usable", "cpu", "no")]:
        (x0, y0, _), (x1, y1, _) = boxes[start], boxes[end]
        on_path = (start, end) in taken
        ax.annotate("", xy=(x1, y1), xytext=(x0, y0),
                    arrowprops=dict(arrowstyle="->", lw=2.5 if on_path else 1, color="tab:orange" if on_path else "grey",
                                    patchA=drawn[start].get_bbox_patch(), patchB=drawn[end].get_bbox_patch()))
        ax.text((x0 + x1) / 2, (y0 + y1) / 2 + 0.05, label, ha="center", fontsize=8)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.axis("off")
    ax.set_title("DEVICE = torch.accelerator.current_accelerator(check_available=True) or torch.device('cpu')",
                 fontsize=9)
    return fig


def profile_summary(prof, phases=("forward", "backward", "optimizer"), top: int = 8):
    """Left: the ``top`` operators of a ``torch.profiler.profile`` with the most self CPU time.
    Right: the last recorded occurrence of each ``record_function`` label in ``phases``, one row
    each, with the operators directly inside it as bars (ms since the first phase began)."""
    averages = [e for e in prof.key_averages() if not e.is_user_annotation]
    heaviest = sorted(averages, key=lambda e: e.self_cpu_time_total, reverse=True)[:top]
    rows = [e for e in prof.events() if e.name in phases][-len(phases):]
    step_start = rows[0].time_range.start
    fig, (left, right) = pyplot().subplots(1, 2, figsize=(11, 3.4), gridspec_kw={"width_ratios": [1, 1.4]})
    left.barh([e.key.replace("aten::", "") for e in heaviest], [e.self_cpu_time_total / 1e3 for e in heaviest])
    left.set(xlabel="self CPU time, ms (all profiled steps)", title="Operators with the most self time")
    left.invert_yaxis()
    colors = {}
    for row, phase in enumerate(rows):
        for child in phase.cpu_children:
            start, width = (child.time_range.start - step_start) / 1e3, child.time_range.elapsed_us() / 1e3
            name = child.name.replace("autograd::engine::evaluate_function: ", "").replace("aten::", "")
            right.barh(row, width, left=start, color=colors.setdefault(name, f"C{len(colors) % 10}"),
                       edgecolor="white", linewidth=0.5)
            if width > 0.12 * phase.time_range.elapsed_us() / 1e3:    # name the long ones
                right.text(start + width / 2, row, name, ha="center", va="center", fontsize=8,
                           rotation=90 if width < 1.5 else 0)
    right.set(yticks=range(len(rows)), yticklabels=[p.name for p in rows], xlabel="ms since the step began",
              title="One training step")
    right.invert_yaxis()
    fig.tight_layout()
    return fig
