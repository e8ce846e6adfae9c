"""d2lite.diagrams: each figure is drawn from the numbers it is given (headless, Agg)."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.colors  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402

import d2lite  # noqa: E402


def teardown_function():
    plt.close("all")


def test_sync_timeline_totals():
    # No sync: the GPU is the bottleneck, 1 + 4 * 2 = 9 ms; a sync per step: 4 * (1 + 2) = 12 ms.
    fig = d2lite.sync_timeline(1.0, 2.0, steps=4)
    titles = [ax.get_title() for ax in fig.axes]
    assert titles == ["no sync: 9.0 ms for 4 steps", "a sync every step: 12.0 ms for 4 steps"], titles
    # Host-bound: without a sync the CPU's 4 * 2 ms plus the last GPU step, 9 ms; with one, 12 ms.
    titles = [ax.get_title() for ax in d2lite.sync_timeline(2.0, 1.0, steps=4).axes]
    assert titles == ["no sync: 9.0 ms for 4 steps", "a sync every step: 12.0 ms for 4 steps"], titles


def test_partitioning_has_three_panels():
    fig = d2lite.partitioning()
    assert [ax.get_title() for ax in fig.axes] == ["network partitioning", "layer-wise partitioning", "data parallelism"]


def test_collectives_bars_are_the_values():
    panels = {"before": [torch.tensor([1.0, 2.0]), torch.tensor([10.0, 20.0])],
              "after": [torch.tensor([11.0, 22.0]), torch.tensor([11.0, 22.0])]}
    fig = d2lite.collectives(panels)
    for ax, held in zip(fig.axes, panels.values()):
        heights = [patch.get_height() for patch in ax.patches]
        assert heights == torch.cat(held).tolist(), (ax.get_title(), heights)


def _box_colours(fig):
    return {t.get_text().splitlines()[-1]: matplotlib.colors.to_hex(t.get_bbox_patch().get_facecolor())
            for t in fig.axes[0].texts if t.get_bbox_patch() is not None}


def test_accelerator_path_colours_the_path_taken():
    on, off = matplotlib.colors.to_hex("moccasin"), matplotlib.colors.to_hex("white")
    cpu_build = _box_colours(d2lite.accelerator_path(None, None))
    assert cpu_build["cpu"] == on and cpu_build["(driver, a visible device)"] == off, cpu_build
    no_gpu = _box_colours(d2lite.accelerator_path(torch.device("cuda"), None))
    assert no_gpu["cpu"] == on and no_gpu["(driver, a visible device)"] == on, no_gpu
    gpu = _box_colours(d2lite.accelerator_path(torch.device("cuda"), torch.device("cuda:0")))
    assert gpu["cuda:0"] == on and gpu["cpu"] == off, gpu


def test_profile_summary_reads_a_real_profile():
    net = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2))
    X = torch.randn(4, 8)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        for _ in range(2):
            with torch.profiler.record_function("forward"):
                loss = net(X).sum()
            with torch.profiler.record_function("backward"):
                loss.backward()
    fig = d2lite.profile_summary(prof, phases=("forward", "backward"), top=3)
    left, right = fig.axes
    assert len(left.patches) == 3
    assert [label.get_text() for label in right.get_yticklabels()] == ["forward", "backward"]
    assert len(right.patches) > 0, "the operators inside each phase are drawn as bars"
