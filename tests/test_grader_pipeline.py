"""End to end on the fixture course: build -> release -> collect -> autograde -> feedback -> export.

A small class: a full solution (whose answer prints a warning on stderr), the untouched release,
a corrupt file, a broadcasting bug and a partly solved notebook; then idempotent re-runs, --force,
and a batch killed with SIGKILL and resumed with other workers, ending with identical grades.
"""
import csv
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from classroom import (A, FIXTURE, cell_scores, class_of, released_course, student_scores, writable_copy, write_corrupt,
                       write_inbox)
from grader.authoring.assembly import build
from grader.authoring.coursedir import MARKER, CourseDir
from grader.cli import main
from grader.engine.notebook import cells as nbs
from grader.intake.collect import collect
from grader.results.export import export_csv
from grader.results.feedback import feedback
from grader.results.table import grade_table
from grader.running.batch import autograde
from page_payloads import table_rows

EXPECTED = {"Zoë Ñ": 6.0, "bob": 0.0, "carol": 0.0, "dan": 3.0, "eve": 2.0}
HIDDEN_TEXT = ["manual_seed(1)", "generator=g", "linspace(0, 1, 11"]


def _scores(results):
    return {o.student: o.score for o in results}


def _verdicts(results):
    return {(o.student, t.grade_id): (t.points, t.status) for o in results for t in o.tests}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """The fixture course in a path with a space, its class collected and graded with 2 workers
    (ann under a unicode id with a space). Tests that write into the course take :func:`course`."""
    base = tmp_path_factory.mktemp("e2e")
    root = released_course(base / "my course")
    class_ = class_of(root)
    class_["Zoë Ñ"] = class_.pop("ann")
    inbox = write_inbox(base / "inbox", class_)
    write_corrupt(inbox, "carol")
    report = collect(root, inbox)
    assert len(report.imported) == 5 and len(report.rejected) == 1
    results = autograde(root, workers=2, unsafe=False)
    return root, results


@pytest.fixture
def course(graded, tmp_path):
    """A copy of the graded course for a test that writes into it (the module's stays as graded)."""
    return writable_copy(graded, tmp_path, "my course")


def test_scores_follow_the_answers(graded):
    """Full marks for the solution even though it warns on stderr; zero for release and corrupt file."""
    root, results = graded
    assert _scores(results) == EXPECTED
    by = {o.student: o for o in results}
    assert {t.grade_id: t.status for t in by["dan"].tests}["test_pairwise"] in ("failed", "error")
    # a corrupt upload: one reason, collect's, saying what to do; no raw JSON, no contradiction
    carol = [p for p in by["carol"].problems]
    assert len(carol) == 1 and "is not a readable notebook" in carol[0] and "File > Download" in carol[0]
    assert '{"cells"' not in carol[0]
    assert {t.reason for t in by["carol"].tests} == {carol[0][0].upper() + carol[0][1:] + "."}
    table = grade_table(root, results)
    assert "Zoë Ñ" in table and "6/6" in table and "needs attention:" in table and "carol / 01_fixture" in table


def test_markers_keep_failing_keys_and_grading_seconds(graded):
    """What the class report counts: each test's unmatched reference keys, each submission's seconds."""
    root, _ = graded
    markers = {s: CourseDir(root).read_marker(s, A) for s in EXPECTED}
    keys = {t["grade_id"]: t["failed_keys"] for t in markers["dan"]["tests"]}
    assert keys == {"test_scale": [], "test_pairwise": ["visible", "hidden"], "test_mean_of": []}
    assert all(t["failed_keys"] == [] for t in markers["Zoë Ñ"]["tests"])
    assert all(m["seconds"] > 0 for s, m in markers.items() if s != "carol")  # carol: nothing ran


def test_grades_are_in_nbgraders_gradebook_and_folders(graded):
    root, _ = graded
    assert student_scores(root) == EXPECTED
    assert (root / "autograded" / "Zoë Ñ" / A / f"{A}.ipynb").exists()
    assert (root / "autograded" / "Zoë Ñ" / A / "timestamp.txt").exists()


