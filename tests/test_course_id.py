"""`course-grader build --course-id ID`: nbgrader's course id, written once, read by every tool (no kernel).

The id goes into the course's nbgrader_config.py; nbgrader's own API, a rebuild without the option and
the student's lab configuration (`make lab`) all read it from there. An id the exchange cannot use as a
folder name or in a file pattern is refused with a sentence saying what is accepted, before anything is
written.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from grader.authoring.config import COURSE_ID, load_config, nbgrader_api
from grader.cli import main
from grader.lab import student_config

COURSE = Path(__file__).parent / "fixtures" / "grader" / "asserts"


def build(root: Path, *extra: str) -> int:
    return main(["build", "--root", str(root), "--course", str(COURSE), *extra])


def test_the_default_course_id_is_unchanged(tmp_path, capsys):
    assert build(tmp_path / "course") == 0
    assert COURSE_ID == "d2lite" and load_config(tmp_path / "course").CourseDirectory.course_id == "d2lite"
    assert "course id 'd2lite'" in capsys.readouterr().out


def test_a_course_id_reaches_nbgrader_a_rebuild_and_the_students_lab(tmp_path):
    root = tmp_path / "course"
    assert build(root, "--course-id", "ml-101.fall_2026") == 0
    assert "c.CourseDirectory.course_id = 'ml-101.fall_2026'" in (root / "nbgrader_config.py").read_text()
    assert nbgrader_api(root).coursedir.course_id == "ml-101.fall_2026"
    assert build(root) == 0, "a rebuild without --course-id"
    assert load_config(root).CourseDirectory.course_id == "ml-101.fall_2026", "a rebuild keeps the course's id"
    student = student_config(root, tmp_path / "student").read_text()
    assert "c.CourseDirectory.course_id = 'ml-101.fall_2026'" in student


@pytest.mark.parametrize("bad", ["", " ml101", "ml 101", "ml/101", "../ml", ".hidden", "ml*", "ml[1]", "kurs-ü",
                                 "x" * 65])
def test_an_id_the_exchange_cannot_use_is_refused_before_anything_is_written(tmp_path, capsys, bad):
    root = tmp_path / "course"
    assert build(root, "--course-id", bad) == 2
    said = capsys.readouterr().err
    assert f"the course id {bad!r} is not accepted" in said and "letters, digits" in said, said
    assert not (root / "nbgrader_config.py").exists()


def test_the_id_of_a_course_with_a_gradebook_is_not_changed(tmp_path, capsys):
    root = tmp_path / "course"
    assert build(root, "--course-id", "ml101") == 0
    (root / "gradebook.db").write_bytes(b"")  # grades are filed under 'ml101'
    assert build(root, "--course-id", "ml102") == 2
    said = capsys.readouterr().err
    assert "already has a gradebook under the course id 'ml101'" in said and "'ml102'" in said, said
    assert load_config(root).CourseDirectory.course_id == "ml101"
    assert build(root, "--course-id", "ml101") == 0, "the same id again is fine"


def test_build_warns_about_a_notebook_without_nbgrader_cells_and_goes_on(tmp_path, capsys):
    import shutil

    import nbformat

    course = tmp_path / "src"
    course.mkdir()
    shutil.copy(COURSE / "01_asserts.ipynb", course)
    plain = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# Notes"),
                                            nbformat.v4.new_code_cell("x = 1")])
    nbformat.write(plain, str(course / "02_notes.ipynb"))
    assert main(["build", "--root", str(tmp_path / "course"), "--course", str(course)]) == 0
    said = capsys.readouterr()
    warned = [line for line in said.err.splitlines() if "warning" in line]
    assert len(warned) == 1 and "02_notes.ipynb has no nbgrader cells: nothing in it is graded" in warned[0], said.err
    assert "Create Assignment" in warned[0]
    assert (tmp_path / "course" / "source" / "02_notes" / "02_notes.ipynb").exists(), "the build goes on"
    assert "2 assignment(s)" in said.out
