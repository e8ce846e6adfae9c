"""``make lab`` / ``make instructor-lab``: JupyterLab for a student or for the instructor.

A student works on copies of the *released* notebooks (``build/student/<assignment>/``, made once
and never overwritten), never on the sources that hold the solutions. The instructor's lab opens
the repository (``course/`` sources and the built course) with nbgrader's formgrader pointed at the
course directory.
"""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from .authoring.assembly import assignments, build, course_folder, release
from .authoring.config import COURSE_ID
from .authoring.coursedir import CourseDir
from .authoring.invocation import command

__all__ = ["STUDENT_DIR", "student_copies", "student_config", "run_lab"]

STUDENT_DIR = Path("build/student")
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
    if not built or not all(CourseDir(root).released_notebook(a).is_file() for a in built):
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
    path.write_text(STUDENT_CONFIG.format(course_id=COURSE_ID, root=str(target.resolve()),
                                          exchange=str(CourseDir(course_root.resolve()).exchange)),
                    encoding="utf-8")
    return path


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
    else:
        for folder in student_copies(root, course):
            print(f"new copy of the released notebook in {folder}/")
        print(f"student lab on {STUDENT_DIR}/ (released notebooks; run `{command('validate NB')}` to self-check)")
        student_config(root)
        os.chdir(STUDENT_DIR)  # nbgrader reads ./nbgrader_config.py
        args = [jupyter, "lab", f"--ServerApp.root_dir={Path.cwd()}"]
    if os.geteuid() == 0:  # Jupyter refuses root without it (containers, CI machines)
        args.append("--allow-root")
    os.execv(args[0], args)
    return 0  # not reached
