"""The friction a new student met (issue 21, part 4): validate's messages, what `make lab` prints,
and what the student's JupyterLab loads.

The CLI runs in a subprocess, as the student types it, from a folder laid out as a checkout
after `make lab` (``build/student/...``) or before it. JupyterLab's settings are read back with
``jupyter labextension list`` in the lab's own environment, not through a browser.
"""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

from classroom import A, FIXTURE

REPO = Path(__file__).resolve().parents[1]
ENV = dict(os.environ, PYTHONPATH=str(REPO))


def run(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(args, capture_output=True, text=True, env=ENV, cwd=cwd, timeout=600)


def validate(path: str, cwd: Path) -> subprocess.CompletedProcess:
    return run([sys.executable, "-m", "grader", "validate", path], cwd)


def test_validate_before_make_lab_says_to_run_it_first(tmp_path):
    """The README's path does not exist until `make lab` made the copies: the message says so."""
    done = validate(f"build/student/{A}/{A}.ipynb", tmp_path)
    assert done.returncode == 2
    assert "does not exist yet" in done.stdout and "Run `make lab` first" in done.stdout, done.stdout


def test_an_unreadable_notebook_is_the_students_and_says_how_to_get_it_back(tmp_path):
    folder = tmp_path / "build" / "student" / A
    (folder / ".ipynb_checkpoints").mkdir(parents=True)
    (folder / f"{A}.ipynb").write_text('{"cells": [', encoding="utf-8")
    checkpoint = folder / ".ipynb_checkpoints" / f"{A}-checkpoint.ipynb"
    checkpoint.write_bytes(FIXTURE.read_bytes())
    done = validate(f"build/student/{A}/{A}.ipynb", tmp_path)
    assert done.returncode == 2
    said = done.stdout
    assert "submitted" not in said and "your notebook is not valid JSON" in said, said
    assert "File > Revert Notebook to Checkpoint" in said and "rename the folder" in said, said
    restore = re.search(r"`(cp [^`]+)`", said).group(1)  # the command it gives works as shown
    assert subprocess.run(restore, shell=True, cwd=tmp_path).returncode == 0
    assert (folder / f"{A}.ipynb").read_bytes() == FIXTURE.read_bytes()


def test_make_lab_prints_a_validate_command_that_works_as_shown(tmp_path):
    """What `make lab` prints, run from the folder it ran in, with no virtualenv on PATH."""
    script = ("from pathlib import Path; from grader.lab import student_copies, student_banner; "
              f"student_copies(Path('course'), Path({str(FIXTURE.parent)!r})); print(student_banner(Path('course')))")
    banner = run([sys.executable, "-c", script], tmp_path)
    assert banner.returncode == 0, banner.stderr
    shown = re.search(r"`([^`]*validate[^`]*)`", banner.stdout).group(1)
    env = dict(ENV, PATH="/usr/bin:/bin")  # .venv/bin is not on a student's PATH
    done = subprocess.run(shlex.split(shown), capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert done.returncode == 1, done.stdout + done.stderr  # the untouched release fails its checks
    assert "visible checks pass" in done.stdout, done.stdout


def test_the_student_lab_hides_the_instructor_panel_and_the_news(tmp_path):
    from grader.lab import student_lab_environment

    env = student_lab_environment(tmp_path / "build" / "student", ENV)
    listed = subprocess.run([str(Path(sys.executable).parent / "jupyter"), "labextension", "list"],
                            capture_output=True, text=True, env=env, timeout=300)
    said = listed.stdout + listed.stderr
    disabled = said.split("Disabled extensions:")[1] if "Disabled extensions:" in said else ""
    for plugin in ("@jupyter/nbgrader:create-assignment", "@jupyterlab/apputils-extension:announcements"):
        assert plugin in disabled, said
    assert "@jupyter/nbgrader:assignment-list" not in disabled and "validate" not in disabled, said
    assert not (Path.home() / ".jupyter" / "labconfig" / "page_config.json").exists() \
        or "create-assignment" not in (Path.home() / ".jupyter" / "labconfig" / "page_config.json").read_text()


def test_the_running_student_lab_serves_those_plugins_as_disabled(tmp_path):
    """The page config JupyterLab hands the browser (what decides which plugins load)."""
    import json
    import urllib.request

    from browser_support import running_lab, student_environment
    from grader.lab import student_lab_environment

    folder = tmp_path / "build" / "student"
    env = student_lab_environment(folder, student_environment())
    argv = [str(Path(sys.executable).parent / "jupyter"), "lab", "--no-browser", "--ip=127.0.0.1",
            f"--ServerApp.root_dir={folder}"] + (["--allow-root"] if os.geteuid() == 0 else [])
    with running_lab(argv, folder, tmp_path / "lab.log", env=env) as server:
        html = urllib.request.urlopen(f"{server.url}/lab?token={server.token}", timeout=30).read().decode()
    data = re.search(r'<script id="jupyter-config-data" type="application/json">(.*?)</script>', html, re.S)
    disabled = json.loads(data.group(1))["disabledExtensions"]
    for plugin in ("@jupyter/nbgrader:create-assignment", "@jupyterlab/apputils-extension:announcements"):
        assert plugin in disabled, disabled
    assert not any("assignment-list" in name or "validate" in name for name in disabled), disabled


def test_an_unreadable_notebook_outside_the_student_folder_names_no_invented_folder(tmp_path):
    """Issue 31 (12): for a notebook outside build/student/<assignment>/, the hint named a folder that does
    not exist (build/student/turn4/): it now says where a fresh copy comes from without inventing one."""
    (tmp_path / "turn4").mkdir()
    (tmp_path / "turn4" / f"{A}.ipynb").write_text('{"cells": [', encoding="utf-8")
    done = validate(f"turn4/{A}.ipynb", tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    said = done.stdout
    assert "not valid JSON" in said and "start again from the released notebook" in said, said
    assert "build/student/" not in said and "turn4/`" not in said and "rename the folder" not in said, said
