"""Course assembly: an nbgrader course directory built from ``course/*.ipynb``, and its release.

Layout (nbgrader's own)::

    ROOT/nbgrader_config.py
    ROOT/gradebook.db
    ROOT/source/<assignment>/<assignment>.ipynb      one assignment per course notebook, or
    ROOT/source/<assignment>/*.ipynb                 the notebooks of an nbgrader-layout assignment folder
    ROOT/release/<assignment>/<assignment>.ipynb     student version (generate_assignment)
    ROOT-exchange/ (beside ROOT)                     the local exchange (release_assignment, submit); ROOT is 0700
    ROOT/submitted/<student>/<assignment>/...        collect
    ROOT/autograded/<student>/<assignment>/...       autograde
    ROOT/feedback/<student>/<assignment>/*.html      feedback
"""
from __future__ import annotations

import os
import shutil
import stat
import sys
from pathlib import Path

from ..engine.notebook.cells import is_support_file, is_task, nbgrader_meta, read_notebook
from ..errors import GraderError
from .config import CONFIG_NAME, configured_course_id, course_id_problem, nbgrader_api, write_config
from .coursedir import CourseDir
from .invocation import DEFAULT_ROOT, command

__all__ = ["DEFAULT_ROOT", "course_folder", "course_notebooks", "check_root", "build", "release",
           "assignments", "support_files"]


def course_notebooks(course: Path) -> list[Path]:
    """The source notebooks: ``course/*.ipynb``, a single notebook path, or every notebook of the assignment
    folders of a course in nbgrader's layout (:mod:`grader.authoring.nbcourse`; what ``check`` gates)."""
    if course.is_file():
        return [course]
    found = sorted(p for p in course.glob("*.ipynb") if not p.name.startswith("."))
    layout = _nbgrader_layout(course) if course.is_dir() else None
    if layout is not None:
        found = [nb for folder in layout.assignments.values() for nb in sorted(folder.glob("*.ipynb"))]
    if not found:
        raise GraderError(f"no notebooks found in {course}; expected course/NN_name.ipynb files")
    return found


def gated_notebooks(course: Path, scratch: Path) -> dict[Path, Path]:
    """What ``check`` gates: each of :func:`course_notebooks`, as the gate reads it -> the notebook it stands for.
    The assignments of a course in nbgrader's layout whose nbgrader_config.py sets its own region markers are
    copied into ``scratch`` with them written as nbgrader's defaults, as build copies them
    (:func:`grader.authoring.nbcourse.copy_assignment`, files and sub-folders included); any other notebook is
    gated where it is."""
    from .nbcourse import copy_assignment

    layout = _nbgrader_layout(course) if course.is_dir() else None
    if layout is None or not layout.markers:
        return {notebook: notebook for notebook in course_notebooks(course)}
    return {copy: folder / copy.name for assignment, folder in layout.assignments.items()
            for copy in copy_assignment(folder, scratch / assignment, markers=layout.markers)}


def course_folder(given: Path | None = None) -> Path:
    """The folder of source notebooks: ``given``; else ``./course``; else the ``course/`` folder of
    the checkout this package was installed from (so an installed command works anywhere)."""
    if given is not None:
        if not given.exists():
            raise GraderError(f"the course folder {given} does not exist; pass --course with the folder "
                              "that holds the source notebooks (NN_name.ipynb)")
        return given
    for candidate in (Path("course"), Path(__file__).resolve().parents[2] / "course"):
        if candidate.is_dir() and any(candidate.glob("*.ipynb")):
            return candidate
    raise GraderError("no course notebooks in ./course; pass --course with the folder that holds the "
                      "source notebooks (NN_name.ipynb)")


def check_root(root: Path, course: Path) -> Path:
    """Refuse a course directory inside the source folder (it would mix solutions into releases)."""
    root, course = root.resolve(), course.resolve()
    course_dir = course if course.is_dir() else course.parent
    if root == course_dir or course_dir in root.parents:
        raise GraderError(f"the course directory {root} is inside the source folder {course_dir}; "
                          "choose another place, e.g. build/course")
    return root


