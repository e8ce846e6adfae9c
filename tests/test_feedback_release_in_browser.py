"""Feedback that reaches a student: submitted through nbgrader's exchange, released by
`course-grader release-feedback`, fetched with the Fetch Feedback button of the student's JupyterLab
in a real headless Chromium.

The student works in a folder set up as `make lab` sets it up, submits with `nbgrader submit` as
this machine's user (so collect's owner check holds, as on a hub), and has a home of their own
(nbgrader's cache, where submit keeps the secret that names the released page). A second student's
notebook comes from an INBOX folder: it has no exchange counterpart, and says so without stopping
the release of the first.
"""
from __future__ import annotations

import contextlib
import getpass
import io
import os
import subprocess
import sys
import urllib.parse
from pathlib import Path

import pytest

from browser_support import launched_chromium, running_lab, student_environment
from classroom import A, FIXTURE, broadcasting_bug, released_course, write_inbox
from grader.authoring.coursedir import CourseDir
from grader.engine.notebook import cells as nbs

pytestmark = pytest.mark.required_in_ci(
    "install Debian's chromium (`make browser-deps`, i.e. `apt-get install chromium`) and check that "
    "`chromium --headless --no-sandbox --dump-dom about:blank` starts on this machine")

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "build" / "test-artifacts"
TIMEOUT_MS = 120_000


def course_grader(*argv: str) -> tuple[int, str]:
    """`course-grader ARGV` in this process: (exit status, what it printed)."""
    from grader.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = main(list(argv))
    return code, out.getvalue()


@pytest.fixture(scope="module")
def released(tmp_path_factory):
    """The fixture course graded and its feedback released; the student's folder, home and environment.

    Returns (course root, student folder, environment of the student's lab, the student's id,
    what `release-feedback` printed before and after `feedback`)."""
    from grader.intake.collect import collect
    from grader.lab import student_config, student_copies, student_lab_environment
    from grader.results.feedback import feedback
    from grader.running.batch import autograde

    base = tmp_path_factory.mktemp("feedback release")
    root, student, home = released_course(base / "course"), base / "student", base / "home"
    student_copies(root, FIXTURE.parent, target=student)
    student_config(root, target=student)
    nbs.write_notebook(broadcasting_bug(), student / A / f"{A}.ipynb")  # pairwise (3 pts) wrong, the rest right
    env = student_lab_environment(student, dict(student_environment(), HOME=str(home),
                                                JUPYTER_RUNTIME_DIR=str(home / "runtime")))
    env.pop("JUPYTER_DATA_DIR", None)  # nbgrader's cache lies in the student's own home
    submit = subprocess.run([sys.executable, "-m", "nbgrader", "submit", A], cwd=student, env=env,
                            capture_output=True, text=True, timeout=600)
    assert submit.returncode == 0, submit.stdout + submit.stderr
    inbox = write_inbox(base / "inbox", {"bob": broadcasting_bug()})

    collected = collect(root, CourseDir(root).exchange)  # the owner check holds: submitted as this user
    assert [(i.student, i.assignment) for i in collected.accepted] == [(getpass.getuser(), A)], collected
    collect(root, inbox)
    autograde(root, workers=1)
    before = course_grader("release-feedback", "--root", str(root))
    feedback(root)
    after = course_grader("release-feedback", "--root", str(root))
    return root, student, env, getpass.getuser(), before, after


def test_a_student_fetches_released_feedback_in_the_assignment_list(released, tmp_path):
    root, student, env, me, (code_before, before), (code_after, after) = released
    # before `feedback`, nothing can be released, and it says what to run
    assert code_before == 2, before
    assert before.count(f" / {A}: no feedback\n") == 2 and f"feedback {A}`, then release again" in before, before
    assert before.count("no feedback generated yet") == 1, before  # said once, not once per page (issue 31, 19)
    # after it: the exchange submission is released; the inbox one is listed, the run still succeeds
    assert code_after == 0, after
    assert f"{me} / {A}: released" in after, after
    assert f"bob / {A}: not in the exchange" in after and "another way" in after, after

    with contextlib.ExitStack() as stack:
        argv = [str(Path(sys.executable).parent / "jupyter"), "lab", "--no-browser", "--ip=127.0.0.1",
                f"--ServerApp.root_dir={student}"]
        if os.geteuid() == 0:
            argv.append("--allow-root")
        lab = stack.enter_context(running_lab(argv, student, tmp_path / "jupyterlab.log", env=env))
        chromium = stack.enter_context(contextlib.contextmanager(launched_chromium)())
        page = chromium.new_page(viewport={"width": 1400, "height": 900})
        page.goto(f"{lab.url}/lab?reset&token={lab.token}")
        page.locator(".lm-MenuBar-itemLabel", has_text="Nbgrader").click(timeout=TIMEOUT_MS)
        page.locator(".lm-Menu-itemLabel", has_text="Assignment List").click()
        submitted = page.locator("#submitted_assignments_list")
        submitted.get_by_text("(feedback available to fetch)").wait_for(timeout=TIMEOUT_MS)
        _screenshot(page, "feedback-available.png")
        submitted.get_by_role("button", name="Fetch Feedback").click()
        view = submitted.get_by_text("(view feedback)")
        view.wait_for(timeout=TIMEOUT_MS)
        view.click()
        page.locator(".jp-DirListing-item", has_text=f"{A}.html").wait_for(timeout=TIMEOUT_MS)
        _screenshot(page, "feedback-fetched.png")

        fetched = list((student / A / "feedback").glob(f"*/{A}.html"))
        assert len(fetched) == 1, fetched
        instructor = CourseDir(root).feedback(me, A) / f"{A}.html"
        assert fetched[0].read_bytes() == instructor.read_bytes()
        where = urllib.parse.quote(str(fetched[0].relative_to(student)))
        page.goto(f"{lab.url}/files/{where}?token={lab.token}")
        text = page.locator("body").inner_text(timeout=TIMEOUT_MS)
        _screenshot(page, "feedback-page.png")
    # the fixture's own points: pairwise's lost to the transposed difference, every other test's earned
    points = {nbs.nbgrader_meta(c)["grade_id"]: float(nbs.nbgrader_meta(c)["points"])
              for c in nbs.read_notebook(FIXTURE).cells if nbs.nbgrader_meta(c).get("grade")}
    for grade_id, p in points.items():  # nbgrader's score of the cell, and the grader's verdict line under it
        got = 0.0 if grade_id == "test_pairwise" else p
        shown = text.split(f"Grade cell: {grade_id}")[-1][:2000]
        assert f"Score: {got:.1f} / {p:.1f}" in shown and f"({got:g}/{p:g}): " in shown, (grade_id, text[:6000])
    earned, total = sum(points.values()) - points["test_pairwise"], sum(points.values())
    assert text.startswith(f"{A} (Score: {earned:.1f} / {total:.1f})"), text[:500]

    # the student submits a corrected notebook: the page graded from the first one is not released for it
    from grader.intake.collect import collect

    nbs.write_notebook(nbs.read_notebook(FIXTURE), student / A / f"{A}.ipynb")
    again = subprocess.run([sys.executable, "-m", "nbgrader", "submit", A], cwd=student, env=env,
                           capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stdout + again.stderr
    replaced = [i.replaced for i in collect(root, CourseDir(root).exchange).accepted]
    assert len(replaced) == 1 and replaced[0], replaced
    code, said = course_grader("release-feedback", "--root", str(root), "--student", me)
    assert code == 2 and f"{me} / {A}: outdated" in said and f"autograde {A}" in said, said


def _screenshot(page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / name))
