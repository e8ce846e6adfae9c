"""The friction a new instructor met (issue 21, part 4), through the real command line.

Each test runs ``python -m grader`` in a subprocess on the fixture course, as a user types it:
``--root`` before or after the command and named in every suggested command; an unknown
assignment is one line and exit status 2; collect's lines, counts and re-collects; autograde with
nothing new; absent submissions listed only once due; failure reasons whole; a semester file
(due dates, late rule, an extension) written after grading: penalties without a regrade.
"""
from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from classroom import A, FIXTURE, class_of, write_inbox
from grader.authoring.assembly import build, release
from grader.engine.notebook import cells as nbs

REPO = Path(__file__).resolve().parents[1]
B = "02_again"  # a second assignment (the fixture under another name) that only ann submitted


def grader(*args, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-m", "grader", *map(str, args)], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=600)


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """Two assignments released; the class's inbox for the first (fay's upload is damaged), ann's for both."""
    base = tmp_path_factory.mktemp("friction")
    folder = base / "sources"
    folder.mkdir()
    shutil.copyfile(FIXTURE, folder / FIXTURE.name)
    shutil.copyfile(FIXTURE, folder / f"{B}.ipynb")
    root = base / "course"
    build(root, folder)
    release(root)
    inbox = write_inbox(base / "inbox", class_of(root))
    shutil.copyfile(FIXTURE, inbox / "ann" / f"{B}.ipynb")
    (inbox / "fay").mkdir()
    (inbox / "fay" / f"{A}.ipynb").write_text('{"cells": [', encoding="utf-8")
    (inbox / "fay" / "notes.ipynb").write_text("{}", encoding="utf-8")
    return root, inbox


def test_root_is_accepted_after_the_command_and_named_in_the_hint(tmp_path):
    root = tmp_path / "my course"
    build(root, FIXTURE.parent)
    done = grader("autograde", "--unsafe", "--quiet", "--root", root)  # after the command
    assert done.returncode == 2, done.stderr
    assert "nothing collected" in done.stderr, done.stderr
    hint = done.stderr.split("`")[1]
    assert f"--root {shlex.quote(str(root))}" in hint and hint.endswith(" collect INBOX"), hint
    empty = tmp_path / "inbox"
    empty.mkdir()
    for done in (grader("collect", empty, "--root", root), grader("--root", root, "collect", empty)):
        assert done.returncode == 2 and "nothing to collect in" in done.stdout, done.stdout + done.stderr


def test_an_unknown_assignment_is_one_line_naming_the_known_ones(course):
    root, inbox = course
    for args in (["release", "07_rnn"], ["autograde", "07_rnn"], ["autograde", "--assignment", "07_rnn"],
                 ["feedback", "--assignment", "07_rnn"], ["similarity", "07_rnn"],
                 ["collect", inbox, "--assignment", "07_rnn"]):
        done = grader("--root", root, *args)
        said = done.stdout + done.stderr
        assert done.returncode == 2, (args, said)
        assert "Traceback" not in said and len(done.stderr.strip().splitlines()) == 1, (args, said)
        assert "'07_rnn'" in done.stderr and f"{A}, {B}" in done.stderr, (args, said)


def test_an_empty_inbox_says_what_it_should_hold(course, tmp_path):
    root, _ = course
    done = grader("--root", root, "collect", tmp_path)
    assert done.returncode == 2 and "nothing collected" in done.stderr, done.stderr  # issue 31 (11)
    for words in ("nothing to collect", "INBOX/<student>/", "<assignment>.ipynb", "<student>.zip", "inbound"):
        assert words in done.stdout, (words, done.stdout)


def test_collect_lists_each_notebook_on_its_own_line_and_counts_rejected_apart(course):
    root, inbox = course
    done = grader("--root", root, "collect", inbox)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[-1] == "5 notebook(s) collected, 2 rejected", done.stdout
    fay = [line for line in lines if line.startswith("fay")]
    assert len(fay) == 2 and not any("collected (" in line for line in fay), done.stdout
    damaged = next(line for line in fay if line.startswith(f"fay / {A}: REJECTED"))
    assert "ask the student to re-submit" in damaged and "is not a readable notebook" in damaged, damaged
    assert any(line.startswith("fay/notes.ipynb: REJECTED") for line in fay), done.stdout
    for student in ("bob", "dan", "eve"):
        assert [line for line in lines if line.startswith(student)] \
            == [next(line for line in lines if line.startswith(f"{student} / {A}: collected ("))], done.stdout
    assert [line.split(":")[0] for line in lines if line.startswith("ann")] == [f"ann / {A}", f"ann / {B}"]


def test_recollecting_says_unchanged_or_replaced_and_keeps_the_old_notebook(course, tmp_path):
    root, inbox = course
    grader("--root", root, "collect", inbox)
    again = grader("--root", root, "collect", inbox)
    assert again.stdout.splitlines()[-1] == "0 notebook(s) collected, 5 unchanged, 2 rejected", again.stdout
    assert f"ann / {A}: unchanged" in again.stdout
    before = (root / "submitted" / "ann" / A / f"{A}.ipynb").read_bytes()
    newer = tmp_path / "inbox"
    nb = nbs.read_notebook(FIXTURE)
    nb.cells[0].source += "\n(edited)"
    nbs.write_notebook(nb, newer / "ann" / f"{A}.ipynb")
    done = grader("--root", root, "collect", newer)
    line = next(line for line in done.stdout.splitlines() if line.startswith(f"ann / {A}"))
    assert "replacing a different notebook" in line and "kept in replaced/ann/" in line, done.stdout
    kept = root / line.split("kept in ")[1].rstrip(")")
    assert (kept / f"{A}.ipynb").read_bytes() == before
    assert (root / "submitted" / "ann" / A / f"{A}.ipynb").read_bytes() != before
    assert "1 replacing an earlier one" in done.stdout.splitlines()[-1]
    grader("--root", root, "collect", inbox)  # the class's own notebook again, for the tests below


def test_autograde_again_says_nothing_new_and_lists_absentees_only_when_due(course):
    root, inbox = course
    grader("--root", root, "collect", inbox)
    first = grader("--root", root, "autograde", "--workers", "2", "--quiet")
    assert first.returncode == 0, first.stdout + first.stderr
    assert "nothing new to grade" not in first.stdout + first.stderr
    again = grader("autograde", "--root", root, "--quiet")
    assert again.returncode == 0, again.stderr
    assert "nothing new to grade; --force to regrade" in again.stderr, again.stderr
    assert f"--root {shlex.quote(str(root))} autograde --force" in again.stderr, again.stderr
    # no due date: one line for the assignment, none per absent student
    assert "nothing submitted" not in again.stdout, again.stdout
    assert f"{B}: 4 of 5 student(s) (no due date set" in again.stdout, again.stdout
    # the whole reason, and the refused upload worded for the instructor
    dan = next(line for line in again.stdout.splitlines() if line.strip().startswith(f"dan / {A}: test_pairwise"))
    assert dan.endswith("to see the values left out as ...)."), dan  # whole, and no {expression} (issue 31, 8)
    assert "got ..." in dan and "{" not in dan, dan
    assert f"fay / {A}: rejected at collect, ask the student to re-submit" in again.stdout, again.stdout
    _set_due_date(root, B, datetime.now(timezone.utc) + timedelta(days=3))
    future = grader("--root", root, "autograde", "--quiet").stdout
    assert "nothing submitted" not in future and f"{B}: 4 of 5 student(s) (due " in future, future
    _set_due_date(root, B, datetime.now(timezone.utc) - timedelta(days=1))
    past = grader("--root", root, "autograde", "--quiet").stdout
    for student in ("bob", "dan", "eve", "fay"):
        assert f"{student} / {B}: nothing submitted (due " in past, past
    assert "nothing submitted" not in past.replace(f"/ {B}: nothing submitted", ""), past


def _set_due_date(root: Path, assignment: str, when: datetime) -> None:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        gb.update_or_create_assignment(assignment, duedate=when.replace(tzinfo=None))


def test_a_long_reason_is_cut_between_words_with_an_ellipsis(tmp_path):
    from grader.engine.verdict.result import TestResult
    from grader.engine.verdict.result import Outcome
    from grader.results.table import grade_table

    words = [f"word{i}" for i in range(200)]  # about 1,500 characters
    failed = TestResult("test_long", 6, 0, "failed", " ".join(words))
    table = grade_table(tmp_path, [Outcome("ann", A, 0, 6, [failed], [])])
    line = next(line for line in table.splitlines() if "test_long" in line)
    assert line.endswith(" ..."), line
    shown = line.split("test_long: ")[1].removesuffix(" ...").split(" ")
    assert 20 < len(shown) < len(words) and shown == words[:len(shown)], line


def test_a_semester_file_sets_penalties_and_extensions_without_regrading(course, tmp_path):
    """Due dates, the late rule and an extension written after grading: the next autograde regrades
    nothing, and the table, nbgrader's gradebook and the CSV export all carry the penalties."""
    from classroom import student_scores
    from grader.authoring.semester import parse_stamp

    root, inbox = course
    grader("--root", root, "collect", inbox)
    assert grader("--root", root, "autograde", "--quiet").returncode == 0  # nothing new after the test above
    stamp = parse_stamp((root / "submitted" / "ann" / A / "timestamp.txt").read_text(encoding="utf-8"))
    iso = lambda when: when.isoformat(timespec="seconds")  # noqa: E731
    (root / "semester.toml").write_text(
        f'[assignments.{A}]\ndue = "{iso(stamp - timedelta(hours=36))}"\n'  # ann: 1.5 days late
        f'[assignments.{B}]\ndue = "{iso(stamp + timedelta(days=7))}"\n'
        "[late]\npenalty_per_day = 0.1\n"
        f'[extensions.dan]\n{A} = "{iso(stamp + timedelta(days=1))}"\n', encoding="utf-8")
    try:
        run = grader("--root", root, "autograde", "--quiet")
        assert run.returncode == 0 and "nothing new to grade" in run.stderr, run.stdout + run.stderr
        raw = student_scores(root)
        assert raw["ann"] == 6 and raw["bob"] == 0 and raw["eve"] >= 1.2, raw  # as class_of describes them
        expected = {"ann": 1.2, "bob": 0.0, "dan": 0.0, "eve": 1.2, "fay": 0.0}  # 20% of 6; bob, fay: never past 0
        from nbgrader.api import Gradebook

        with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
            found = {s.student.id: s.late_submission_penalty for s in gb.assignment_submissions(A)}
            assert gb.find_submission(A, "dan").total_seconds_late == 0  # the extension, as nbgrader reads it
        assert found == pytest.approx(expected), found
        row = next(line for line in run.stdout.splitlines() if line.startswith("ann "))
        assert "6/6 late -1.2" in row, run.stdout
        late = run.stdout.split("late submissions:\n")[1].split("\n\n")[0].splitlines()
        # fay's upload was refused at collect (issue 31, item 14): under "needs attention", not a late submission
        assert [line.split(":")[0].strip() for line in late] == [f"{s} / {A}" for s in ("ann", "bob", "eve")]
        assert f"fay / {A}: rejected at collect" in run.stdout.split("needs attention:\n")[1], run.stdout
        assert late[0].strip().startswith(f"ann / {A}: 1 d 12 h "), late  # dan: on time, by his extension
        done = grader("--root", root, "export", "--to", tmp_path / "grades.csv")
        assert done.returncode == 0, done.stderr
        import csv

        rows = {r["student_id"]: r for r in csv.DictReader((tmp_path / "grades.csv").open(encoding="utf-8"))
                if r["assignment"] == A}
        for student, penalty in expected.items():
            row = rows[student]
            assert (float(row["late_submission_penalty"]), float(row["score"])) \
                == pytest.approx((penalty, raw[student] - penalty)), row
    finally:
        (root / "semester.toml").unlink()


def test_a_folder_that_is_no_course_is_refused_except_by_build(tmp_path):
    """Issue 31 (1): a mistyped --root, or release before build, used to build and release a whole new
    course there with exit status 0. Every command but build refuses and leaves the folder as it was."""
    (tmp_path / "inbox").mkdir()
    for args in (["release"], ["release", "--build"], ["collect", tmp_path / "inbox"], ["autograde", "--unsafe"],
                 ["feedback"], ["release-feedback"], ["export"], ["report"], ["similarity", A], ["lab"]):
        typo = tmp_path / "cuorse"
        done = grader("--root", typo, *args)
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        assert "is not a course" in done.stderr and "run build first" in done.stderr, (args, done.stderr)
        assert "Traceback" not in done.stderr, (args, done.stderr)
        assert not typo.exists(), (args, sorted(p.name for p in typo.rglob("*")))
    done = grader("--root", tmp_path / "cuorse", "build", "--course", FIXTURE.parent)
    assert done.returncode == 0 and (tmp_path / "cuorse" / "source" / A).is_dir(), done.stderr


def test_report_that_refuses_leaves_no_report_folder_behind(tmp_path):
    """Issue 31 (17): a refused report (never released, so no gradebook) left an empty ROOT/report/."""
    root = tmp_path / "course"
    build(root, FIXTURE.parent)
    for args in (["report"], ["report", "--student", "ann"]):
        done = grader("--root", root, *args)
        assert done.returncode == 2 and "gradebook.db does not exist" in done.stderr, (args, done.stderr)
        assert not (root / "report").exists(), (args, sorted(p.name for p in (root / "report").rglob("*")))


def _points(notebook: Path) -> tuple[float, float]:
    """(all points, points graded by hand) of a course notebook, summed from its cells' nbgrader metadata."""
    import json

    total = by_hand = 0.0
    for cell in json.loads(notebook.read_text(encoding="utf-8"))["cells"]:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if meta.get("grade") or meta.get("task"):
            total += meta.get("points", 0)
            by_hand += meta.get("points", 0) if (meta.get("solution") or meta.get("task")) else 0
    return total, by_hand


def test_the_readme_points_table_counts_every_point_and_says_which_are_graded_by_hand():
    """Issue 31 (16): README said 14 for 03b and 32 for 05, leaving their hand-graded points out unsaid."""
    import re

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    rows = {m.group(1): m.group(2).strip() for m in re.finditer(r"^\| `(\d\d\w*)` \|.*\| ([^|]+) \|$", readme, re.M)}
    notebooks = sorted((REPO / "course").glob("[0-9][0-9]*.ipynb"))
    assert sorted(rows) == [nb.stem for nb in notebooks], rows
    for notebook in notebooks:
        total, by_hand = _points(notebook)
        expected = f"{total:g}" + (f" ({by_hand:g} graded by hand)" if by_hand else "")
        assert rows[notebook.stem] == expected, (f"README's points for {notebook.stem}: expected {expected!r} (the "
                                                 f"notebook's graded cells), found {rows[notebook.stem]!r}; fix the "
                                                 "README's table")


def test_every_option_of_every_command_says_what_it_does():
    """Issue 31 (18): `lab --instructor`, `autograde --assignment`, `--student` and others showed no help."""
    import argparse

    from grader.cli import parser

    top = parser()
    commands = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction)).choices
    silent = [f"{name} {'/'.join(action.option_strings) or action.dest}"
              for name, sub in commands.items() for action in sub._actions
              if not isinstance(action, argparse._HelpAction) and not (action.help or "").strip()]
    assert not silent, f"options without a help text (add help=... in grader/cli.py): {silent}"