def test_feedback_shows_verdicts_but_no_hidden_tests(course):
    root, _ = course
    pages = feedback(root)
    assert len(pages) == 5
    for page in pages:
        html = page.read_text(encoding="utf-8")
        assert not [t for t in HIDDEN_TEXT if t in html], f"{page} reveals hidden test source"
        assert "hidden tests are not shown" in html
    dan = (root / "feedback" / "dan" / A / f"{A}.html").read_text(encoding="utf-8")
    assert "WRONG (0/3): A visible check failed (AssertionError)" in dan and "PASSED (2/2)" in dan
    # issue 31 (9): one vocabulary: a wrong answer is "wrong", an unanswered one "not answered", never "error"
    bob = (root / "feedback" / "bob" / A / f"{A}.html").read_text(encoding="utf-8")
    assert "NOT ANSWERED (0/3): Not answered yet: the code still raises NotImplementedError." in bob, bob[-3000:]
    assert "<td>not answered</td>" in bob and "<td>error</td>" not in bob + dan and "ERROR (" not in bob + dan


def test_feedback_shows_the_late_penalty_of_the_semester_file_as_it_is_now(course):
    """A due date long past, written after grading: the page shows nbgrader's late-penalty line and the score
    less the penalty (10% a started day, at most 50% of 6 points, never more than the raw score)."""
    root, _ = course
    (root / "semester.toml").write_text(f'[assignments.{A}]\ndue = "2000-01-01T00:00:00Z"\n\n'
                                        "[late]\npenalty_per_day = 0.1\nmax_penalty = 0.5\n", encoding="utf-8")
    feedback(root, students=["Zoë Ñ", "eve"])
    for student, penalty in (("Zoë Ñ", 3.0), ("eve", 2.0)):  # raw 6 -> 3; raw 2 -> capped at 2
        page = (root / "feedback" / student / A / f"{A}.html").read_text(encoding="utf-8")
        assert f"Late submission penalty (Score: -{penalty})" in page, student
        # issue 31 (5): one total, nbgrader's header's, with the penalty where the score is (not the raw sum too)
        raw = EXPECTED[student]
        header = re.search(rf"{A} \(Score: ([\d.]+) / 6\.0\)", page)
        assert header and float(header.group(1)) == raw - penalty, (student, header and header.group(0))
        total = table_rows(page)[0][-1]
        assert total[:3] == ["Total", "", f"{raw - penalty:g}/6 ({raw:g} less {penalty:g} for the late submission)"], \
            (student, total)


def test_export_writes_one_row_per_student(graded, tmp_path):
    root, _ = graded
    rows = list(csv.DictReader(export_csv(root, tmp_path / "grades.csv").open(encoding="utf-8")))
    assert {r["student_id"]: float(r["score"]) for r in rows} == EXPECTED
    assert {r["max_score"] for r in rows} == {"6.0"}


def test_rerun_is_idempotent_and_force_regrades(course):
    root, results = course
    marker = root / "autograded" / "bob" / A / MARKER
    before = {p: p.stat().st_mtime_ns for p in (root / "autograded").glob(f"*/{A}/{MARKER}")}
    again = autograde(root, workers=2)
    assert _verdicts(again) == _verdicts(results)
    assert {p: p.stat().st_mtime_ns for p in before} == before, "nothing is regraded without --force"
    forced = autograde(root, students=["bob"], force=True, workers=1)
    assert marker.stat().st_mtime_ns != before[marker]
    assert _verdicts(forced) == {k: v for k, v in _verdicts(results).items() if k[0] == "bob"}


