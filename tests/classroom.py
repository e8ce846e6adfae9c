"""The fixture course and a small class made from it, shared by the end-to-end tests.

    root = released_course(tmp / "course")
    write_inbox(tmp / "inbox", class_of(root, extra={"fay": ...}))
"""
from __future__ import annotations

from pathlib import Path

from grader.authoring.assembly import build, release
from grader.authoring.coursedir import CourseDir
from grader.engine import course as nbs

FIXTURE = Path(__file__).parent / "fixtures" / "grader" / "course" / "01_fixture.ipynb"
A = "01_fixture"


def released_course(root: Path) -> Path:
    """The fixture course built and released at ``root``."""
    build(root, FIXTURE.parent)
    release(root)
    return root


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


def write_inbox(inbox: Path, class_: dict[str, nbs.NotebookNode]) -> Path:
    for student, nb in class_.items():
        nbs.write_notebook(nb, inbox / student / f"{A}.ipynb")
    return inbox
