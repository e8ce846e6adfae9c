"""The fixture course, a small class made from it, and the one reader of its gradebook, shared by
the end-to-end tests.

    root = released_course(tmp / "course")
    write_inbox(tmp / "inbox", {**class_of(root), "fay": with_answer("scale", "def scale(x, f): ...")})
    write_corrupt(tmp / "inbox", "hal")
    collect(root, tmp / "inbox"); autograde(root)
    cell_scores(root)   # {(student, grade cell): auto score}, as nbgrader's gradebook holds them
    stock_nbgrader(stock, "autograde", "week1", "--create")   # stock nbgrader's own command line
    grade_rows(stock, "week1")   # {(student, notebook, cell): (auto score, needs manual grade)}
"""
from __future__ import annotations

import atexit
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from grader.authoring.assembly import build, release
from grader.authoring.coursedir import CourseDir
from grader.engine.notebook import cells as nbs

FIXTURE = Path(__file__).parent / "fixtures" / "grader" / "course" / "01_fixture.ipynb"
NBGRADER = "import sys; from nbgrader.apps.nbgraderapp import main; sys.exit(main())"
A = "01_fixture"  # scale (2 pts), pairwise (3 pts), mean_of (1 pt): the test cells' nbgrader points


_SHARED: Path | None = None  # the folder that every test process of this run shares (set by tests/conftest.py)


def share_across_processes(folder: Path) -> None:
    """Make the built course and the graded class once per test run in ``folder``, not once per process:
    under pytest-xdist every worker's session gives the same ``folder`` (its base temp's parent), and the
    first worker to need one makes it while the others wait on its file lock."""
    global _SHARED
    _SHARED = folder


def _made_once(name: str, make) -> Path:
    """``<shared folder>/<name>``, made by ``make(folder)`` once per test run (once per process without a
    shared folder). A ``done`` file, written last, marks it complete: one left half made by a failed
    ``make`` is removed and made again by the next caller."""
    if _SHARED is None:
        folder = Path(tempfile.mkdtemp(prefix=f"classroom-{name}-"))
        atexit.register(shutil.rmtree, folder, True)
        make(folder)
        return folder
    from filelock import FileLock

    folder = _SHARED / f"classroom-{name}"
    with FileLock(f"{folder}.lock"):
        if not (folder / "done").exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(parents=True)
            make(folder)
            (folder / "done").write_text("")
    return folder


_RELEASED: Path | None = None  # the fixture course built and released once per test run


def _build_released(folder: Path) -> None:
    from grader.running.batch import compute_references

    build(folder / "course", FIXTURE.parent)
    release(folder / "course")
    # The solution's reference values, sealed with the course's key, as `course-grader release` leaves them: every
    # copy grades its submissions without running the solution again (autograde checks the seal and the source).
    _, failed = compute_references(folder / "course")
    assert not failed, failed


def released_course(root: Path) -> Path:
    """The fixture course built and released at ``root``, with its solution's reference values sealed.

    nbgrader's generate_assignment and release take seconds and give the same course every time (no file
    holds the root's path), and so does the solution's reference run: the course is built once per test run
    (see :func:`share_across_processes`), and each call gets a full copy of it (gradebook, release, exchange,
    references and the key that seals them), which the caller may change as it likes."""
    global _RELEASED
    if _RELEASED is None:
        _RELEASED = _made_once("released", _build_released) / "course"
    shutil.copytree(_RELEASED, root, symlinks=True, dirs_exist_ok=True)
    copy_exchange(_RELEASED, root)
    return root


COURSE_NOTEBOOKS = ("01_tensors", "02_autograd")  # of the course itself (course/), for the tests that grade them
_RELEASED_NOTEBOOKS: Path | None = None


def _build_released_notebooks(folder: Path) -> None:
    from grader.running.batch import compute_references

    source = folder / "source"
    source.mkdir()
    for name in COURSE_NOTEBOOKS:
        shutil.copy(Path(__file__).resolve().parents[1] / "course" / f"{name}.ipynb", source)
    build(folder / "course", source)
    release(folder / "course")
    _, failed = compute_references(folder / "course", workers=2)
    assert not failed, failed


