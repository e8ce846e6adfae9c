"""The class report's figures: matplotlib (Agg, no display), saved as PNG, each with its alt text.

Every figure is readable in grey: bars carry hatching and their value as a label, never colour
alone. Each function writes one PNG and returns a :class:`Figure` (its file name and alt text);
the report page (:mod:`grader.results.report`) places it.

    fig = score_histogram(scores=[3.0, 5.5], max_score=6, title="01_tensors", path=folder / "a.png")
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["Figure", "score_histogram", "share_bars", "time_boxes"]

HATCHES = ("//", "..", "xx", "\\\\", "++", "oo")


@dataclass
class Figure:
    path: Path
    alt: str


def _pyplot():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=80)
    _pyplot().close(fig)


def _margins(fig, labels: list[str]) -> None:
    """Room on the left for the longest label (8-point text, about 5.5 pixels a character at 80 dpi)."""
    width = fig.get_figwidth() * 80
    fig.subplots_adjust(left=min(0.5, (12 + 5.5 * max(map(len, labels), default=4)) / width), right=0.95,
                        top=1 - 0.35 / fig.get_figheight(), bottom=0.55 / fig.get_figheight())


def score_histogram(scores: list[float], max_score: float, title: str, path: Path) -> Figure:
    """scores: (n,) totals of the graded submissions, 0..max_score. One bar per score band."""
    plt = _pyplot()
    bins = max(1, min(20, int(max_score) or 1))
    edges = [max_score * i / bins for i in range(bins + 1)]
    fig, ax = plt.subplots(figsize=(6, 2.8))
    counts, _, bars = ax.hist(scores, bins=edges, color="0.75", edgecolor="black", hatch="//")
    for bar, count in zip(bars, counts):
        if count:
            ax.annotate(f"{int(count)}", (bar.get_x() + bar.get_width() / 2, count), ha="center", va="bottom",
                        fontsize=8)
    ax.set(xlabel=f"score (out of {max_score:g})", ylabel="submissions", title=f"{title}: scores")
    ax.set_xlim(0, max_score)
    fig.subplots_adjust(left=0.12, right=0.97, top=0.88, bottom=0.18)  # fixed: tight_layout costs seconds
    _save(fig, path)
    median = sorted(scores)[len(scores) // 2] if scores else 0
    alt = (f"Histogram of the scores of {len(scores)} graded submissions of {title}, out of {max_score:g}; "
           f"median {median:g}, lowest {min(scores, default=0):g}, highest {max(scores, default=0):g}.")
    return Figure(path, alt)


def share_bars(labels: list[str], shares: list[float], title: str, what: str, path: Path) -> Figure:
    """labels, shares: (k,), shares in 0..1, drawn top to bottom in the order given (hardest first)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 0.8 + 0.32 * max(1, len(labels))))
    y = list(range(len(labels)))[::-1]
    bars = ax.barh(y, [100 * s for s in shares], color="0.8", edgecolor="black")
    for i, (bar, share) in enumerate(zip(bars, shares)):
        bar.set_hatch(HATCHES[i % len(HATCHES)])
        ax.annotate(f"{100 * share:.0f} %", (100 * share, bar.get_y() + bar.get_height() / 2), xytext=(3, 0),
                    textcoords="offset points", va="center", fontsize=8)
    ax.set_yticks(y, labels, fontsize=8)
    ax.set(xlim=(0, 112), xlabel=f"% of students who {what}", title=title)
    _margins(fig, labels)
    _save(fig, path)
    listed = "; ".join(f"{label} {100 * share:.0f} %" for label, share in zip(labels, shares))
    return Figure(path, f"Bar chart, {title}, % of students who {what}, hardest first: {listed}.")


def time_boxes(names: list[str], seconds: list[list[float]], path: Path) -> Figure:
    """names: (a,) assignments; seconds: (a, n_i) grading seconds of each graded submission."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 0.9 + 0.45 * max(1, len(names))))
    kept = [(n, s) for n, s in zip(names, seconds) if s]
    if kept:
        box = ax.boxplot([s for _, s in kept], orientation="horizontal", patch_artist=True, widths=0.5)
        for i, patch in enumerate(box["boxes"]):
            patch.set(facecolor="0.85", hatch=HATCHES[i % len(HATCHES)])
        ax.set_yticks(range(1, len(kept) + 1), [n for n, _ in kept], fontsize=8)
        ax.invert_yaxis()
    ax.set(xlabel="grading seconds per submission", title="grading time per notebook")
    _margins(fig, names)
    _save(fig, path)
    parts = [f"{n}: median {sorted(s)[len(s) // 2]:.1f} s, longest {max(s):.1f} s" for n, s in kept]
    return Figure(path, "Box plot of the grading seconds per submission, by notebook: "
                  + ("; ".join(parts) if parts else "no grading time recorded") + ".")