def test_collect_without_an_inbox_reads_the_courses_own_exchange(tmp_path):
    """Issue 31 (10): the README's week (`collect` from the exchange) had no command: INBOX was required.
    Without one, collect reads ROOT/exchange, where `nbgrader submit` leaves what students hand in."""
    from grader.authoring.config import configured_course_id
    from grader.authoring.coursedir import CourseDir, timestamp_text

    root = tmp_path / "course"
    build(root, FIXTURE.parent)
    stamp = timestamp_text(datetime.now(timezone.utc) - timedelta(hours=1))
    folder = CourseDir(root).exchange / configured_course_id(root) / "inbound" / f"ann+{A}+{stamp}+x"
    folder.mkdir(parents=True)
    shutil.copyfile(FIXTURE, folder / f"{A}.ipynb")
    (folder / "timestamp.txt").write_text(stamp, encoding="utf-8")
    done = grader("--root", root, "collect", "--no-check-owner")
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"collecting from the course's exchange {CourseDir(root).exchange}" in done.stdout, done.stdout
    assert f"ann / {A}: collected (" in done.stdout, done.stdout
    assert (root / "submitted" / "ann" / A / f"{A}.ipynb").read_bytes() == FIXTURE.read_bytes()


def test_collect_without_an_inbox_never_reads_the_release_as_a_student(tmp_path):
    """Without INBOX and with no inbound folder (not released yet), the exchange's other folders (outbound: the
    released notebooks) must not be read as one folder per student."""
    from grader.authoring.config import configured_course_id
    from grader.authoring.coursedir import CourseDir

    root = tmp_path / "course"
    build(root, FIXTURE.parent)
    outbound = CourseDir(root).exchange / configured_course_id(root) / "outbound" / A
    outbound.mkdir(parents=True)
    shutil.copyfile(FIXTURE, outbound / f"{A}.ipynb")
    done = grader("--root", root, "collect")
    assert done.returncode == 2 and "inbound does not exist" in done.stderr and " release" in done.stderr, \
        done.stdout + done.stderr
    assert not (root / "submitted").exists(), sorted(p.name for p in (root / "submitted").iterdir())


