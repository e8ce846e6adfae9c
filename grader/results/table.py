"""The grade table autograde prints: student x assignment scores, then what needs attention and
each submission's failed tests (the reasons themselves are in each student's feedback)."""
from __future__ import annotations

from pathlib import Path

from ..authoring.coursedir import CourseDir
from ..engine.outputs import printable
from .gradebook import Outcome

__all__ = ["ATTENTION", "grade_table"]

ATTENTION = ("timeout", "crashed", "not run", "missing")  # beyond a wrong answer


def grade_table(course: CourseDir | Path, results: list[Outcome], students: list[str] | None = None) -> str:
    """The table; ``students``: only these rows (``autograde --student``), by default everyone collected."""
    course = course if isinstance(course, CourseDir) else CourseDir(Path(course))
    names = sorted({o.assignment for o in results}) or course.assignments()
    everyone = {o.student for o in results} | set(course.students())
    rows = sorted(everyone & set(students)) if students else sorted(everyone)
    by = {(o.student, o.assignment): o for o in results}
    width = max([len("student"), *(len(printable(s)) for s in rows)])
    lines = ["student".ljust(width) + "".join(f"  {n:>14}" for n in names)]
    attention, failures = [], []
    for student in rows:
        cells = []
        for name in names:
            o = by.get((student, name))
            cells.append(f"  {f'{o.score:g}/{o.max_score:g}' if o else '-':>14}")
            where = f"{student} / {name}"
            if o is None:
                attention.append(f"{where}: nothing submitted")
                continue
            reasons = list(o.problems) + [f"{t['grade_id']}: {t['status']} - {t['reason']}" for t in o.tests
                                          if t["status"] in ATTENTION and t["status"] != "missing"]
            attention += [f"{where}: {r}" for r in dict.fromkeys(reasons)]
            failures += _failures(where, o.tests)
        lines.append(printable(student).ljust(width) + "".join(cells))
    if attention:
        lines += ["", "needs attention:"] + [f"  {line}" for line in attention]
    if failures:
        lines += ["", "failed tests (reasons are in each student's feedback):"] + [f"  {line}" for line in failures]
    return "\n".join(map(printable, lines))  # student ids and reasons: no escape sequence reaches the terminal


def _failures(where: str, tests: list[dict]) -> list[str]:
    """One line per submission: stubs left as released are counted, other failures named."""
    failed = [t for t in tests if t["status"] in ("failed", "error")]
    untouched = [t for t in failed if "NotImplementedError" in t["reason"]]
    named = [f"{t['grade_id']} ({t['reason'][:90]})" for t in failed if t not in untouched]
    parts = named[:3] + ([f"{len(named) - 3} more"] if len(named) > 3 else [])
    if untouched:
        parts.append(f"{len(untouched)} not attempted")
    return [f"{where}: " + "; ".join(parts)] if parts else []
