"""What the class report shows, read from what grading left behind (nothing is run, nothing written).

Sources, all in the course directory (:mod:`grader.authoring.coursedir`): nbgrader's gradebook (assignments,
their due dates, students, each submission's score and timestamp), the marker of each graded
submission (every test's status, reason and failing keys, the problems, the grading seconds) and
the reference values file (each hidden check's description, the ``what`` of its key). A course
graded on a Dask cluster leaves exactly the same files as one graded locally (only the main process
writes them), so the report is the same.

    data = load_class(CourseDir(root))
    data.assignments[0].submissions["ada"].score
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

from ..authoring.coursedir import CourseDir
from ..engine.verdict.result import TestResult
from .manual import awaiting, manual_scores, under_review
from .table import ATTENTION, attempted

__all__ = ["Check", "Test", "Submission", "AssignmentData", "ClassData", "load_class", "attempted",
           "failed_keys", "hidden_checks"]



@dataclass
class Check:
    """One hidden check: a key the reference run recorded, and what it checks in words."""
    key: str
    what: str


@dataclass
class Test:
    """One graded test cell of an assignment."""
    grade_id: str
    points: float
    description: str = ""            # the test cell's opening docstring, when the source is there
    checks: list[Check] = field(default_factory=list)


@dataclass
class Submission:
    """One graded submission (from its marker and the gradebook)."""
    student: str
    score: float
    max_score: float
    tests: list[TestResult]          # the marker's, in notebook order
    problems: list[str]
    seconds: float = 0.0             # grading time; 0: not measured (graded before it was stored)
    late_seconds: float | None = None  # None: the assignment has no due date
    awaiting: list[str] = field(default_factory=list)  # grade ids of hand-graded answers not scored yet
    review: list[str] = field(default_factory=list)  # grade ids flagged for review, not decided yet (points kept)

    @property
    def missing(self) -> bool:
        """Nothing gradable arrived (no notebook, or an unreadable one)."""
        return bool(self.tests) and all(t.status == "missing" for t in self.tests)

    @property
    def attention(self) -> list[str]:
        """Problems and tests that stopped beyond a wrong answer (timeouts, crashes)."""
        found = list(self.problems) + [f"{t.grade_id}: {t.status}" for t in self.tests
                                       if t.status in ATTENTION and t.status != "missing"]
        return [] if self.missing else list(dict.fromkeys(found))


@dataclass
class AssignmentData:
    name: str
    due: datetime | None             # UTC; None: no due date set
    tests: list[Test]
    submissions: dict[str, Submission]  # by student id (graded ones only)
    reference_seconds: float = 0.0

    @property
    def max_score(self) -> float:
        return sum(t.points for t in self.tests)


@dataclass
class ClassData:
    students: list[str]              # everyone the gradebook or the course folder knows, sorted
    assignments: list[AssignmentData]


def failed_keys(test: TestResult, checks: list[Check]) -> list[str]:
    """The hidden checks this test ran and missed (not those it never reached). Markers written before grading stored the keys hold only
    the reason, which names the first failing key as ``(<key repr>)``: that one is recovered (a test without
    failed keys whose reason names none gives [] either way)."""
    if test.status == "passed":
        return []
    if test.failed_keys:  # less those never checked: the test stopped before them (not a wrong answer)
        return [key for key in test.failed_keys if key not in (test.unchecked_keys or [])]
    return [c.key for c in checks if f"({c.key!r})" in test.reason][:1]


def _docstring(source: str) -> str:
    match = re.match(r'\s*(?:"""|\'\'\')(.*?)(?:"""|\'\'\')', source, re.S)
    return " ".join(match.group(1).split()) if match else ""


def _tests_from_source(course: CourseDir, name: str) -> dict[str, str]:
    """grade_id -> the test cell's docstring, from the source notebook(s) (empty when there is none)."""
    from ..engine.notebook import cells as nbs

    found = {}
    for path in course.source_files(name):  # every notebook of the assignment
        nb = nbs.read_notebook(path)
        found |= {nbs.nbgrader_meta(c)["grade_id"]: _docstring(c.source) for c in nb.cells if nbs.is_test(c)}
    return found


def _checks(course: CourseDir, name: str, notebook: str | None = None) -> tuple[dict[str, list[Check]], float]:
    """grade_id -> its hidden checks (reference order), and the reference run's seconds."""
    try:
        data = json.loads(course.references(name, notebook).read_text(encoding="utf-8"))
        cells = data["cells"]
    except (OSError, ValueError, KeyError, TypeError):
        return {}, 0.0
    found = {gid: [Check(str(k), str(v.get("what") or "")) for k, v in keys.items()]
             for gid, keys in cells.items() if isinstance(keys, dict)}
    seconds = data.get("seconds", 0.0)
    return found, float(seconds) if isinstance(seconds, (int, float)) else 0.0


