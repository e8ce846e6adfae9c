"""The fixture course, a small class made from it, and the one reader of its gradebook, shared by
the end-to-end tests.

    root = released_course(tmp / "course")
    write_inbox(tmp / "inbox", {**class_of(root), "fay": with_answer("scale", "def scale(x, f): ...")})
    write_corrupt(tmp / "inbox", "hal")
    collect(root, tmp / "inbox"); autograde(root)
    cell_scores(root)   # {(student, grade cell): auto score}, as nbgrader's gradebook holds them
"""
from __future__ import annotations

import shutil
from pathlib import Path

from grader.authoring.assembly import build, release
from grader.authoring.coursedir import CourseDir
from grader.engine import course as nbs

FIXTURE = Path(__file__).parent / "fixtures" / "grader" / "course" / "01_fixture.ipynb"
A = "01_fixture"  # scale (2 pts), pairwise (3 pts), mean_of (1 pt): the test cells' nbgrader points


def released_course(root: Path) -> Path:
    """The fixture course built and released at ``root``."""
    build(root, FIXTURE.parent)
    release(root)
    return root


def answer_of(grade_id: str) -> str:
    """The source of the fixture's solution cell ``grade_id``."""
    return next(c.source for c in nbs.read_notebook(FIXTURE).cells if nbs.nbgrader_meta(c).get("grade_id") == grade_id)


def with_answer(grade_id: str, source: str) -> nbs.NotebookNode:
    """The fixture's full solution with the solution cell ``grade_id`` replaced by ``source``."""
    nb = nbs.read_notebook(FIXTURE)
    for cell in nb.cells:
        if nbs.nbgrader_meta(cell).get("grade_id") == grade_id:
            cell.source = source
    return nb


def broadcasting_bug() -> nbs.NotebookNode:
    """The solution with the pairwise difference transposed: (n, m) becomes (m, n)."""
    bug = nbs.read_notebook(FIXTURE)
    for cell in bug.cells:
        cell.source = cell.source.replace("x[:, None, :] - y[None, :, :]", "y[:, None, :] - x[None, :, :]")
    return bug


def class_of(root: Path) -> dict[str, nbs.NotebookNode]:
    """ann solves everything, bob hands in the release, dan has a bug, eve solved one exercise."""
    source = nbs.read_notebook(FIXTURE)
    return {"ann": source, "bob": nbs.read_notebook(CourseDir(root).released_notebook(A)),
            "dan": broadcasting_bug(), "eve": nbs.stub(source, {"pairwise", "mean_of"})}


def write_inbox(inbox: Path, class_: dict[str, nbs.NotebookNode], assignment: str = A) -> Path:
    """``inbox/<student>/<assignment>.ipynb`` for each student of ``class_``; returns ``inbox``."""
    for student, nb in class_.items():
        nbs.write_notebook(nb, inbox / student / f"{assignment}.ipynb")
    return inbox


def write_corrupt(inbox: Path, student: str, assignment: str = A) -> Path:
    """An upload that is no notebook: JSON cut short, as a text editor or a failed download leaves it."""
    path = inbox / student / f"{assignment}.ipynb"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"cells": [')
    return path


def cell_scores(root: Path, assignment: str = A) -> dict[tuple[str, str], float | None]:
    """(student, grade cell) -> auto score of ``assignment``, read with nbgrader's own gradebook API
    (independent of the grader's markers)."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{Path(root) / 'gradebook.db'}") as gb:
        return {(s.student.id, g.name): g.auto_score
                for s in gb.assignment_submissions(assignment) for nb in s.notebooks for g in nb.grades}


def student_scores(root: Path, assignment: str = A) -> dict[str, float]:
    """student -> total auto score of ``assignment``, summed from :func:`cell_scores`."""
    totals: dict[str, float] = {}
    for (student, _), score in cell_scores(root, assignment).items():
        totals[student] = totals.get(student, 0.0) + (score or 0.0)
    return totals


def writable_copy(graded: tuple[Path, list], folder: Path, name: str = "course") -> tuple[Path, list]:
    """A copy of a module's graded course ``(root, results)`` in ``folder``, for a test that writes into
    it; the module's course stays as graded for the other tests."""
    root, results = graded
    copy = folder / name
    shutil.copytree(root, copy)
    return copy, results