def released_course_notebooks(root: Path) -> Path:
    """:data:`COURSE_NOTEBOOKS` of course/ as one course, built, released and with their solutions' reference
    values sealed, at ``root``: a full copy of one made once per test run, as :func:`released_course`."""
    global _RELEASED_NOTEBOOKS
    if _RELEASED_NOTEBOOKS is None:
        _RELEASED_NOTEBOOKS = _made_once("course-notebooks", _build_released_notebooks) / "course"
    shutil.copytree(_RELEASED_NOTEBOOKS, root, symlinks=True, dirs_exist_ok=True)
    copy_exchange(_RELEASED_NOTEBOOKS, root)
    return root


def copy_exchange(root: Path, copy: Path) -> None:
    """The local exchange of the course at ``root`` copied beside its copy ``copy`` (the exchange lies beside a
    course, ``<root>-exchange``, and a course's nbgrader_config.py finds it there, wherever the course is)."""
    exchange, target = CourseDir(root).exchange, CourseDir(copy).exchange
    if exchange.is_dir():
        shutil.copytree(exchange, target, symlinks=True, dirs_exist_ok=True)


_GRADED: tuple[Path, list] | None = None  # the class of class_of, graded once per test run


def _grade_class(folder: Path) -> None:
    from grader.intake.collect import collect
    from grader.running.batch import autograde

    root = released_course(folder / "course")
    collect(root, write_inbox(folder / "inbox", class_of(root)))
    (folder / "outcomes.pickle").write_bytes(pickle.dumps(autograde(root, workers=2)))


def graded_class() -> tuple[Path, list]:
    """``(root, outcomes)``: :func:`class_of`'s class collected into the fixture course and graded by two
    workers, once per test run (see :func:`share_across_processes`; the outcomes travel between processes
    pickled). Read only: a test that writes takes :func:`writable_copy`."""
    global _GRADED
    if _GRADED is None:
        folder = _made_once("graded", _grade_class)
        _GRADED = folder / "course", pickle.loads((folder / "outcomes.pickle").read_bytes())
    return _GRADED


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
    copy_exchange(root, copy)
    return copy, results


def stock_nbgrader(root: Path, *args: str) -> None:
    """Run stock nbgrader's command line in ``root`` (none of course-grader's environment); fail on an error."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COURSE_GRADER", "NBGRADER"))}
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    done = subprocess.run([sys.executable, "-c", NBGRADER, *args], cwd=root, env=env, capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


def grade_rows(root: Path, assignment: str) -> dict[tuple[str, str, str], tuple[float | None, bool]]:
    """(student, notebook, grade cell) -> (auto score, needs manual grade) of ``assignment``, read with
    nbgrader's own gradebook API."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{Path(root) / 'gradebook.db'}") as gb:
        return {(s.student.id, nb.name, g.name): (g.auto_score, bool(g.needs_manual_grade))
                for s in gb.assignment_submissions(assignment) for nb in s.notebooks for g in nb.grades}


def stock_course(stock: Path, assignment: Path, header: Path, course_id: str = "") -> Path:
    """An nbgrader course root ``stock`` holding the folder ``assignment`` under ``source/`` and ``header`` as
    its IncludeHeaderFooter header (optionally a course id), released by stock nbgrader's generate_assignment;
    returns ``stock``."""
    shutil.copytree(assignment, stock / "source" / assignment.name)
    shutil.copyfile(header, stock / "source" / "header.ipynb")
    config = "c = get_config()\n" + (f"c.CourseDirectory.course_id = {course_id!r}\n" if course_id else "")
    (stock / "nbgrader_config.py").write_text(config + "c.IncludeHeaderFooter.header = 'source/header.ipynb'\n",
                                              encoding="utf-8")
    stock_nbgrader(stock, "generate_assignment", assignment.name, "--force")
    return stock