def test_collect_pointed_at_one_student_or_at_loose_files_says_what_to_do_and_fails(tmp_path):
    """Issue 31 (11): collect pointed at one student's folder, or at an LMS export's loose files
    (ann_01_fixture.ipynb), collected nothing with exit status 0 and no hint."""
    root = tmp_path / "course"
    build(root, FIXTURE.parent)
    (tmp_path / "ann").mkdir()
    shutil.copyfile(FIXTURE, tmp_path / "ann" / f"{A}.ipynb")
    (tmp_path / "lms").mkdir()
    for student in ("ann", "bob"):
        shutil.copyfile(FIXTURE, tmp_path / "lms" / f"{student}_{A}.ipynb")
    for inbox, loose in ((tmp_path / "ann", f"{A}.ipynb"), (tmp_path / "lms", f"ann_{A}.ipynb")):
        done = grader("--root", root, "collect", inbox)
        assert done.returncode == 2 and "nothing collected" in done.stderr, (inbox, done.stdout, done.stderr)
        assert f"{inbox} holds notebooks itself ({loose}" in done.stdout, done.stdout
        assert "collect the folder above it" in done.stdout and f"{inbox}/ann/01_tensors.ipynb" in done.stdout, \
            done.stdout
    assert not (root / "submitted").exists()


