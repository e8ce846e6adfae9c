"""What ``course-grader collect`` prints: one line per notebook or refused upload, then the counts.

Lines are sorted by student (by upload for refusals that name no assignment), so each problem
stands on the line of the student and notebook it concerns, worded for the instructor::

    ann / 01_tensors: collected (2026-11-25 20:41:11.378764 UTC)
    ann / 02_autograd: collected, replacing the earlier one (kept in replaced/ann/02_autograd/...)
    fay / 01_tensors: REJECTED, ask the student to re-submit: 01_tensors.ipynb is not a readable ...
    mallory.zip: REJECTED: ...
    1 notebook(s) collected, 1 unchanged, 2 rejected

The lines hold students' text (ids, file names): the caller makes them printable.
"""
from __future__ import annotations

from .collect import INBOX_LAYOUT, CollectReport

__all__ = ["collect_lines"]


def _renamed(item) -> str:
    """``; renamed.ipynb recognised by its cells as 01_tensors.ipynb`` for a notebook matched by its cells."""
    return "".join(f"; {where} recognised by its cells as {name}.ipynb" for where, name in item.by_cells)


def collect_lines(report: CollectReport, inbox: str) -> list[str]:
    """The lines of the collect summary; ``inbox``: the inbox as the user named it."""
    stored = {item.where: item for item in report.imported if item.rejected}
    lines: list[tuple[str, str]] = []  # (sort key, line)
    for item in report.accepted:
        name = f"{item.student} / {item.assignment}"
        if item.replaced:
            lines.append((name, f"{name}: collected ({item.timestamp}), replacing a different notebook "
                                f"collected earlier (kept in {item.replaced})" + _renamed(item)))
        else:
            lines.append((name, f"{name}: collected ({item.timestamp})" + _renamed(item)))
    for item in report.unchanged:
        name = f"{item.student} / {item.assignment}"
        lines.append((name, f"{name}: unchanged, the same notebook as collected before ({item.timestamp})"
                            + _renamed(item)))
    for where in report.ignored:
        lines.append((where, f"{where}: ignored, not a notebook (only .ipynb files are collected)"))
    for refused in report.rejected:
        item = stored.get(refused.where)
        if item is not None:
            name = f"{item.student} / {item.assignment}"
            lines.append((name, f"{name}: REJECTED, ask the student to re-submit ({refused.where}): {refused.reason}"
                                + (f" (the notebook it replaced is kept in {item.replaced})" if item.replaced else "")))
        else:
            lines.append((refused.where, f"{refused.where}: REJECTED: {refused.reason}"))
    out = [line for _, line in sorted(lines, key=lambda pair: pair[0])]
    if not (report.imported or report.unchanged or report.rejected):
        out.append(f"nothing to collect in {inbox}: it should hold {INBOX_LAYOUT}")
    if report.loose and not (report.accepted or report.unchanged):
        example = report.loose[0]
        out.append(f"{inbox} holds notebooks itself ({example}{', ...' if len(report.loose) > 1 else ''}): if it is "
                   "one student's folder, collect the folder above it, which holds one folder per student; if it "
                   "is an export with one file per student (ann_01_tensors.ipynb), move each student's files into "
                   f"a folder named by the student id ({inbox}/ann/01_tensors.ipynb) and collect again")
    counts = [f"{len(report.accepted)} notebook(s) collected"]
    if report.unchanged:
        counts.append(f"{len(report.unchanged)} unchanged")
    replaced = sum(bool(item.replaced) for item in report.imported)
    if replaced:
        counts.append(f"{replaced} replacing an earlier one")
    counts.append(f"{len(report.rejected)} rejected")
    out.append(", ".join(counts))
    return out
