"""Animator: d2l's attributes and add() semantics, silent without a display, live in a kernel
as ONE output updated in place, throttled, always showing the final points, figure closed."""
import base64
import gc
import hashlib
import textwrap

import matplotlib.image
import matplotlib.pyplot as plt
import nbformat
import numpy as np
import pytest
import torch
from nbclient import NotebookClient

import d2lite
from d2lite.unattended import HEADLESS_ENV


class RecordingAnimator(d2lite.Animator):
    """Live mode with the notebook replaced by a list of the PNGs it would have shown."""

    def __init__(self, *args, **kwargs):
        self.shown = []
        super().__init__(*args, display=True, **kwargs)

    def _publish(self, png):
        self.shown.append(png)


def test_add_follows_d2l_semantics():
    animator = d2lite.Animator(display=False)
    assert animator.X is None and animator.Y is None
    animator.add(1, 0.5)                       # a number: one series
    animator.add(2, torch.tensor(0.25))        # a 0-d tensor is read as a number
    assert animator.X == [[1, 2]] and animator.Y == [[0.5, 0.25]]
    animator.add(np.float32(3), np.array(0.125))   # numpy scalars and 0-d arrays too
    assert animator.X == [[1, 2, 3]] and animator.Y == [[0.5, 0.25, 0.125]]

    animator = d2lite.Animator(display=False)
    animator.add(1, (0.9, 0.1, None))          # one x shared by three series; None skips
    animator.add(2, (0.8, 0.2, 0.7))
    animator.add([3, 3, 3], [0.7, 0.3, 0.75])  # or one x per series
    assert animator.X == [[1, 2, 3], [1, 2, 3], [2, 3]]
    assert animator.Y == [[0.9, 0.8, 0.7], [0.1, 0.2, 0.3], [0.7, 0.75]]
    with pytest.raises(ValueError, match="2 x values for 3 y values"):
        animator.add([1, 2], [1, 2, 3])


def test_headless_animator_is_silent_and_leaves_pyplot_alone(capsys):
    before = plt.get_fignums()
    with d2lite.Animator(xlabel="epoch", legend=["a", "b"]) as animator:
        assert not animator.live, "pytest has no notebook display"
        for epoch in range(20):
            animator.add(epoch, (epoch, 2 * epoch))
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""
    assert plt.get_fignums() == before, "no pyplot figure is created, so none can leak"


@pytest.mark.parametrize("variable", HEADLESS_ENV)
def test_grading_and_ci_variables_turn_the_display_off(monkeypatch, variable):
    for name in HEADLESS_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(variable, "1")
    assert not d2lite.live_display_available()
    assert not d2lite.Animator().live
    assert d2lite.Animator(display=True).live, "an explicit argument overrides the detection"


def test_fig_and_axes_show_every_series_with_cycled_formats():
    animator = d2lite.Animator(legend=list("abcde"), fmts=("-", "r:"), display=False)
    for x in range(4):
        animator.add(x, [x + k for k in range(5)])
    (ax,) = animator.axes
    assert len(ax.lines) == 5
    for k, line in enumerate(ax.lines):
        xs, ys = line.get_data()
        assert list(xs) == animator.X[k] and list(ys) == animator.Y[k]
        assert line.get_linestyle() == ("-" if k % 2 == 0 else ":")
    assert [t.get_text() for t in ax.get_legend().get_texts()] == list("abcde")
    assert animator.fig is ax.figure


def test_axes_are_configured_like_d2l():
    animator = d2lite.Animator(xlabel="epoch", ylabel="loss", xlim=[1, 10], ylim=(0.1, 2),
                               yscale="log", nrows=2, ncols=2, display=False)
    assert len(animator.axes) == 4, "all subplots, flattened; series are drawn on axes[0]"
    ax = animator.axes[0]
    assert (ax.get_xlabel(), ax.get_ylabel(), ax.get_yscale()) == ("epoch", "loss", "log")
    animator.add(5, 1.0)
    assert tuple(animator.axes[0].get_xlim()) == (1, 10) and tuple(ax.get_ylim()) == (0.1, 2)