def hidden_checks(course: CourseDir, name: str, notebook: str | None = None) -> dict[str, list[Check]]:
    """grade_id -> its checks (the reference run's keys and their descriptions, in reference order);
    {} when the reference values of ``name`` (its ``notebook``, in an assignment of several) cannot be read."""
    return _checks(course, name, notebook)[0]


def _utc(when: datetime | None) -> datetime | None:
    """nbgrader stores naive UTC datetimes."""
    return None if when is None else (when.replace(tzinfo=timezone.utc) if when.tzinfo is None else when)


def load_class(course: CourseDir) -> ClassData:
    """Everything the report needs, in one pass over the gradebook and the markers.

    Raises FileNotFoundError (with what to run) when the course has no gradebook."""
    from nbgrader.api import Gradebook

    if not course.gradebook.is_file():
        from ..authoring.invocation import command

        raise FileNotFoundError(f"{course.gradebook} does not exist: this folder was never released and "
                                f"graded; run `{command('release', course.root)}`, `collect` and `autograde` first")
    by_hand = manual_scores(course)
    with Gradebook(f"sqlite:///{course.gradebook}") as gb:
        students = {s.id for s in gb.students} | set(course.students())
        found = []
        for assignment in sorted(gb.assignments, key=lambda a: a.name):
            found.append(_assignment(course, gb, assignment, by_hand))
    return ClassData(sorted(students), found)


def _submissions(gb, name: str) -> tuple[dict[str, tuple[datetime | None, timedelta | None]], dict[str, float]]:
    """student -> (timestamp, extension) and student -> score of each submission in the gradebook, by one light
    query (nbgrader's ``submission_dicts`` computes every score kind with subqueries: minutes for 1,000
    students). A grade's score is nbgrader's: the manual score when there is one, else the automatic one,
    plus extra credit."""
    from nbgrader.api import Assignment, Grade, SubmittedAssignment, SubmittedNotebook
    from sqlalchemy import func

    score = func.sum(func.coalesce(Grade.manual_score, Grade.auto_score, 0.0) + func.coalesce(Grade.extra_credit, 0.0))
    rows = (gb.db.query(SubmittedAssignment.student_id, SubmittedAssignment.timestamp, SubmittedAssignment.extension,
                        score)
            .join(Assignment, SubmittedAssignment.assignment_id == Assignment.id)
            .outerjoin(SubmittedNotebook, SubmittedNotebook.assignment_id == SubmittedAssignment.id)
            .outerjoin(Grade, Grade.notebook_id == SubmittedNotebook.id)
            .filter(Assignment.name == name).group_by(SubmittedAssignment.id).all())
    return ({student: (_utc(stamp), extension) for student, stamp, extension, _ in rows},
            {student: float(total) for student, _, _, total in rows if total is not None})


def _assignment(course: CourseDir, gb, assignment, by_hand: dict[tuple[str, str], dict[str, float]]) -> AssignmentData:
    name, due = assignment.name, _utc(assignment.duedate)
    checks, reference_seconds = _checks(course, name)
    described = _tests_from_source(course, name)
    tests = [Test(cell.name, float(cell.max_score or 0), described.get(cell.name, ""), checks.get(cell.name, []))
             for notebook in assignment.notebooks for cell in notebook.grade_cells if cell.cell_type == "code"
             and cell.name not in {s.name for s in notebook.solution_cells}]  # hand-graded answers are no tests
    stamps, scores = _submissions(gb, name)
    submissions = {}
    for student in stamps.keys() | set(course.students()):
        outcome = course.outcome(student, name)
        if outcome is None:
            continue
        stamp, extension = stamps.get(student, (None, None))
        own = None if due is None else due + (extension or timedelta(0))  # as nbgrader's SubmittedAssignment.duedate
        late = None if own is None or stamp is None else max(0.0, (stamp - own).total_seconds())
        score = scores.get(student, outcome.score)  # the gradebook's: a manual grade in formgrader wins
        submissions[student] = Submission(student, score, outcome.max_score, outcome.tests,
                                          outcome.problems, float(outcome.seconds or 0.0), late,
                                          awaiting(outcome.tests, by_hand.get((student, name), {})),
                                          under_review(outcome.tests, by_hand.get((student, name), {})))
    seen = list(described) or [t.grade_id for s in list(submissions.values())[:1] for t in s.tests]
    tests.sort(key=lambda t: (seen.index(t.grade_id) if t.grade_id in seen else len(seen), t.grade_id))
    return AssignmentData(name, due, tests, submissions, reference_seconds)
