"""Due dates, late penalties and extensions from ``ROOT/semester.toml``: the file's checks, the
penalty rule, and what lands in a real nbgrader gradebook, its CSV export and the grade table.

No kernel runs here: gradebook rows are written with nbgrader's own API, as autograde leaves them.
The run through ``course-grader autograde`` is in tests/test_friction_instructor.py.
"""
from __future__ import annotations

import csv
import hashlib
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from grader.authoring.coursedir import CourseDir, timestamp_text
from grader.authoring.semester import Semester, SemesterError, late_penalty, load_semester

A = "01_tensors"
DUE = datetime(2026, 10, 1, 21, 59, tzinfo=timezone.utc)  # 23:59 at +02:00
EXAMPLE = """\
[assignments.01_tensors]
due = "2026-10-01T23:59:00+02:00"

[late]
penalty_per_day = 0.1
max_penalty = 0.5

[extensions.alice]
01_tensors = "2026-10-03T23:59:00+02:00"
"""
HOUR, DAY = 3600.0, 86400.0
pytestmark = pytest.mark.filterwarnings("ignore::sqlalchemy.exc.SAWarning")  # nbgrader's add_submission chatter


def semester_file(root: Path, text: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "semester.toml").write_text(text, encoding="utf-8")
    return root


def test_the_readme_example_reads_as_written(tmp_path):
    s = load_semester(semester_file(tmp_path, EXAMPLE), [A, "02_autograd"])
    assert s.due == {A: DUE}
    assert s.extensions == {("alice", A): DUE + timedelta(days=2)}
    assert (s.method, s.penalty_per_day, s.max_penalty) == ("per_day", 0.1, 0.5)
    assert s.due_for("alice", A) == DUE + timedelta(days=2) and s.due_for("bob", A) == DUE


def test_no_file_means_no_due_date_and_no_penalty(tmp_path):
    s = load_semester(tmp_path, [A])
    assert s == Semester() and late_penalty(s, 6, 6, 10 * DAY) == 0


PER_DAY = Semester({A: DUE}, {}, "per_day", 0.1, 0.5)


@pytest.mark.parametrize("seconds, raw, expected", [
    (0, 10, 0),              # on time
    (-HOUR, 10, 0),          # early
    (1, 10, 1),              # one second late: a started day, 10% of 10
    (1.5 * DAY, 10, 2),      # 1.5 days: 2 started days, 20% of the max score
    (1.5 * DAY, 4, 2),       # the share is of the max score, not of the raw score
    (1.5 * DAY, 1, 1),       # never more than the raw score: the final score is 0, not -1
    (9 * DAY, 10, 5),        # capped at max_penalty = 50%
])
def test_per_day_penalty(seconds, raw, expected):
    assert late_penalty(PER_DAY, raw, 10, seconds) == pytest.approx(expected)


def test_method_zero_takes_the_whole_raw_score_only_when_late():
    zero = Semester({A: DUE}, {}, "zero")
    assert late_penalty(zero, 7, 10, 1) == 7 and late_penalty(zero, 7, 10, 0) == 0


@pytest.mark.parametrize("text, line, said", [
    ('[assignments.01_tensors]\ndue = "2026-13-01T23:59:00+02:00"\n', 2, "is not a date"),
    ('[assignments.01_tensors]\ndue = "2026-10-01T23:59:00"\n', 2, "has no time zone"),
    ('[assignments.01_tensors]\ndue = 2026-10-01T23:59:00\n', 2, "has no time zone"),  # a TOML local date-time
    ('[assignments.99_nope]\ndue = "2026-10-01T23:59:00Z"\n', 1, "unknown assignment '99_nope'"),
    ('[late]\npenalty_per_day = 1.5\n', 2, "between 0 and 1"),
    ('[late]\npenalty_per_day = 0.1\nmax_penalty = -0.1\n', 3, "between 0 and 1"),
    ('[late]\nmethod = "half"\n', 2, "expected \"none\", \"per_day\" or \"zero\""),
    ('[late]\nmethod = "zero"\npenalty_per_day = 0.1\n', 2, "takes no penalty_per_day"),
    ('[late]\npenalty_per_dya = 0.1\n', 2, "unknown key(s) ['penalty_per_dya']"),
    ('[extensions.alice]\n01_tensors = "2026-10-03T23:59:00Z"\n', 2, "has no due date here"),
    (EXAMPLE.replace("2026-10-03T23:59", "2026-09-30T23:59"), 9, "is not after its due date"),
    ('[assignments.01_tensors]\ndue = "2026-10-01T23:59:00Z"\n[typo]\nx = 1\n', 3, "unknown table [typo]"),
])
def test_a_wrong_file_is_refused_with_its_line_and_what_to_write(tmp_path, text, line, said):
    with pytest.raises(SemesterError) as caught:
        load_semester(semester_file(tmp_path, text), [A])
    message = str(caught.value)
    assert message.startswith(f"{tmp_path / 'semester.toml'}, line {line}: "), message
    assert said in message, message