def build(root: Path, course: Path | None = None, course_id: str | None = None) -> list[str]:
    """Create/refresh the nbgrader course at ``root`` from the course notebooks; return assignment ids.

    course: ``course/*.ipynb`` (one assignment per notebook), or a course in nbgrader's layout (one folder per
    assignment, :mod:`grader.authoring.nbcourse`).
    course_id: nbgrader's course id, written into ``nbgrader_config.py``; None: the literal id an nbgrader-layout
    course's own nbgrader_config.py gives, else the one the course has (``d2lite`` for a new course)."""
    course = course_folder(course)
    root = check_root(root, course)
    layout = _nbgrader_layout(course)
    if layout is not None and course_id is None and layout.course_id is not None:
        if course_id_problem(layout.course_id):
            raise GraderError(f"{course / 'nbgrader_config.py'}: {course_id_problem(layout.course_id)}; "
                              "or pass --course-id")
        course_id = layout.course_id
    existed = root.is_dir()
    write_config(root, _course_id(root, course_id))
    keep_private(root, existed)
    shared_exchange(root)  # nbgrader logs "Unwritable directory" until it exists
    ids = _build_folders(root, layout) if layout is not None else \
        [_build_notebook(root, notebook) for notebook in course_notebooks(course)]
    from .semester import load_semester

    load_semester(root, CourseDir(root).assignments())  # a wrong semester file is said now, not at autograde
    return ids


PRIVATE = 0o700  # the course folder: solutions, hidden tests, the gradebook, every submission
EXCHANGE = 0o1777  # the exchange's root, as /tmp: anyone adds to it, only an entry's owner moves or removes it


def keep_private(root: Path, existed: bool = True) -> None:
    """Make ``root`` its owner's only (0700); say so on stderr when other users could read it before (a folder
    of another owner, e.g. shared by a group of instructors, is only named)."""
    found = root.stat()
    mode, ours = stat.S_IMODE(found.st_mode), found.st_uid == os.getuid()
    if existed and mode & 0o077:
        print(f"course-grader build: warning: {root} was open to other users of this machine (mode {mode:04o}): "
              "they could read the solutions, hidden tests, gradebook and submissions in it. "
              + ("It is now 0700 (yours only); the exchange students use is beside it" if ours else
                 "It is not yours: ask its owner to make it 0700"), file=sys.stderr)
    if ours:
        root.chmod(PRIVATE)


def shared_exchange(root: Path) -> Path:
    """The course's local exchange, beside ``root``: made (or moved there from ``root/exchange``, where courses
    built before kept it) and, when it is ours, given mode 1777 (nbgrader makes it 0777 and checks only those
    bits; the sticky bit keeps a student from moving or removing what another put there)."""
    exchange, old = CourseDir(root).exchange, Path(root) / "exchange"
    if old.is_dir() and not exchange.exists():
        old.rename(exchange)  # same file system: what students submitted keeps its owners
        print(f"course-grader build: the exchange moved out of the course folder, from {old} to {exchange}; "
              "restart the students' JupyterLab (its nbgrader_config.py names the exchange)", file=sys.stderr)
    exchange.mkdir(exist_ok=True)
    if exchange.stat().st_uid == os.getuid():
        exchange.chmod(EXCHANGE)
    return exchange


def _sticky_inbound(root: Path) -> None:
    """nbgrader's release makes ``inbound`` 2733 (students write into it, cannot list it): add the sticky bit,
    so that a student who learns another's folder name still cannot move or remove it."""
    inbound = CourseDir(root).exchange / configured_course_id(root) / "inbound"
    if inbound.is_dir() and inbound.stat().st_uid == os.getuid():
        inbound.chmod(stat.S_IMODE(inbound.stat().st_mode) | stat.S_ISVTX)


def _build_notebook(root: Path, notebook: Path) -> str:
    """Copy one course notebook, and the files it names, into ``source/<its stem>/``; return the stem."""
    _warn_without_cells(notebook)
    target = CourseDir(root).source(notebook.stem) / notebook.name
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(notebook, target)
    for support in support_files(notebook):
        shutil.copyfile(support, target.parent / support.name)
    return notebook.stem


def _warn_without_cells(notebook: Path) -> None:
    """Say on stderr what would grade differently than the author expects: no nbgrader cells at all, or an
    nbgrader task cell that is not locked (stock nbgrader's autograde fails on its checksum)."""
    if not _has_nbgrader_cells(notebook):
        print(f"course-grader build: warning: {notebook} has no nbgrader cells: nothing in it is graded; create "
              "the assignment with nbgrader's Create Assignment panel in JupyterLab", file=sys.stderr)
    for grade_id in _unlocked_tasks(notebook):
        print(f"course-grader build: warning: {notebook}: the task cell {grade_id!r} is not locked; stock "
              "nbgrader's autograde fails on it (lock it: Create Assignment marks a task read-only)", file=sys.stderr)


