"""nbgrader's own lab extensions on a course course-grader built and released, through a real server.

`course-grader release` also puts each assignment into the course's exchange, so the student's
Assignments tab lists it; `make lab`'s student folder carries a small nbgrader_config.py so that the
server's course directory lies inside its root; the instructor's server (started in the course
directory) serves formgrader. Each test starts a real Jupyter server on 127.0.0.1 and asks its HTTP
API what a browser would ask.
"""
from __future__ import annotations

import json
import os
import sys
import urllib.parse
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest

from browser_support import running_lab
from classroom import A, FIXTURE, released_course
from grader.authoring.assembly import release
from grader.authoring.config import COURSE_ID
from grader.authoring.coursedir import CourseDir
from grader.engine.notebook import cells as nbs
from grader.lab import student_config, student_copies



@contextmanager
def jupyter_server(cwd: Path, tmp: Path):
    """A Jupyter server with nbgrader's extensions, started in ``cwd`` (its root folder)."""
    env = dict(os.environ, JUPYTER_RUNTIME_DIR=str(tmp / "runtime"), HOME=str(tmp / "home"))
    log = tmp / f"server-{cwd.name}.log"
    argv = [sys.executable, "-m", "jupyter", "server", "--no-browser", "--ip=127.0.0.1",
            f"--ServerApp.root_dir={cwd}", "--allow-root"]
    with running_lab(argv, cwd, log, env) as server:
        yield server, log


def call(server, method: str, path: str, form: dict | None = None, timeout: float = 10):
    data = urllib.parse.urlencode(form).encode() if form is not None else None
    request = urllib.request.Request(server.url + path, data=data, method=method,
                                     headers={"Authorization": f"token {server.token}"})
    with urllib.request.urlopen(request, timeout=timeout) as reply:
        return json.loads(reply.read() or b"null")


@pytest.fixture(scope="module")
def released(tmp_path_factory):
    base = tmp_path_factory.mktemp("lab api")
    return base, released_course(base / "course")


def test_release_puts_each_assignment_into_the_exchange(released):
    _, root = released
    outbound = CourseDir(root).exchange / COURSE_ID / "outbound" / A / f"{A}.ipynb"
    assert outbound.is_file()
    assert "BEGIN SOLUTION" not in outbound.read_text(encoding="utf-8")
    release(root)  # again: nbgrader would refuse "Destination already exists" without unrelease
    assert outbound.is_file()


def test_the_students_assignment_list_and_validate_work(released):
    base, root = released
    student = base / "student"
    student_copies(root, FIXTURE.parent, target=student)
    student_config(root, target=student)
    nbs.write_notebook(nbs.read_notebook(FIXTURE), student / "solved.ipynb")
    with jupyter_server(student, base) as (url, log):
        listed = call(url, "GET", f"/assignments?course_id={COURSE_ID}")
        assert listed["success"], listed
        # released to the exchange, and already "fetched": make lab's copy sits where a fetch puts it
        assert {(a["assignment_id"], a["status"]) for a in listed["value"]} == {(A, "fetched")}
        stub = call(url, "POST", "/assignments/validate", {"path": f"{A}/{A}.ipynb"}, timeout=1200)
        solved = call(url, "POST", "/assignments/validate", {"path": "solved.ipynb"}, timeout=1200)
        said = log.read_text()
    assert stub["success"] and len(stub["value"]["failed"]) == 3, stub  # every graded test
    # nbgrader's validate counts text on stderr as a failure: of the solution's tests only the one
    # whose answer warns on purpose fails there (course-grader's validate passes it)
    assert solved["success"], solved
    assert [f["source"].splitlines()[0] for f in solved["value"]["failed"]] == [
        '"""mean_of returns the mean as a 0-d tensor (and may print warnings)."""'], solved
    assert "not a subdirectory of the notebook server root" not in said, said[-3000:]
    assert "No nbgrader_config.py file found" not in said, said[-3000:]


def test_formgrader_lists_the_course_in_the_instructors_server(released):
    base, root = released
    with jupyter_server(root, base) as (url, log):
        assignments = call(url, "GET", "/formgrader/api/assignments")
    assert [a["name"] for a in assignments] == [A], assignments
    assert assignments[0]["releaseable"] and assignments[0]["status"] == "released", assignments