def test_a_toml_syntax_error_names_the_file_and_its_line(tmp_path):
    with pytest.raises(SemesterError, match=r"semester.toml: not valid TOML .*line 2"):
        load_semester(semester_file(tmp_path, '[late]\npenalty_per_day = \n'), [A])


# -- a real nbgrader gradebook ---------------------------------------------------------------------

STUDENTS = {  # student -> (submitted, raw score of 10)
    "bob": (DUE - timedelta(hours=1), 8),                  # on time
    "carl": (DUE + timedelta(hours=36), 10),               # 1.5 days late: 20% of 10
    "alice": (DUE + timedelta(hours=36), 10),              # the same, but her extension runs 2 days
    "dora": (DUE + timedelta(days=1, seconds=1), 1),       # 2 started days, capped at her raw score
}


@pytest.fixture
def course(tmp_path):
    """A course directory whose nbgrader gradebook holds A (two cells, 10 points) and four graded
    submissions, written with nbgrader's API as autograde leaves them (no due date in it yet)."""
    from nbgrader.api import Gradebook

    from grader.authoring.config import COURSE_ID, nbgrader_api, write_config

    root = tmp_path / "course"
    write_config(root)
    nbgrader_api(root)  # puts nbgrader's alembic on PATH: a new gradebook runs it
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}", COURSE_ID) as gb:
        gb.add_assignment(A)
        gb.add_notebook(A, A)
        gb.add_grade_cell("test_a", A, A, max_score=4, cell_type="code")
        gb.add_grade_cell("test_b", A, A, max_score=6, cell_type="code")
        for student, (when, raw) in STUDENTS.items():
            gb.add_student(student)
            gb.add_submission(A, student, timestamp=timestamp_text(when))
            first = min(raw, 4)
            for cell, points in (("test_a", first), ("test_b", raw - first)):
                grade = gb.find_grade(cell, A, A, student)
                grade.auto_score, grade.needs_manual_grade = points, False
        gb.db.commit()
    return root


def penalties(root: Path) -> dict[str, tuple[float, float, float]]:
    """student -> (raw score, penalty, nbgrader's own total_seconds_late), read with nbgrader's API."""
    from nbgrader.api import Gradebook

    from grader.authoring.config import COURSE_ID

    with Gradebook(f"sqlite:///{root / 'gradebook.db'}", COURSE_ID) as gb:
        return {s.student.id: (s.score, s.late_submission_penalty, s.total_seconds_late)
                for s in gb.assignment_submissions(A)}