def _unlocked_tasks(notebook: Path) -> list[str]:
    try:
        cells = read_notebook(notebook).cells
    except Exception:  # noqa: BLE001 - unreadable: the gate and nbgrader say what is wrong with it
        return []
    return [nbgrader_meta(c).get("grade_id", "?") for c in cells if is_task(c) and not nbgrader_meta(c).get("locked")]


def _nbgrader_layout(course: Path):
    """``course`` read as nbgrader's layout (:mod:`grader.authoring.nbcourse`), or None; its settings that build
    could not read are said on stderr."""
    from .nbcourse import read_layout

    try:
        layout = read_layout(course)
    except FileNotFoundError as error:
        raise GraderError(str(error)) from None
    for sentence in layout.ignored if layout else []:
        print(f"course-grader build: warning: {sentence}", file=sys.stderr)
    return layout


def _build_folders(root: Path, layout) -> list[str]:
    """Copy each assignment folder of a course in nbgrader's layout into ``source/<assignment>/`` (its notebooks
    with the header and footer around them); a notebook left in ``source/<assignment>/`` by an earlier build and
    no longer in the folder is removed (it would be graded). Return the assignment ids."""
    from .nbcourse import copy_assignment

    for assignment, folder in layout.assignments.items():
        target = CourseDir(root).source(assignment)
        copied = copy_assignment(folder, target, layout.header, layout.footer, layout.markers)
        for stale in set(target.glob("*.ipynb")) - set(copied):
            stale.unlink()
        for notebook in sorted(folder.glob("*.ipynb")):
            _warn_without_cells(notebook)
    return list(layout.assignments)


def _has_nbgrader_cells(notebook: Path) -> bool:
    """Whether any cell of ``notebook`` carries nbgrader metadata (an unreadable notebook counts as having them:
    the gate and nbgrader say what is wrong with it)."""
    try:
        return any(nbgrader_meta(cell) for cell in read_notebook(notebook).cells)
    except Exception:  # noqa: BLE001 - not this warning's business
        return True


def _course_id(root: Path, given: str | None) -> str:
    """The id to write: ``given`` (checked), else the configured one; refuses to change the id of a course
    that has a gradebook (its grades, and the exchange's folders, are filed under the old id)."""
    had = configured_course_id(root)
    if given is None:
        return had
    if course_id_problem(given):
        raise GraderError(course_id_problem(given))
    if given != had and (root / "gradebook.db").exists() and (root / CONFIG_NAME).exists():
        raise GraderError(f"the course at {root} already has a gradebook under the course id {had!r}; refusing to "
                          f"rename it to {given!r} (its grades and exchange folders are filed under {had!r}): "
                          "build the new course in another directory, or leave out --course-id")
    return given


def support_files(notebook: Path) -> list[Path]:
    """Files of the course folder that ``notebook`` names, e.g. ``ddp_lenet.py`` for 05_multigpu.

    They are copied next to the notebook in ``source/<assignment>/``, so nbgrader's release ships
    them to students and the grader gives the kernel a copy of them.
    """
    text = Path(notebook).read_text(encoding="utf-8")
    return [path for path in sorted(Path(notebook).parent.iterdir()) if is_support_file(path) and path.name in text]


def assignments(root: Path) -> list[str]:
    """Assignment ids of a built course, in order; raises GraderError before `build`."""
    found = CourseDir(Path(root)).assignments()
    if not found:
        raise GraderError(f"{root} is not a course: it has no source notebooks ({Path(root) / 'source'}/<assignment>/); "
                          f"run build first (`{command('build', root)}`), or check --root if the course is elsewhere")
    return found


def release(root: Path, selected: list[str] | None = None) -> list[Path]:
    """nbgrader's generate_assignment for each assignment (fills the gradebook with its cells), then
    its release_assignment: the exchange's outbound folder, where nbgrader's assignment list finds
    the assignment."""
    api = nbgrader_api(root)
    out = []
    for assignment in selected or assignments(root):
        result = api.generate_assignment(assignment, force=True, create=True)
        if not result.get("success"):
            log = (result.get("error") or "") + (result.get("log") or "")
            raise GraderError(f"nbgrader could not generate the student version of {assignment}:\n{log[-3000:]}")
        api.unrelease(assignment)  # nbgrader refuses to overwrite an earlier release
        shared = api.release_assignment(assignment)
        if not shared.get("success"):
            log = (shared.get("error") or "") + (shared.get("log") or "")
            raise GraderError(f"nbgrader could not put {assignment} into the exchange "
                              f"({CourseDir(root).exchange}):\n{log[-3000:]}")
        _sticky_inbound(root)
        out += [CourseDir(root).released_notebook(assignment, nb) for nb in CourseDir(root).notebooks(assignment)]
    return out

