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
    # GPU-bound, 4 steps of 4 kernels: a launch every 0.25 ms, each kernel runs 0.5 ms. No sync:
    # the first kernel is queued at 0.25 ms and the GPU never waits again, 0.25 + 16 * 0.5 = 8.25 ms.
    # A sync per step: each step waits for its first launch, 4 * (0.25 + 4 * 0.5) = 9 ms.
    fig = d2lite.sync_timeline(1.0, 2.0, steps=4, kernels=4)
    titles = [ax.get_title() for ax in fig.axes]
    assert titles == ["no sync: 8.25 ms for 4 steps", "a sync every step: 9.00 ms for 4 steps"], titles
    # Host-bound: a launch every 0.5 ms, kernels of 0.25 ms. No sync: the last of 16 launches at
    # 8 ms, done at 8.25 ms. A sync per step: the host waits for each step's last kernel,
    # 4 * (4 * 0.5 + 0.25) = 9 ms. Either way the sync costs one launch or one kernel per step.
    titles = [ax.get_title() for ax in d2lite.sync_timeline(2.0, 1.0, steps=4, kernels=4).axes]
    assert titles == ["no sync: 8.25 ms for 4 steps", "a sync every step: 9.00 ms for 4 steps"], titles


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
