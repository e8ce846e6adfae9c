"""collect for an assignment of several notebooks (nbgrader's layout; no kernel runs here).

A student's folder (or zip, or nbgrader exchange submission) holds the notebooks of an assignment; they are
stored together in submitted/<student>/<assignment>/ under their names in the assignment, a renamed one matched
by the nbgrader cells it shares with exactly one notebook of the course.
"""
from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from grader.cli import main
from grader.intake.collect import collect

NBCOURSE = Path(__file__).parent / "fixtures" / "grader" / "nbcourse"


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("nbcollect") / "course"
    assert main(["build", "--root", str(root), "--course", str(NBCOURSE)]) == 0
    return root


@pytest.fixture
def root(built, tmp_path) -> Path:
    import shutil

    return shutil.copytree(built, tmp_path / "course")


def notebook(name: str) -> bytes:
    return (NBCOURSE / "week1" / f"{name}.ipynb").read_bytes()


def stored(root: Path, student: str) -> dict[str, bytes]:
    folder = root / "submitted" / student / "week1"
    return {p.name: p.read_bytes() for p in sorted(folder.glob("*.ipynb"))}


def test_a_students_folder_zip_or_subfolder_holds_the_notebooks_of_the_assignment(root, tmp_path):
    inbox = tmp_path / "inbox"
    (inbox / "ada").mkdir(parents=True)
    (inbox / "ada" / "sequences.ipynb").write_bytes(notebook("sequences"))
    (inbox / "ada" / "integrals.ipynb").write_bytes(notebook("integrals"))
    (inbox / "ben" / "week1").mkdir(parents=True)
    (inbox / "ben" / "week1" / "sequences.ipynb").write_bytes(notebook("sequences"))
    with zipfile.ZipFile(inbox / "cy.zip", "w") as archive:
        archive.writestr("sequences.ipynb", notebook("sequences"))
        archive.writestr("cy-integrals-final.ipynb", notebook("integrals"))  # renamed: matched by its cells
    report = collect(root, inbox)
    assert not report.rejected, report.rejected
    assert sorted((i.student, i.assignment) for i in report.imported) == [("ada", "week1"), ("ben", "week1"),
                                                                         ("cy", "week1")]
    both = {"integrals.ipynb": notebook("integrals"), "sequences.ipynb": notebook("sequences")}
    assert stored(root, "ada") == both and stored(root, "cy") == both
    assert stored(root, "ben") == {"sequences.ipynb": notebook("sequences")}

    again = collect(root, inbox)
    assert not again.imported and len(again.unchanged) == 3, "the same notebooks again change nothing"
    (inbox / "ben" / "week1" / "integrals.ipynb").write_bytes(notebook("integrals"))
    later = collect(root, inbox)
    assert [(i.student, bool(i.replaced)) for i in later.imported] == [("ben", True)]
    assert stored(root, "ben") == both


def test_an_exchange_submission_brings_every_notebook_of_the_assignment(root, tmp_path):
    folder = tmp_path / "exchange" / "inbound" / "ada+week1+2026-11-20 10:00:00.000000 UTC"
    folder.mkdir(parents=True)
    (folder / "sequences.ipynb").write_bytes(notebook("sequences"))
    (folder / "integrals.ipynb").write_bytes(notebook("integrals"))
    (folder / "trapezoids.png").write_bytes((NBCOURSE / "week1" / "trapezoids.png").read_bytes())
    report = collect(root, tmp_path / "exchange", check_owner=False)
    assert not report.rejected, report.rejected
    assert [(i.student, i.assignment, i.timestamp) for i in report.imported] == [
        ("ada", "week1", "2026-11-20 10:00:00.000000 UTC")]
    assert sorted(stored(root, "ada")) == ["integrals.ipynb", "sequences.ipynb"]


def test_a_notebook_of_no_assignment_is_refused_naming_the_expected_ones(root, tmp_path):
    (tmp_path / "inbox" / "ada").mkdir(parents=True)
    (tmp_path / "inbox" / "ada" / "notes.ipynb").write_text('{"cells": [], "metadata": {}, "nbformat": 4, '
                                                            '"nbformat_minor": 5}')
    report = collect(root, tmp_path / "inbox")
    assert [r.reason for r in report.rejected] == [
        "not recognised as any assignment notebook (expected one of: integrals.ipynb, sequences.ipynb)"], report.rejected


def test_similarity_reads_the_answers_of_every_notebook(root, tmp_path):
    from grader.authoring.coursedir import CourseDir
    from grader.results.similarity_check import check_assignment

    for student in ("ada", "ben"):
        (tmp_path / "inbox" / student).mkdir(parents=True)
        for name in ("sequences", "integrals"):
            (tmp_path / "inbox" / student / f"{name}.ipynb").write_bytes(notebook(name))
    collect(root, tmp_path / "inbox")
    result = check_assignment(CourseDir(root), "week1")
    assert sorted(result.answers) == ["integrals/midpoint", "integrals/trapezoid", "sequences/harmonic",
                                      "sequences/running_max"]
    assert all(sorted(by_student) == ["ada", "ben"] for by_student in result.answers.values()), result.answers


def test_a_damaged_notebook_is_refused_alone_and_named_for_its_notebook(root, tmp_path):
    from grader.authoring.coursedir import CourseDir

    (tmp_path / "inbox" / "ada").mkdir(parents=True)
    (tmp_path / "inbox" / "ada" / "sequences.ipynb").write_bytes(notebook("sequences"))
    (tmp_path / "inbox" / "ada" / "integrals.ipynb").write_text('{"cells": [')
    report = collect(root, tmp_path / "inbox")
    assert stored(root, "ada") == {"sequences.ipynb": notebook("sequences")}
    assert [r.where for r in report.rejected] == ["ada/integrals.ipynb"], report.rejected
    course = CourseDir(root)
    assert course.rejections("ada", "week1", "sequences") == []
    [why] = course.rejections("ada", "week1", "integrals")
    assert why.startswith("at collect: integrals.ipynb is not a readable notebook"), why
    assert course.rejections("ada", "week1") == course.rejections("ada", "week1", "integrals")