def test_sync_writes_due_dates_extensions_and_penalties_into_the_gradebook_and_export_into_the_csv(course, tmp_path):
    from grader.results.export import export_csv
    from grader.results.gradebook import sync_semester

    semester_file(course, EXAMPLE)
    rows = {r["student_id"]: r for r in csv.DictReader(export_csv(course, tmp_path / "g.csv").open(encoding="utf-8"))}
    sync_semester(CourseDir(course))
    assert penalties(course) == {"bob": (8, 0, 0), "carl": (10, 2, 36 * 3600), "alice": (10, 0, 0),
                                 "dora": (1, 1, DAY + 1)}
    for student, (raw, penalty, score) in {"bob": (8, 0, 8), "carl": (10, 2, 8), "alice": (10, 0, 10),
                                           "dora": (1, 1, 0)}.items():
        row = rows[student]
        assert (float(row["raw_score"]), float(row["late_submission_penalty"]), float(row["score"])) \
            == (raw, penalty, score), row
        assert row["duedate"].startswith("2026-10-01 21:59:00"), row


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_changed_file_changes_the_penalties_and_nothing_else(course, tmp_path):
    """The next sync writes a changed file's penalties; export shows them at once and writes nothing."""
    from grader.results.export import export_csv
    from grader.results.gradebook import sync_semester

    semester_file(course, EXAMPLE)
    sync_semester(CourseDir(course))
    semester_file(course, EXAMPLE.replace("penalty_per_day = 0.1\nmax_penalty = 0.5", 'method = "zero"'))
    before = sha256(course / "gradebook.db")
    rows = {r["student_id"]: r for r in csv.DictReader(export_csv(course, tmp_path / "g.csv").open(encoding="utf-8"))}
    assert (rows["carl"]["late_submission_penalty"], rows["carl"]["score"]) == ("10.0", "0.0"), rows["carl"]
    assert sha256(course / "gradebook.db") == before, "export changed gradebook.db"
    assert penalties(course)["carl"][1] == 2  # the gradebook keeps the last sync's penalty
    sync_semester(CourseDir(course))
    assert penalties(course) == {"bob": (8, 0, 0), "carl": (10, 10, 36 * 3600), "alice": (10, 0, 0),
                                 "dora": (1, 1, DAY + 1)}
    semester_file(course, EXAMPLE.replace("[late]\npenalty_per_day = 0.1\nmax_penalty = 0.5\n", ""))  # no penalty
    sync_semester(CourseDir(course))
    assert penalties(course) == {"bob": (8, 0, 0), "carl": (10, 0, 36 * 3600), "alice": (10, 0, 0),
                                 "dora": (1, 0, DAY + 1)}


def test_without_a_file_the_gradebook_keeps_what_nbgrader_wrote(course, tmp_path):
    """A course graded by nbgrader's own autograde with its LateSubmissionPlugin keeps its penalty."""
    from nbgrader.api import Gradebook

    from grader.authoring.config import COURSE_ID
    from grader.results.export import export_csv

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", COURSE_ID) as gb:
        gb.find_submission_notebook(A, A, "carl").late_submission_penalty = 10
        gb.db.commit()
    rows = {r["student_id"]: r for r in csv.DictReader(export_csv(course, tmp_path / "g.csv").open(encoding="utf-8"))}
    assert (rows["carl"]["late_submission_penalty"], rows["carl"]["score"]) == ("10.0", "0.0"), rows["carl"]


def test_an_extension_for_a_student_the_course_lacks_is_said(course, tmp_path, capsys):
    """A mistyped id gives nobody an extension: every command that reads the file says so (and still runs)."""
    from grader.results.export import export_csv

    semester_file(course, EXAMPLE + "\n[extensions.alcie]\n" + f'{A} = "2026-10-03T21:59:00Z"\n')
    rows = {r["student_id"]: r for r in csv.DictReader(export_csv(course, tmp_path / "g.csv").open(encoding="utf-8"))}
    err = capsys.readouterr().err
    assert "[extensions.alcie]" in err and "no student 'alcie'" in err
    assert "'alice'" not in err  # alice is in the gradebook: not named
    assert float(rows["carl"]["late_submission_penalty"]) == 2  # the rest of the file still applies


