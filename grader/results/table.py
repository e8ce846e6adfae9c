"""The grade table autograde prints: student x assignment scores, then what needs attention, who
has not submitted, and each submission's failed tests with their reasons in full. "Needs attention" begins
with what the solution's own run reported (:func:`solution_problems`).

A missing submission is a problem only once its assignment is due: past the gradebook's due date
each absent student gets a "nothing submitted" line under "needs attention"; before it, or when
the assignment has no due date, one line per assignment counts the students who have not
submitted (a class of 200 does not get 200 lines for homework not yet due). A student's own due
date is their extension when the semester file gives one (:mod:`grader.authoring.semester`).

A late submission's cell shows its score and the penalty (``6/6 late -1.2``: the final score
is 4.8), and a "late submissions" section says by how much each was late. A submission with a
hand-graded answer not scored yet in formgrader shows the points so far and those awaiting
(``3 + 10 awaiting``) and is listed under "awaiting manual grading"; once scored, the score includes it."""
from __future__ import annotations

import math
from datetime import datetime, timezone
from pathlib import Path

from ..authoring.coursedir import CourseDir
from ..engine.verdict.references import References, sha256_of
from ..engine.verdict.result import Outcome, TestResult
from ..engine.verdict.seal import course_key
from ..engine.verdict.statuses import LEFT_AS_RELEASED
from ..terminal import printable
from .foreign import INSTRUCTOR_NOTE, foreign_notebooks
from .late import lateness, semester_of
from .manual import AWAITING, UNDER_REVIEW, awaiting, final_score, manual_scores, score_key, score_so_far, under_review

__all__ = ["ATTENTION", "grade_table", "solution_problems"]

NOT_FOUND = "was not found in the submission"  # merge's problem for an answer cell the notebook lacks
NOT_ATTEMPTED = "NotImplementedError"  # in the reason of a test whose stub was left as released
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
    attention, failures, absent, late, by_hand, review = [], [], {name: 0 for name in names}, [], [], []
    due, now, semester = due_dates(course), datetime.now(timezone.utc), semester_of(course)
    due |= semester.due
    scored = manual_scores(course)
    for student in rows:
        cells = []
        for name in names:
            o = by.get((student, name))
            where, own = f"{student} / {name}", semester.due_for(student, name, due.get(name))
            by_instructor = scored.get((student, name), {})
            final = final_score(o.score, o.tests, by_instructor) if o else None
            seconds, penalty = lateness(semester, student, name, o.timestamp, due.get(name),
                                        o.score if final is None else final, o.max_score) if o else (0.0, 0.0)
            score = "-" if o is None else f"{final:g}/{o.max_score:g}" if final is not None else \
                "{:g} + {:g} awaiting".format(*score_so_far(o.score, o.tests, by_instructor))
            score += f" late -{penalty:g}" if penalty else ""
            flagged = under_review(o.tests, by_instructor) if o else []
            score += " review" if flagged else ""
            cells.append(f"  {score:>14}")
            if seconds and not _refused(course, student, name):  # a refused upload is no late submission
                late.append(f"{where}: {_duration(seconds)} late (due {own:%Y-%m-%d %H:%M} UTC"
                            + (", extended" if (student, name) in semester.extensions else "")
                            + f"), penalty {penalty:g} of {o.max_score:g} points")
            if o and (left := awaiting(o.tests, by_instructor)):
                by_hand.append(f"{where}: {', '.join(left)}")
            if flagged:
                review += [f"{where}: {t.grade_id}: {t.review}" for t in o.tests if t.grade_id in flagged]
            if o is None:
                if own is not None and own <= now:
                    attention.append(f"{where}: nothing submitted (due {own:%Y-%m-%d %H:%M} UTC)")
                else:
                    absent[name] += 1
                continue
            foreign = foreign_notebooks(course, student, name)
            problems = [p for p in o.problems if not (foreign and NOT_FOUND in p)]  # one line says it for them all
            reasons = problems + [f"{score_key(t)}: {t.status} - {t.reason}" for t in o.tests
                                          if t.status in ATTENTION and t.status != "missing"]
            reasons += [INSTRUCTOR_NOTE.format(names=", ".join(f"{n}.ipynb" for n in foreign))] if foreign else []
            attention += [f"{where}: {_for_instructor(r)}" for r in dict.fromkeys(reasons)]
            failures += [] if foreign else _failures(where, o.tests)  # not ten "not attempted": said once above
        lines.append(printable(student).ljust(width) + "".join(cells))
    if late:
        lines += ["", "late submissions:"] + [f"  {line}" for line in late]
    attention = solution_problems(course, names) + attention
    if attention:
        lines += ["", "needs attention:"] + [f"  {line}" for line in attention]
    waiting = [f"{name}: {n} of {len(rows)} student(s) "
               + (f"(due {due[name]:%Y-%m-%d %H:%M} UTC)" if name in due else "(no due date set in the gradebook)")
               for name, n in absent.items() if n]
    if waiting:
        lines += ["", "not submitted yet:"] + [f"  {line}" for line in waiting]
    if by_hand:
        lines += ["", f"{AWAITING} (score these answers in formgrader):"] + [f"  {line}" for line in by_hand]
    if review:
        lines += ["", f"{UNDER_REVIEW}: the points the behaviour earned are counted until you confirm (a lower manual "
                      "score) or clear (the same score) each finding in formgrader:"] + [f"  {line}" for line in review]
    if failures:
        lines += ["", "failed tests (the reason as the student reads it in their feedback):"] \
            + [f"  {line}" for line in failures]
    return "\n".join(map(printable, lines))  # student ids and reasons: no escape sequence reaches the terminal