def test_collect_says_which_notebook_it_recognised_by_its_cells_and_which_files_it_ignored(tmp_path):
    """Issue 31 (11): a renamed notebook was matched by its cells without a word; a student's other files
    were left out silently."""
    root = tmp_path / "course"
    build(root, FIXTURE.parent)
    inbox = tmp_path / "inbox"
    (inbox / "ann" / "data").mkdir(parents=True)
    shutil.copyfile(FIXTURE, inbox / "ann" / "my copy.ipynb")
    (inbox / "ann" / "notes.txt").write_text("my notes", encoding="utf-8")
    (inbox / "ann" / "data" / "x.csv").write_text("1,2", encoding="utf-8")
    done = grader("--root", root, "collect", inbox)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    ann = next(line for line in lines if line.startswith(f"ann / {A}: collected ("))
    assert ann.endswith(f"; ann/my copy.ipynb recognised by its cells as {A}.ipynb"), ann
    for where in ("ann/notes.txt", "ann/data/x.csv"):
        assert f"{where}: ignored, not a notebook (only .ipynb files are collected)" in lines, done.stdout
    again = grader("--root", root, "collect", inbox)
    assert again.returncode == 0 and f"ann/my copy.ipynb recognised by its cells as {A}.ipynb" in again.stdout


def test_release_feedback_says_what_its_lines_share_once(course):
    """Issue 31 (19): release-feedback repeated one long sentence on every page's line."""
    root, inbox = course
    grader("--root", root, "collect", inbox)
    assert grader("--root", root, "autograde", "--quiet").returncode == 0
    before = grader("--root", root, "release-feedback", A)
    assert before.returncode == 2, before.stdout + before.stderr
    lines = before.stdout.splitlines()
    assert [line for line in lines if line.endswith(f" / {A}: no feedback")] and \
        all(line.endswith(f" / {A}: no feedback") for line in lines[:-2]), before.stdout
    assert before.stdout.count("no feedback generated yet") == 1 and f"feedback {A}`, then release again" in lines[-2]
    assert grader("--root", root, "feedback", A).returncode == 0
    after = grader("--root", root, "release-feedback", A)
    assert after.returncode == 0, after.stdout + after.stderr
    lines = after.stdout.splitlines()
    pages = [line for line in lines if f" / {A}: not in the exchange: " in line]
    assert len(pages) >= 4 and all(line.endswith(f"{A}.html") for line in pages), after.stdout
    assert after.stdout.count("another way") == 1 and after.stdout.count("submission secret") == 1, after.stdout


