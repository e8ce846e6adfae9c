"""Stock nbgrader on a course-grader course directory: the same scores, or a clear refusal.

An instructor may run nbgrader's own commands in the course directory. Stock ``nbgrader autograde``
runs students' code unsandboxed, as the instructor, next to the gradebook and the solutions: it
refuses, saying why and what to run instead, and changes nothing, unless the instructor opts in
(``COURSE_GRADER_ALLOW_UNSANDBOXED=1``); then it must score every cell as course-grader does
(``grader.stock``). In a Python environment without the course's package (a JupyterHub image
built without the course) every command must refuse, saying what to install, and write nothing:
no feedback page (it would show hidden tests), no grade.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from classroom import (A, answer_of, cell_scores, class_of, graded_class, released_course, with_answer, writable_copy,
                       write_inbox)
from grader.engine.notebook import cells as nbs
from grader.intake.collect import collect
from grader.running.batch import autograde
from grader.stock import OPT_IN

NBGRADER = "import sys; from nbgrader.apps.nbgraderapp import main; sys.exit(main())"


@pytest.fixture(scope="module")
def class_dirs(tmp_path_factory):
    """The fixture course with five students, graded by course-grader; and an ungraded copy. fay's
    pairwise answer calls torch.cdist, which the test cell's answer_rules rule out: her values match,
    so the grader's reading of her source flags the test for review and keeps its points (stock nbgrader
    must agree). The four of :func:`class_of` are the run's shared graded class (a copy): only fay is
    graded here, by the same sandboxed autograde."""
    base = tmp_path_factory.mktemp("stock")
    fay = with_answer("pairwise", "import torch\ndef pairwise_sq_dists(x, y):\n    return torch.cdist(x, y) ** 2\n")
    copy = released_course(base / "stock")
    collect(copy, write_inbox(base / "inbox", {**class_of(copy), "fay": fay}))
    root, _ = writable_copy(graded_class(), base)
    collect(root, write_inbox(base / "fay", {"fay": fay}))
    assert autograde(root, workers=2, unsafe=False).pending == 1  # fay's; the class was graded before
    return root, copy


def nbgrader(python: str, root: Path, *args: str, **extra: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COURSE_GRADER", "NBGRADER"))}
    if python != sys.executable:  # an image without the course: no path of this checkout may reach it
        env.pop("PYTHONPATH", None)
    env.update(extra)
    env["PATH"] = str(Path(python).parent) + os.pathsep + env.get("PATH", "")
    return subprocess.run([python, "-c", NBGRADER, *args], cwd=root, env=env, capture_output=True,
                          text=True, timeout=900)


def test_stock_autograde_scores_every_cell_as_course_grader_does(class_dirs, tmp_path):
    ours, ungraded = class_dirs
    stock = shutil.copytree(ungraded, tmp_path / "stock")  # the module's copy stays ungraded
    done = nbgrader(sys.executable, stock, "autograde", A, "--create", **{OPT_IN: "1"})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    expected = cell_scores(ours)
    assert {s for s, _ in expected} == {"ann", "bob", "dan", "eve", "fay"}
    assert sum(expected.values()) > 0 and 0 in expected.values()  # a mix of right and wrong
    assert expected[("fay", "test_pairwise")] > 0 and expected[("fay", "test_scale")] > 0
    assert cell_scores(stock) == expected
    assert flagged(ours) == flagged(stock) == {("fay", "test_pairwise")}  # for a person, in formgrader


def flagged(root: Path) -> set[tuple[str, str]]:
    """(student, grade cell) with an automatic score that still needs a manual grade: flagged for review."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{Path(root) / 'gradebook.db'}") as gb:
        return {(s.student.id, g.name) for s in gb.assignment_submissions(A) for nb in s.notebooks
                for g in nb.grades if g.needs_manual_grade and g.auto_score is not None}


# An answer that, run as the instructor in the course directory, gives everyone 99 points in the
# gradebook and copies the solution notebook next to it.
TAMPER = """
import pathlib, sqlite3
for _folder in [pathlib.Path.cwd(), *pathlib.Path.cwd().parents]:
    if (_folder / "gradebook.db").exists():
        _db = sqlite3.connect(_folder / "gradebook.db")
        _db.execute("UPDATE grade SET manual_score = 99")
        _db.commit()
        _solution = _folder / "source" / "01_fixture" / "01_fixture.ipynb"
        (_folder / "stolen.ipynb").write_text(_solution.read_text())
        break
"""