@pytest.mark.parametrize("figsize", [(3.5, 2.5), (6, 3)])
def test_labels_and_tick_labels_fit_inside_the_figure(figsize):
    animator = d2lite.Animator(xlabel="epoch", ylabel="loss", figsize=figsize, display=False)
    for x in range(10):
        animator.add(x, 1000 / (x + 1))
    fig = animator.fig
    fig.canvas.draw()
    drawn = animator.axes[0].get_tightbbox(fig.canvas.get_renderer())  # labels, ticks, lines
    assert drawn.x0 >= 0 and drawn.y0 >= 0, f"axis labels cut off at the left/bottom: {drawn}"
    assert drawn.x1 <= fig.bbox.x1 and drawn.y1 <= fig.bbox.y1, f"cut off at the right/top: {drawn}"


def test_save_writes_a_png_of_the_figure_size(tmp_path):
    animator = d2lite.Animator(legend=["x", "y", "z"], figsize=(3.5, 2.5), display=False)
    for x in range(10):
        animator.add(x, (x, x ** 2, -x))
    path = animator.save(tmp_path / "curves.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    height, width, _ = matplotlib.image.imread(path).shape
    assert (width, height) == (350, 250), "figsize inches times dpi=100"


def test_close_stops_the_animator():
    animator = d2lite.Animator(display=False)
    animator.add(0, 1)
    animator.close()
    animator.close()  # twice is fine
    assert animator.closed
    with pytest.raises(RuntimeError, match="closed"):
        animator.add(1, 2)


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


@pytest.fixture
def clock(monkeypatch):
    fake = FakeClock()
    monkeypatch.setattr(d2lite.animator, "_clock", fake)
    return fake


def test_live_redraws_are_throttled_and_the_final_points_are_shown(clock):
    animator = RecordingAnimator()
    for x in range(100):              # all at t = 0: no time has passed, so no budget to draw
        animator.add(x, (x, -x))
    assert animator.shown == []
    animator.close()
    assert len(animator.shown) == 1, "closing draws the points not shown yet"
    assert animator.shown[-1] == animator.png(), "what is shown last is the final plot"
    assert animator.X[0] == list(range(100))


def test_drawing_stays_within_max_overhead_of_the_elapsed_time(clock):
    animator = RecordingAnimator(min_interval=0.5, max_overhead=0.01)

    def publish(png):                 # every redraw takes 0.1 s
        clock.now += 0.1
        animator.shown.append(png)
    animator._publish = publish

    def add_at(t):
        clock.now = t
        animator.add(t, t)
        return len(animator.shown)

    # A redraw must leave room for itself and the final one: spent + 2 * cost <= 1 % of the
    # time since creation. Before the first redraw the cost is guessed: 0.2 s, so t >= 40 s.
    assert animator.FIRST_DRAW_GUESS == 0.2
    assert [add_at(t) for t in (5, 20, 39.9)] == [0, 0, 0]
    assert add_at(40) == 1            # spent 0.1 s; from now on the cost is the measured 0.1 s
    assert add_at(40.3) == 1          # only 0.2 s after the last redraw: min_interval
    assert add_at(40.7) == 2          # 0.1 + 0.2 <= 0.407; spent 0.2 s
    assert add_at(41.5) == 3          # 0.2 + 0.2 <= 0.415; spent 0.3 s
    assert add_at(45) == 3            # 0.3 + 0.2 >  0.45
    assert add_at(50.1) == 4          # 0.3 + 0.2 <= 0.501; spent 0.4 s
    assert add_at(51) == 4            # 0.4 + 0.2 >  0.51: waits for the final redraw ...
    animator.close()
    assert len(animator.shown) == 5   # ... spent 0.5 s in 51.1 s: within 1 %
    assert 5 * 0.1 <= 0.01 * clock.now


def test_redraws_are_at_least_min_interval_apart(clock):
    animator = RecordingAnimator(min_interval=0.5, max_overhead=1.0)
    clock.now = 1.0
    animator.add(0, 0)                # redraws take no time here, so only min_interval limits
    clock.now = 1.4
    animator.add(1, 1)
    clock.now = 1.5
    animator.add(2, 2)
    assert len(animator.shown) == 2


def test_headless_animator_makes_no_figure_until_asked():
    animator = d2lite.Animator(display=False)
    for x in range(10):
        animator.add(x, x)
    assert animator._fig is None, "storing points is all a headless animator does"
    assert len(animator.axes[0].lines) == 1


def test_an_animator_left_unclosed_in_a_function_is_drawn_when_the_cell_ends(clock):
    shown = []

    def train():  # d2l style: a local animator, never closed
        animator = RecordingAnimator()
        animator.shown = shown
        for x in range(5):
            animator.add(x, x)

    train()
    gc.collect()
    assert shown == []
    d2lite.animator._flush_pending()  # what the notebook's post_run_cell event calls
    assert len(shown) == 1
    d2lite.animator._flush_pending()
    assert len(shown) == 1, "nothing new, nothing drawn"


def test_flush_only_redraws_when_there_is_something_new(clock):
    animator = RecordingAnimator()
    animator.add(0, 0)
    animator.flush()
    assert len(animator.shown) == 1
    animator.add(1, 1)
    animator.flush()
    assert len(animator.shown) == 2


def test_bad_arguments():
    with pytest.raises(ValueError, match="fmts"):
        d2lite.Animator(fmts=())
    with pytest.raises(ValueError, match="max_overhead"):
        d2lite.Animator(max_overhead=0)


NOTEBOOK = [
    """
    import hashlib, os
    import torch
    import d2lite
    animator = d2lite.Animator(legend=["a", "b", "c"])
    print("live", animator.live)
    """,
    """
    print("before")
    for x in range(30):
        animator.add(x, (x, x ** 0.5, -x))
    print("after")
    """,
    "print(hashlib.sha256(animator.png()).hexdigest())",
    """
    from torch.utils.data import DataLoader, TensorDataset
    torch.manual_seed(0)
    X = torch.rand(64, 1, 28, 28); y = torch.randint(0, 10, (64,))
    it = DataLoader(TensorDataset(X, y), batch_size=16)
    history = d2lite.train_ch6(d2lite.lenet(), it, it, 2, 0.1, "cpu", progress=False)
    """,
    """
    os.environ["NBGRADER_EXECUTION"] = "autograde"
    quiet = d2lite.Animator()
    for x in range(5):
        quiet.add(x, x)
    quiet.close()
    """,
]


@pytest.fixture
def executed_notebook(monkeypatch, tmp_path):
    for name in HEADLESS_ENV:
        monkeypatch.delenv(name, raising=False)
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(textwrap.dedent(src).strip()) for src in NOTEBOOK]
    NotebookClient(nb, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    return nb


def images(cell):
    return [o for o in cell.outputs if o.output_type == "display_data" and "image/png" in o.data]


def text(cell):
    return "".join(o.text for o in cell.outputs if o.output_type == "stream")


def test_in_a_kernel_one_output_is_updated_in_place_and_ends_with_the_final_plot(executed_notebook):
    setup, adding, digest, training, quiet = executed_notebook.cells
    assert "live True" in text(setup) and not images(setup)
    (shown,) = images(adding)  # 30 adds, one output, no clear_output: the prints stay
    assert text(adding) == "before\nafter\n"
    assert hashlib.sha256(base64.b64decode(shown.data["image/png"])).hexdigest() == text(digest).strip(), \
        "after the cell ends the output shows the plot with every point"
    assert len(images(training)) == 1, "train_ch6 draws its curves in a single output"
    assert "training on cpu" in text(training) and "examples/sec on cpu" in text(training)
    assert quiet.outputs == [], "under nbgrader the animator is silent"