def test_sigkill_halfway_then_resume_gives_the_same_grades(graded, tmp_path):
    """Kill a 1-worker batch after its first submission; the 2-worker rerun grades only the rest."""
    root, results = graded
    copy = tmp_path / "copy of course"
    shutil.copytree(root, copy, ignore=shutil.ignore_patterns("autograded", "feedback"))
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    process = subprocess.Popen([sys.executable, "-m", "grader", "--root", str(copy), "autograde", "--workers", "1",
                                "--quiet"], env=env, start_new_session=True,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 1200
    while not list(copy.glob(f"autograded/*/{A}/{MARKER}")) and time.monotonic() < deadline:
        assert process.poll() is None, "the batch ended before it could be killed"
        time.sleep(0.1)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    done = {p: p.stat().st_mtime_ns for p in copy.glob(f"autograded/*/{A}/{MARKER}")}
    assert 1 <= len(done) < 5
    resumed = autograde(copy, workers=2)
    assert _verdicts(resumed) == _verdicts(results)
    assert {p: p.stat().st_mtime_ns for p in done} == done, "finished submissions are not graded again"
    assert all(json.loads(p.read_text())["student"] for p in copy.glob(f"autograded/*/{A}/{MARKER}"))


def test_validate_exit_codes(graded, tmp_path, capsys):
    """0 when every visible check passes, 1 when one fails, 2 when the notebook is unreadable."""
    root, _ = graded
    assert main(["validate", str(FIXTURE)]) == 0
    assert main(["validate", str(root / "release" / A / f"{A}.ipynb")]) == 1
    out = capsys.readouterr().out
    assert "0/3 visible checks pass" in out
    # issue 31 (9): the feedback page's words, not "raised NotImplementedError"
    assert "NOT ANSWERED  test_scale: Not answered yet: the code still raises NotImplementedError." in out, out
    assert "The test raised NotImplementedError" not in out, out
    broken = tmp_path / "broken.ipynb"
    broken.write_text("{")
    assert main(["validate", str(broken)]) == 2


def test_validate_says_what_to_pass_instead(graded, tmp_path, capsys):
    """A folder names the notebooks inside; a notebook without test cells says why and what to do."""
    root, _ = graded
    assert main(["validate", str(root / "release" / A)]) == 2
    out = capsys.readouterr().out
    assert "is a folder" in out and f"{A}.ipynb" in out and "does not exist" not in out
    untested = nbs.read_notebook(FIXTURE)
    untested.cells = [c for c in untested.cells if not nbs.is_test(c)]
    nbs.write_notebook(untested, tmp_path / "pasted.ipynb")
    assert main(["validate", str(tmp_path / "pasted.ipynb")]) == 2
    out = capsys.readouterr().out
    assert "no graded test cells" in out and "fresh copy of the released notebook" in out


def test_autograde_without_submissions_says_to_collect_and_fails(tmp_path, capsys):
    root = tmp_path / "empty course"
    build(root, FIXTURE.parent)
    assert main(["--root", str(root), "autograde", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "nothing collected" in err and "collect INBOX" in err


def test_autograde_for_one_student_shows_only_that_student(course, capsys):
    root, _ = course
    assert main(["--root", str(root), "autograde", "--student", "dan", "--quiet"]) == 0
    table = capsys.readouterr().out
    rows = [line.split()[0] for line in table.splitlines()[1:] if line and not line.startswith(" ")
            and ":" not in line]
    assert rows == ["dan"], table
    assert "nothing submitted" not in table and "eve" not in table
    assert main(["--root", str(root), "autograde", "--student", "nobody", "--quiet"]) == 2
    assert "no submission collected for 'nobody'" in capsys.readouterr().err


def test_a_student_id_that_escapes_is_refused(course, tmp_path):
    root, _ = course
    inbox = tmp_path / "inbox"
    (inbox / "a..b").mkdir(parents=True)
    shutil.copy(FIXTURE, inbox / "a..b" / f"{A}.ipynb")
    report = collect(root, inbox)
    assert report.imported == [] and "refusing student id" in report.rejected[0].reason
    assert not (root / "a..b").exists() and not (root.parent / A).exists()



def _erase_scores(root: Path) -> None:
    from nbgrader.api import Grade, Gradebook

    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        for grade in gb.db.query(Grade).all():
            grade.auto_score = None
        gb.db.commit()


def test_one_worker_and_two_workers_give_identical_gradebooks(graded, tmp_path):
    """The same class graded again from scratch with --workers 1 ends with the gradebook of --workers 2."""
    root, results = graded
    copy = tmp_path / "one worker"
    shutil.copytree(root, copy, ignore=shutil.ignore_patterns("autograded", "feedback"))
    _erase_scores(copy)
    assert set(cell_scores(copy).values()) == {None}
    sequential = autograde(copy, workers=1)
    assert _verdicts(sequential) == _verdicts(results)
    scores = cell_scores(copy)
    assert scores == cell_scores(root)
    assert len(scores) == 5 * 3 and set(scores.values()) != {0.0}, scores


def test_the_installed_command_works_outside_the_repository(tmp_path, monkeypatch, capsys):
    """Run from any folder, it finds this checkout's course/; a wrong --course says what to pass."""
    monkeypatch.chdir(tmp_path)
    assert main(["--root", "built", "build"]) == 0
    built = sorted(p.name for p in (tmp_path / "built" / "source").iterdir())
    assert built == sorted(p.stem for p in (Path(nbs.__file__).parents[3] / "course").glob("*.ipynb"))
    assert main(["--root", "other", "build", "--course", "no-such-folder"]) == 2
    assert "pass --course" in capsys.readouterr().err
