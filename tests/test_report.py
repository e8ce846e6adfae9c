"""The class report on a generated, already graded class (no kernel): counts checked against the
gradebook and the markers read independently here (sqlite3, json), escaping, old markers."""
from __future__ import annotations

import json
import os
import shutil
import sqlite3
import sys
from pathlib import Path

import pytest

from grader.authoring.coursedir import CourseDir
from grader.engine.grade import TestResult as Verdict
from grader.engine.verdict.compare import failing_keys
from grader.results.report import student_page_name, write_report
from grader.values import encode

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from synthetic_class import synthetic_class  # noqa: E402

HOSTILE = '<img src=x onerror="alert(1)">'


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> CourseDir:
    os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"  # nbgrader runs alembic
    root = tmp_path_factory.mktemp("class")
    synthetic_class(root, students=12, notebooks=2, seed=3, submitted=False)
    for name in ("01_nb", "02_nb"):  # a student whose id is HTML, graded like s0001
        target = root / "autograded" / HOSTILE / name
        shutil.copytree(root / "autograded" / "s0001" / name, target)
        marker = json.loads((target / "course-grader.json").read_text())
        marker["student"] = HOSTILE
        marker["problems"] = ["<script>alert(2)</script> in a reason"]
        (target / "course-grader.json").write_text(json.dumps(marker))
    (root / "submitted" / HOSTILE).mkdir(parents=True)
    return CourseDir(root)


def test_failing_keys_names_every_key_that_does_not_match():
    expected = {k: {"value": encode(v), "what": k} for k, v in (("a", 1), ("b", 2.0), ("c", [3]))}
    payloads = [{"key": "a", "value": encode(1)}, {"key": "b", "value": encode(2.5)}]  # b wrong, c never recorded
    assert failing_keys(expected, payloads) == ["b", "c"]
    assert Verdict("t", 1, 0, "failed", "r").failed_keys == []  # a default: old code building it still works


def test_page_counts_match_the_gradebook_and_markers(course):
    page = write_report(course).read_text(encoding="utf-8")
    with sqlite3.connect(course.gradebook) as db:
        due, = db.execute("select duedate from assignment where name='01_nb'").fetchone()
        late = db.execute("select count(*) from submitted_assignment s join assignment a on s.assignment_id=a.id "
                          "where a.name='01_nb' and s.timestamp > a.duedate").fetchone()[0]
    assert due is not None
    section = page.split(">01_nb</h2>")[1].split("<h2")[0]
    markers = [json.loads(p.read_text()) for p in course.root.glob("autograded/*/01_nb/course-grader.json")]
    assert f"<td>submissions graded</td><td>{len(markers)}</td>" in section
    assert f"<td>late</td><td>{late} (due" in section
    second = page.split(">02_nb</h2>")[1]
    assert "no due date set" in second  # the generator sets no due date on the last notebook
    # the hardest test: its share earned, from the markers
    tests = [t for m in markers for t in m["tests"]]
    shares = {g: sum(t["status"] == "passed" for t in tests if t["grade_id"] == g) / len(markers)
              for g in {t["grade_id"] for t in tests}}
    hardest = min(shares, key=shares.get)
    assert f"<code>{hardest}</code>" in section.split("<table>")[2].split("</tr>")[1]
    assert "exercise 7: check 2 of 3" in section  # a check's description, from the references file


def test_an_extension_makes_a_late_submission_on_time(course, tmp_path):
    """Lateness counts from the student's own due date, the assignment's plus the extension in the gradebook, as
    nbgrader's ``SubmittedAssignment.total_seconds_late`` counts it (the oracle here)."""
    from datetime import timedelta

    from nbgrader.api import Gradebook

    root = tmp_path / "extended"
    shutil.copytree(course.root, root)
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        late = sorted((s for s in gb.find_assignment("01_nb").submissions if s.total_seconds_late > 0),
                      key=lambda s: s.student.id)
        assert len(late) >= 2, "the generated class needs two late submissions"
        chosen, other = late[0], late[1]
        chosen.extension = timedelta(seconds=chosen.total_seconds_late + 3600)
        gb.db.commit()
        still_late = sum(1 for s in gb.find_assignment("01_nb").submissions if s.total_seconds_late > 0)
        student, hours = chosen.student.id, other.total_seconds_late / 3600
        late_one = other.student.id
    section = write_report(CourseDir(root)).read_text(encoding="utf-8").split(">01_nb</h2>")[1].split("<h2")[0]
    assert f"<td>late</td><td>{still_late} (due" in section
    page = write_report(CourseDir(root), student).read_text(encoding="utf-8")
    assert "on time" in page.split("01_nb")[1].split("</tr>")[0]
    page = write_report(CourseDir(root), late_one).read_text(encoding="utf-8")
    assert f"late by {hours:.1f} h" in page


def test_student_strings_are_escaped_and_images_have_alt_text(course):
    page = write_report(course).read_text(encoding="utf-8")
    assert HOSTILE not in page and "<script>" not in page
    assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in page
    folder = course.root / "report"
    for img in page.split("<img ")[1:]:
        src = img.split('src="')[1].split('"')[0]
        assert (folder / src).is_file() and 'alt="' in img and 'alt=""' not in img
    one = write_report(course, student=HOSTILE)
    assert one.name == student_page_name(HOSTILE) and one.parent == folder
    assert HOSTILE not in one.read_text(encoding="utf-8")
    with pytest.raises(KeyError, match="no student"):
        write_report(course, student="nobody")


def test_old_markers_without_keys_or_seconds_still_report(course, tmp_path):
    root = tmp_path / "old"
    shutil.copytree(course.root, root)
    for path in root.glob("autograded/*/*/course-grader.json"):
        marker = json.loads(path.read_text())
        marker.pop("seconds")
        for t in marker["tests"]:
            keys = t.pop("failed_keys")
            if t["status"] != "passed" and keys:  # what verdicts wrote before the keys were stored
                t["reason"] = f"Wrong result: check ({keys[0]!r}): value differs."
        path.write_text(json.dumps(marker))
    page = write_report(CourseDir(root)).read_text(encoding="utf-8")
    assert "not recorded (graded before grading times were stored)" in page
    assert "failed exercise 7: check 2 of 3" in page


def test_an_assignment_nobody_submitted_says_so_not_that_times_were_lost(tmp_path):
    """Issue 31 (15): an assignment with no submission read "not recorded (graded before grading times were
    stored)", as if something had been graded and its times lost."""
    from nbgrader.api import Gradebook

    os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"  # nbgrader runs alembic
    root = tmp_path / "class"
    root.mkdir()
    synthetic_class(root, students=3, notebooks=1, seed=1, submitted=False)
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        gb.add_assignment("02_nobody")
    page = write_report(CourseDir(root)).read_text(encoding="utf-8")
    nobody = page.split('id="a-1">02_nobody</h2>')[1].split("</table>")[0]
    assert "no submission graded yet" in nobody and "graded before grading times" not in nobody, nobody
    first = page.split('id="a-0">01_nb</h2>')[1].split("</table>")[0]
    assert "no submission graded yet" not in first, first
