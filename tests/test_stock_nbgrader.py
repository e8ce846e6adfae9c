"""Stock nbgrader on a course-grader course directory: the same scores, or a clear refusal.

An instructor may run nbgrader's own commands in the course directory. With the course's package
installed they must score every cell as course-grader does (``grader.stock``). In a Python
environment without it (a JupyterHub image built without the course) every command must refuse,
saying what to install, and write nothing: no feedback page (it would show hidden tests), no grade.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from classroom import A, class_of, released_course, write_inbox
from grader.batch import autograde
from grader.collect import collect
NBGRADER = "import sys; from nbgrader.apps.nbgraderapp import main; sys.exit(main())"


def cell_scores(root: Path) -> dict[tuple[str, str], float]:
    """(student, grade cell) -> auto score, as nbgrader's gradebook holds it."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        return {(s.student.id, g.name): g.auto_score
                for s in gb.assignment_submissions(A) for nb in s.notebooks for g in nb.grades}


@pytest.fixture(scope="module")
def class_dirs(tmp_path_factory):
    """The fixture course with four students, graded by course-grader; and an ungraded copy."""
    base = tmp_path_factory.mktemp("stock")
    root = released_course(base / "course")
    collect(root, write_inbox(base / "inbox", class_of(root)))
    copy = base / "stock"
    shutil.copytree(root, copy)
    autograde(root, workers=2, unsafe=False)
    return root, copy


def nbgrader(python: str, root: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COURSE_GRADER", "NBGRADER"))}
    env["PATH"] = str(Path(python).parent) + os.pathsep + env.get("PATH", "")
    return subprocess.run([python, "-c", NBGRADER, *args], cwd=root, env=env, capture_output=True,
                          text=True, timeout=900)


def test_stock_autograde_scores_every_cell_as_course_grader_does(class_dirs):
    ours, stock = class_dirs
    done = nbgrader(sys.executable, stock, "autograde", A, "--create")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    expected = cell_scores(ours)
    assert {s for s, _ in expected} == {"ann", "bob", "dan", "eve"}
    assert sum(expected.values()) > 0 and 0 in expected.values()  # a mix of right and wrong
    assert cell_scores(stock) == expected


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
                           cwd=env, capture_output=True, text=True)
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
