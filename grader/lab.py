"""``make lab`` / ``make instructor-lab``: JupyterLab for a student or for the instructor.

A student works on copies of the *released* notebooks (``build/student/<assignment>/``, made once
and never overwritten), never on the sources that hold the solutions. The instructor's lab opens
the repository (``course/`` sources and the built course) with nbgrader's formgrader pointed at the
course directory.

The student's lab reads a configuration folder of its own, ``build/student/.jupyter/`` (put first
on ``JUPYTER_CONFIG_PATH``; the user's ``~/.jupyter`` is left alone): its ``labconfig/page_config.json``
turns off nbgrader's instructor tools (Create Assignment, Formgrader, Courses) and JupyterLab's
news pop-up (``@jupyterlab/apputils-extension:announcements``), see :data:`STUDENT_DISABLED`.
"""
from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

from .authoring.assembly import assignments, build, course_folder, release
from .authoring.config import configured_course_id
from .authoring.coursedir import CourseDir
from .authoring.invocation import command

__all__ = ["STUDENT_DIR", "STUDENT_DISABLED", "student_copies", "student_config", "student_lab_config",
           "student_lab_environment", "student_banner", "run_lab"]

STUDENT_DIR = Path("build/student")
STUDENT_DISABLED = (  # JupyterLab plugins a student's lab does not load
    "@jupyter/nbgrader:create-assignment",  # the instructor's "Create Assignment" panel
    "@jupyter/nbgrader:formgrader",
    "@jupyter/nbgrader:course-list",
    "@jupyterlab/apputils-extension:announcements",  # "Would you like to get notified about news?"
)
STUDENT_CONFIG = """\
# nbgrader's student side (assignment list, Validate button) for `make lab`, written by course-grader.
# It imports nothing of the course: a student's environment needs only d2lite, torch and jupyterlab.
c = get_config()  # noqa: F821
c.CourseDirectory.course_id = {course_id!r}
c.CourseDirectory.root = {root!r}  # fetched assignments land here, inside the lab's root folder
c.Exchange.root = {exchange!r}
"""


def student_copies(root: Path, course: Path | None, target: Path = STUDENT_DIR) -> list[Path]:
    """Release when needed, then copy each released assignment that the student does not have yet."""
    built = CourseDir(root).assignments()
    if not built or not all(CourseDir(root).released_notebook(a, nb).is_file()
                            for a in built for nb in CourseDir(root).notebooks(a)):
        build(root, course)
        release(root)
    made = []
    for assignment in assignments(root):
        folder = target / assignment
        if not folder.exists():
            shutil.copytree(CourseDir(root).release(assignment), folder)
            made.append(folder)
    return made


def student_config(course_root: Path, target: Path = STUDENT_DIR) -> Path:
    """Write ``target/nbgrader_config.py`` for a lab started in ``target``: the course's exchange,
    and a course directory under the server's root (nbgrader logs an error otherwise)."""
    path = target / "nbgrader_config.py"
    target.mkdir(parents=True, exist_ok=True)
    path.write_text(STUDENT_CONFIG.format(course_id=configured_course_id(course_root), root=str(target.resolve()),
                                          exchange=str(CourseDir(course_root.resolve()).exchange)),
                    encoding="utf-8")
    return path


def student_lab_config(target: Path = STUDENT_DIR) -> Path:
    """Write the student lab's own configuration folder (``target/.jupyter``); return its path."""
    folder = target / ".jupyter"
    (folder / "labconfig").mkdir(parents=True, exist_ok=True)
    page = {"disabledExtensions": {name: True for name in STUDENT_DISABLED}}
    (folder / "labconfig" / "page_config.json").write_text(json.dumps(page, indent=2) + "\n", encoding="utf-8")
    return folder


def student_lab_environment(target: Path = STUDENT_DIR, environ: dict | None = None) -> dict[str, str]:
    """The environment of the student's lab: its configuration folder first on JUPYTER_CONFIG_PATH."""
    env = dict(os.environ if environ is None else environ)
    folder = str(student_lab_config(target).resolve())
    env["JUPYTER_CONFIG_PATH"] = os.pathsep.join(p for p in (folder, env.get("JUPYTER_CONFIG_PATH")) if p)
    return env


def student_banner(root: Path) -> str:
    """What ``make lab`` prints: where the notebooks are, and a validate command that works as shown
    from the folder ``make lab`` ran in (``.venv/bin`` is not on the student's PATH)."""
    first = assignments(root)[0]
    return (f"student lab on {STUDENT_DIR}/ (your copies of the released notebooks). To self-check a "
            f"notebook, use its Validate button, or run, in this folder (where `make lab` ran), "
            f"`{command(f'validate {STUDENT_DIR}/{first}/{first}.ipynb', module=True)}`")


def run_lab(root: Path, *, instructor: bool = False, course: Path | None = None) -> int:
    jupyter = str(Path(sys.executable).parent / "jupyter")
    if instructor:
        if not CourseDir(root).assignments():
            build(root, course)
        here, root = Path.cwd(), root.resolve()
        print(f"instructor lab: sources in {course_folder(course)}/, the nbgrader course in {root} "
              "(Nbgrader > Formgrader)")
        os.chdir(root)  # formgrader reads ./nbgrader_config.py
        args = [jupyter, "lab", f"--ServerApp.root_dir={here}", f"--CourseDirectory.root={root}"]
        env = dict(os.environ)
    else:
        for folder in student_copies(root, course):
            print(f"new copy of the released notebook in {folder}/")
        print(student_banner(root))
        student_config(root)
        env = student_lab_environment()
        os.chdir(STUDENT_DIR)  # nbgrader reads ./nbgrader_config.py
        args = [jupyter, "lab", f"--ServerApp.root_dir={Path.cwd()}"]
    if os.geteuid() == 0:  # Jupyter refuses root without it (containers, CI machines)
        args.append("--allow-root")
    os.execve(args[0], args, env)
    return 0  # not reached