def test_the_demo_says_what_each_student_stands_for_and_whose_file_was_refused(course, tmp_path):
    """Issue 31 (19): the demo's "(1 file(s) rejected)" was followed by dana's line, as if hers were the file
    refused; and it did not say what each example student stands for."""
    from grader.demo import STANDS_FOR, collected_lines, example_class
    from grader.intake.collect import collect

    root = tmp_path / "course"
    shutil.copytree(course[0], root)
    shutil.rmtree(root / "submitted", ignore_errors=True)
    inbox = tmp_path / "inbox"
    notes = example_class(root, inbox, [A, B])
    for student in sorted({p.name for p in inbox.iterdir()}):
        assert any(note.startswith(f"{student}: ") or note.startswith(f"{student} / ") for note in notes), \
            (student, notes)
    assert set(STANDS_FOR) == {p.name for p in inbox.iterdir()}
    lines = collected_lines(collect(root, inbox, [A, B]), inbox)
    assert lines[0].endswith("1 file(s) refused, each named below:"), lines
    assert lines[1].startswith(f"refused: Émile Zola / {B} (Émile Zola/{B}.ipynb): "), lines
    assert len(lines) == 2, lines


def test_a_course_without_its_nbgrader_config_is_refused_with_the_command_that_writes_it(tmp_path):
    """A course folder whose nbgrader_config.py was deleted (found by issue 33's before/after runs: export and
    feedback showed traitlets' traceback) is refused by every command that reads it, naming the file and build;
    build writes it again and keeps what was there."""
    root = tmp_path / "course"
    build(root, FIXTURE)
    (root / "nbgrader_config.py").unlink()
    for args in (["export"], ["feedback"], ["release"]):
        done = grader("--root", root, *args)
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        assert "nbgrader_config.py is missing" in done.stderr and " build" in done.stderr, (args, done.stderr)
        assert "Traceback" not in done.stderr, (args, done.stderr)
    assert grader("--root", root, "build", "--course", FIXTURE).returncode == 0
    assert (root / "nbgrader_config.py").is_file()