def test_the_grade_table_shows_penalties_lateness_and_own_due_dates(course):
    from grader.engine.verdict.result import Outcome
    from grader.results.table import grade_table

    semester_file(course, EXAMPLE + '\n[assignments.02_autograd]\ndue = "2026-10-08T23:59:00+02:00"\n'
                  '[extensions.bob]\n02_autograd = "2099-01-01T00:00:00Z"\n')
    results = [Outcome(s, A, raw, 10, [], [], timestamp_text(when)) for s, (when, raw) in STUDENTS.items()]
    results += [Outcome("alice", "02_autograd", 5, 10, [], [], timestamp_text(DUE))]
    table = grade_table(course, results).splitlines()
    row = {line.split()[0]: line for line in table[1:5]}
    assert row["carl"].split()[1:4] == ["10/10", "late", "-2"], row
    assert row["dora"].split()[1:4] == ["1/10", "late", "-1"], row
    assert row["bob"].split()[1:3] == ["8/10", "-"] and row["alice"].split()[1:3] == ["10/10", "5/10"], row
    late = table[table.index("late submissions:") + 1:]
    assert late[0].strip() == f"carl / {A}: 1 d 12 h late (due 2026-10-01 21:59 UTC), penalty 2 of 10 points"
    assert late[1].strip().startswith(f"dora / {A}: 1 d 1 min late"), late
    assert not any("alice" in line or "bob" in line for line in late[:3]), late
    # 02_autograd is past due for carl and dora, not for bob, whose extension runs to 2099
    attention = "\n".join(table)
    assert "carl / 02_autograd: nothing submitted (due 2026-10-08 21:59 UTC)" in attention, attention
    assert "dora / 02_autograd: nothing submitted" in attention and "bob / 02_autograd: nothing" not in attention
    assert "02_autograd: 1 of 4 student(s) (due 2026-10-08 21:59 UTC)" in attention, attention


def test_build_refuses_a_file_naming_an_assignment_the_course_lacks(tmp_path):
    from classroom import FIXTURE

    from grader.errors import GraderError
    from grader.authoring.assembly import build

    root = semester_file(tmp_path / "course", '[assignments.01_tensors]\ndue = "2026-10-01T23:59:00Z"\n')
    with pytest.raises(GraderError, match=r"semester.toml, line 1: unknown assignment '01_tensors'; the course has 01_fixture"):
        build(root, FIXTURE.parent)


@pytest.mark.parametrize("text", ['[assignments.01_tensors]\ndue = "2026-10-01"\n',
                                  '[assignments.01_tensors]\ndue = 2026-10-01\n'])  # a string, a TOML local date
def test_a_date_without_a_time_is_refused_without_inventing_one(tmp_path, text):
    """Issue 31 (13): a day alone was echoed as "2026-10-01T00:00:00 has no time zone" (a midnight the
    instructor never wrote), or as "not a date and time" for TOML's own date."""
    with pytest.raises(SemesterError) as caught:
        load_semester(semester_file(tmp_path, text), [A])
    message = str(caught.value)
    assert message.startswith(f"{tmp_path / 'semester.toml'}, line 2: due = 2026-10-01 is a day without a time"), message
    assert "T00:00" not in message and '"2026-10-01T23:59:00+02:00"' in message, message


def test_a_local_time_is_echoed_as_written(tmp_path):
    with pytest.raises(SemesterError) as caught:
        load_semester(semester_file(tmp_path, '[assignments.01_tensors]\ndue = "2026-10-01 23:59"\n'), [A])
    assert "due = 2026-10-01 23:59 has no time zone" in str(caught.value), str(caught.value)


def test_a_syntax_error_points_at_the_readme_not_at_a_source_file(tmp_path):
    with pytest.raises(SemesterError) as caught:
        load_semester(semester_file(tmp_path, '[late]\npenalty_per_day = \n'), [A])
    message = str(caught.value)
    assert "README.md" in message and '"Due dates, late penalties, extensions"' in message, message
    assert ".py" not in message.replace(str(tmp_path), ""), message
    readme = (Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8")
    assert "**Due dates, late penalties, extensions**" in readme  # the section the message names exists


def test_report_refuses_a_file_that_autograde_refuses(tmp_path):
    """report read only the gradebook, so it wrote a page from a semester file that autograde refuses."""
    import subprocess
    import sys

    from classroom import FIXTURE

    from grader.authoring.assembly import build

    root = tmp_path / "course"
    build(root, FIXTURE.parent)
    semester_file(root, '[assignments.01_fixture]\ndue = "2026-10-01T23:59:00"\n')
    done = subprocess.run([sys.executable, "-m", "grader", "--root", str(root), "report"], capture_output=True,
                          text=True, timeout=300, env={**__import__("os").environ,
                                                       "PYTHONPATH": str(Path(__file__).parents[1])})
    assert done.returncode == 2, done.stdout + done.stderr
    assert "semester.toml, line 2: due = 2026-10-01T23:59:00 has no time zone" in done.stderr, done.stderr
    assert not (root / "report" / "index.html").exists()
