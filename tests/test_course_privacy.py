"""The course folder is its owner's; the exchange beside it is everyone's, as nbgrader's (issue 28, item 7).

``build`` left the course folder world-readable with the local exchange inside it (``exchange/`` 0777, no
sticky bit): another user of the machine read the solutions, hidden tests, gradebook and another
student's submission. Here a course is built and released in a folder every user can reach, a student
(uid 12345) has submitted, and another local user (``nobody``, through ``setpriv``) tries: they read
nothing of the course and cannot move or remove the student's folder, the course's exchange folder or
the release, while they can still read the release and submit (the exchange works for them). Controls:
the same reads and moves succeed once the folder is 0755 and the inbound folder has no sticky bit.
"""
from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest

from grader.authoring.assembly import build, release
from grader.authoring.config import configured_course_id
from grader.authoring.coursedir import CourseDir

FIXTURE = Path(__file__).parent / "fixtures" / "grader" / "manual" / "01_manual.ipynb"
A = "01_manual"
STUDENT_UID = 12345
AS_NOBODY = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--", "sh", "-c"]

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None,
                                reason="needs root and setpriv to act as another local user")


def as_nobody(script: str) -> bool:
    """Whether ``script`` succeeds when run as the user ``nobody``."""
    return subprocess.run([*AS_NOBODY, script], capture_output=True, timeout=60).returncode == 0


@pytest.fixture(scope="module")
def course():
    base = Path(tempfile.mkdtemp(prefix="course-privacy-"))
    base.chmod(0o755)  # every user reaches what is in it (pytest's tmp_path is root's only)
    root = base / "course"
    build(root, FIXTURE.parent)
    release(root)
    inbound = CourseDir(root).exchange / configured_course_id(root) / "inbound"
    submission = inbound / f"ann+{A}+2026-11-27 10:00:00.000000 UTC+secret"  # as nbgrader's submit names it
    submission.mkdir()
    (submission / f"{A}.ipynb").write_text("{}")
    for path in (submission, submission / f"{A}.ipynb"):
        os.chown(path, STUDENT_UID, STUDENT_UID)
    submission.chmod(0o755)
    yield root, submission
    shutil.rmtree(base)


def test_build_makes_the_course_folder_its_owners_and_the_exchange_sticky(course):
    root, submission = course
    exchange = CourseDir(root).exchange
    assert stat.S_IMODE(root.stat().st_mode) == 0o700
    assert exchange.parent == root.parent and root not in exchange.parents
    assert stat.S_IMODE(exchange.stat().st_mode) == 0o1777
    assert stat.S_IMODE(submission.parent.stat().st_mode) & stat.S_ISVTX


@pytest.mark.parametrize("path", ["gradebook.db", f"source/{A}/{A}.ipynb", f"release/{A}/{A}.ipynb",
                                  ".course-grader-key", "nbgrader_config.py", "."])
def test_another_user_reads_nothing_of_the_course(course, path):
    root, _ = course
    target = root / path
    read = f"ls '{target}'" if target.is_dir() else f"cat '{target}' > /dev/null"
    if target.exists():
        assert not as_nobody(read), path
    assert not as_nobody(f"ls '{root}/source'")


def test_the_control_reads_what_a_0755_course_folder_holds(course):
    root, _ = course
    root.chmod(0o755)
    try:
        assert as_nobody(f"cat '{root}/gradebook.db' > /dev/null && ls '{root}/source/{A}'")
    finally:
        root.chmod(0o700)


def test_another_user_uses_the_exchange_but_moves_or_removes_nothing_of_anothers(course):
    root, submission = course
    exchange = CourseDir(root).exchange
    course_folder = exchange / configured_course_id(root)
    assert as_nobody(f"cat '{course_folder}/outbound/{A}/{A}.ipynb' > /dev/null"), "the release is readable"
    assert as_nobody(f"mkdir '{submission.parent}/nobody+{A}+x'"), "and a submission can be made"
    for script in (f"mv '{submission}' '{submission.parent}/stolen'", f"rm -rf '{submission}'",
                   f"mv '{course_folder}' '{exchange}/moved'", f"rm -rf '{course_folder}/outbound'"):
        assert not as_nobody(script), script
    assert (submission / f"{A}.ipynb").is_file() and (course_folder / "outbound" / A).is_dir()


def test_the_control_moves_anothers_submission_without_the_sticky_bit(course):
    root, submission = course
    inbound = submission.parent
    mode = stat.S_IMODE(inbound.stat().st_mode)
    inbound.chmod(mode & ~stat.S_ISVTX)  # nbgrader's own 2733
    try:
        assert as_nobody(f"mv '{submission}' '{inbound}/stolen' && mv '{inbound}/stolen' '{submission}'")
    finally:
        inbound.chmod(mode)


def test_build_warns_on_a_course_folder_open_to_others_and_moves_an_old_exchange_out(tmp_path, capsys):
    root = tmp_path / "course"
    (root / "exchange" / "d2lite" / "inbound").mkdir(parents=True)  # where courses built before kept it
    root.chmod(0o755)
    build(root, FIXTURE.parent)
    said = capsys.readouterr().err
    assert "was open to other users" in said and "0755" in said and stat.S_IMODE(root.stat().st_mode) == 0o700
    assert not (root / "exchange").exists() and (CourseDir(root).exchange / "d2lite" / "inbound").is_dir()
    build(root, FIXTURE.parent)
    assert "open to other users" not in capsys.readouterr().err