def _refused(course: CourseDir, student: str, assignment: str) -> bool:
    """Whether collect refused every notebook of this submission (it holds only the record of why)."""
    return bool(course.rejections(student, assignment)) and not any(
        course.submitted_notebook(student, assignment, nb).is_file() for nb in course.notebooks(assignment))


def _duration(seconds: float) -> str:
    """``2 d 3 h 15 min`` (minutes rounded up: one second late is 1 min late)."""
    minutes = math.ceil(seconds / 60)
    days, rest = divmod(minutes, 1440)
    parts = [f"{days} d" if days else "", f"{rest // 60} h" if rest // 60 else "", f"{rest % 60} min" if rest % 60 else ""]
    return " ".join(p for p in parts if p)


def _whole_words(text: str, limit: int = 400) -> str:
    """``text``, or when longer than ``limit`` its words up to there and an ellipsis (never cut mid-word)."""
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0] if " " in text[:limit] else text[:limit]
    return f"{cut} ..."


def _for_instructor(problem: str) -> str:
    """A problem as the instructor reads it: collect's refusal says whom to ask."""
    prefix = "at collect: "
    return f"rejected at collect, ask the student to re-submit: {problem[len(prefix):]}" \
        if problem.startswith(prefix) else problem


def solution_problems(course: CourseDir, names: list[str]) -> list[str]:
    """What the trusted run of each assignment's solution reported beside its values (a cell that timed out,
    crashed or printed too much), read from its references file: grading stops after a notebook's last graded
    test, so a problem in a later cell shows in no student's grading, and is said here, once per notebook.
    A file without the course's seal (no key yet, or changed since), or made from an earlier version of the source
    notebook (fixed since, not yet run again), says nothing: autograde computes it again."""
    try:
        key = course_key(course.key) if course.key.is_file() else None
    except (OSError, ValueError):
        key = None
    if key is None:
        return []
    lines = []
    for name in names:
        for notebook in course.notebooks(name):
            path = course.references(name, notebook)
            try:
                references = References.load(path, key) if path.is_file() else None
                current = references is not None and \
                    references.source_sha256 == sha256_of(course.source_notebook(name, notebook))
            except (ValueError, OSError):
                continue
            problems = references.problems if current else []
            where = name if notebook == name else f"{name} / {notebook}.ipynb"
            lines += [f"{where}: the solution's own run: {problem}; fix the source notebook (`course-grader check` "
                      "fails on it)" for problem in problems]
    return lines


def due_dates(course: CourseDir) -> dict[str, datetime]:
    """Assignment -> its due date in the gradebook (UTC); those without one are left out."""
    if not course.gradebook.is_file():
        return {}
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course.gradebook}") as gb:
        return {a.name: (a.duedate.replace(tzinfo=timezone.utc) if a.duedate.tzinfo is None
                         else a.duedate.astimezone(timezone.utc)) for a in gb.assignments if a.duedate}


def attempted(test: TestResult) -> bool:
    """The student ran something for this test (not missing, not the released stub, not a hand-graded
    answer left as released)."""
    return (test.status != "missing" and NOT_ATTEMPTED not in test.reason
            and test.reason != LEFT_AS_RELEASED)


def _failures(where: str, tests: list[TestResult]) -> list[str]:
    """Up to 3 lines per submission, each failed test with its whole reason; stubs left as released
    are counted on one line."""
    failed = [t for t in tests if t.status in ("failed", "error")]
    untouched = [t for t in failed if not attempted(t)]
    named = [f"{where}: {score_key(t)}: {_whole_words(t.reason)}" for t in failed if t not in untouched]
    lines = named[:3] + ([f"{where}: and {len(named) - 3} more failed test(s), listed in the feedback"]
                         if len(named) > 3 else [])
    if untouched:
        lines.append(f"{where}: {len(untouched)} test(s) of exercises not attempted (left as released)")
    return lines