def grades(root: Path) -> dict[str, tuple]:
    """grade row id -> (auto score, manual score), read from gradebook.db with sqlite."""
    import sqlite3

    with sqlite3.connect(root / "gradebook.db") as db:
        return {i: (a, m) for i, a, m in db.execute("SELECT id, auto_score, manual_score FROM grade")}


@pytest.fixture
def tampering_class(class_dirs, tmp_path):
    """A copy of the course graded by course-grader, plus a submission by `mal` that tampers."""
    ours, _ = class_dirs
    root = tmp_path / "course"
    shutil.copytree(ours, root)
    attack = with_answer("scale", TAMPER + answer_of("scale"))
    nbs.write_notebook(attack, root / "submitted" / "mal" / A / f"{A}.ipynb")
    return root


def test_stock_autograde_refuses_without_the_opt_in_and_changes_nothing(tampering_class):
    root = tampering_class
    before = grades(root)
    autograded = {p: p.read_bytes() for p in (root / "autograded").rglob("*") if p.is_file()}
    assert before and autograded
    done = nbgrader(sys.executable, root, "autograde", A, "--force", "--create")
    said = done.stdout + done.stderr
    assert done.returncode != 0, said[-2000:]
    for words in ("refused", "unsandboxed", "gradebook.db", f"autograde {A}", f"{OPT_IN}=1"):
        assert words in said, f"the refusal should say {words!r}; it said:\n{said[-2000:]}"
    assert grades(root) == before, "no grade may change"
    assert {p: p.read_bytes() for p in (root / "autograded").rglob("*") if p.is_file()} == autograded
    assert not (root / "stolen.ipynb").exists() and not (root / "autograded" / "mal").exists()


def test_with_the_opt_in_the_same_submission_does_what_the_refusal_warns_of(tampering_class):
    """The control: the refusal is what kept the grades; unsandboxed, the attack works."""
    root = tampering_class
    done = nbgrader(sys.executable, root, "autograde", A, "--student", "mal", "--create", **{OPT_IN: "1"})
    assert done.returncode == 0, (done.stdout + done.stderr)[-2000:]
    assert (root / "stolen.ipynb").exists()
    assert {manual for _, manual in grades(root).values()} == {99}


@pytest.fixture(scope="module")
def python_without_the_course(tmp_path_factory):
    """A real virtual environment with nbgrader and every other dependency, but not `grader`.

    Its site-packages names this project's (a .pth line), whose own .pth files - among them the
    editable install of this checkout - are therefore not processed: exactly "installed everything
    but the course"."""
    env = tmp_path_factory.mktemp("image") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True)
    python = env / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          check=True, capture_output=True, text=True).stdout.strip()
    Path(site, "course-dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    probe = subprocess.run([str(python), "-c", "import nbgrader, torch\ntry:\n import grader\n"
                            "except ImportError:\n print('no grader')"],
                           cwd=env, capture_output=True, text=True,
                           env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert probe.stdout.strip() == "no grader", probe.stderr
    return str(python)


@pytest.mark.parametrize("command", [["autograde", A, "--force"], ["generate_feedback", A, "--force"],
                                     ["validate", f"submitted/ann/{A}/{A}.ipynb"]])
def test_without_the_course_package_every_nbgrader_command_refuses(class_dirs, python_without_the_course,
                                                                    command):
    ours, _ = class_dirs
    before = cell_scores(ours)
    feedback_before = sorted((ours / "feedback").rglob("*.html")) if (ours / "feedback").exists() else []
    done = nbgrader(python_without_the_course, ours, *command)
    said = done.stdout + done.stderr
    assert done.returncode != 0, said[-2000:]
    assert "`grader` package is not importable" in said and "pip install" in said, said[-2000:]
    assert cell_scores(ours) == before
    after = sorted((ours / "feedback").rglob("*.html")) if (ours / "feedback").exists() else []
    assert after == feedback_before