def test_the_table_says_what_the_solutions_own_run_reported(tmp_path):
    """Grading stops after a notebook's last graded test, so a solution cell after it that crashes shows in no
    student's grading: only the reference run sees it. autograde's table says it first under "needs attention",
    every time it prints, until the solution is fixed. A references file made from an earlier source, or changed
    after the grader wrote it, is not quoted (the next autograde computes it again)."""
    from classroom import graded_class, writable_copy
    from grader.authoring.coursedir import CourseDir
    from grader.engine.verdict.references import References
    from grader.engine.verdict.seal import course_key
    from grader.results.table import grade_table

    root, results = writable_copy(graded_class(), tmp_path)
    course = CourseDir(root)
    assert "the solution's own run" not in grade_table(root, results)
    crash = "cell 12: the kernel exited (exit status 3); later cells were not run"
    references = References.load(course.references(A), course_key(course.key))
    references.problems = [crash]
    references.save(course.references(A), course_key(course.key))
    attention = grade_table(root, results).split("needs attention:\n")[1].splitlines()
    assert attention[0] == (f"  {A}: the solution's own run: {crash}; fix the source notebook "
                            "(`course-grader check` fails on it)"), attention
    references.source_sha256 = "0" * 64  # made from an earlier source, fixed since: said no more
    references.save(course.references(A), course_key(course.key))
    assert "the solution's own run" not in grade_table(root, results)
    forged = json.loads(course.references(A).read_text(encoding="utf-8"))
    forged["problems"] = ["a line nobody's run wrote"]
    course.references(A).write_text(json.dumps(forged), encoding="utf-8")
    assert "nobody's run" not in grade_table(root, results)
