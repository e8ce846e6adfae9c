"""`course-grader build --course DIR` on a course in nbgrader's own layout (no kernel runs here).

DIR holds one folder per assignment (its notebooks and files) and an optional header notebook; an
nbgrader course root (DIR/nbgrader_config.py beside DIR/source/<assignment>/) works as well. The course
id comes from DIR/nbgrader_config.py, which build reads without running it. The release must be what
stock nbgrader releases from the same folder with the header configured as nbgrader's IncludeHeaderFooter.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from classroom import stock_course
from grader.authoring.assembly import course_notebooks
from grader.authoring.config import load_config
from grader.authoring.nbcourse import read_layout
from grader.cli import main

NBCOURSE = Path(__file__).parent / "fixtures" / "grader" / "nbcourse"


def build(root: Path, course: Path, *extra: str) -> int:
    return main(["build", "--root", str(root), "--course", str(course), *extra])


def sources(path: Path) -> list[tuple[str, str]]:
    """(cell type, source) of every cell, read as plain JSON."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return [(c["cell_type"], "".join(c["source"]) if isinstance(c["source"], list) else c["source"]) for c in cells]


def test_each_assignment_folder_is_one_assignment_with_all_its_files_and_the_header(tmp_path, capsys):
    root = tmp_path / "course"
    assert build(root, NBCOURSE) == 0
    assert "course id 'numerics-101'" in capsys.readouterr().out, "the id of DIR/nbgrader_config.py"
    assert load_config(root).CourseDirectory.course_id == "numerics-101"
    week1 = root / "source" / "week1"
    assert sorted(p.name for p in week1.iterdir()) == ["integrals.ipynb", "sequences.ipynb", "trapezoids.png"]
    assert (week1 / "trapezoids.png").read_bytes() == (NBCOURSE / "week1" / "trapezoids.png").read_bytes()
    header = sources(NBCOURSE / "header.ipynb")
    for name in ("sequences.ipynb", "integrals.ipynb"):
        assert sources(week1 / name) == header + sources(NBCOURSE / "week1" / name), name


def test_the_course_config_is_read_without_running_it(tmp_path, capsys):
    course = tmp_path / "mine"
    shutil.copytree(NBCOURSE, course)
    ran = tmp_path / "config-ran"
    (course / "nbgrader_config.py").write_text(
        f"import pathlib\npathlib.Path({str(ran)!r}).write_text('ran')\n"
        "c = get_config()\nc.CourseDirectory.course_id = 'ml' + '-101'\n", encoding="utf-8")
    assert build(tmp_path / "course", course) == 0
    said = capsys.readouterr()
    assert not ran.exists(), "build ran the course's nbgrader_config.py"
    assert "c.CourseDirectory.course_id is not a plain string" in said.err and "line 4" in said.err, said.err
    assert load_config(tmp_path / "course").CourseDirectory.course_id == "d2lite"


def test_the_course_id_option_wins_over_the_course_config(tmp_path):
    assert build(tmp_path / "course", NBCOURSE, "--course-id", "num-2027") == 0
    assert load_config(tmp_path / "course").CourseDirectory.course_id == "num-2027"


def test_an_nbgrader_course_root_with_its_configured_header(tmp_path):
    course = tmp_path / "theirs"
    shutil.copytree(NBCOURSE / "week1", course / "source" / "week1")
    shutil.copyfile(NBCOURSE / "header.ipynb", course / "source" / "top.ipynb")
    (course / "nbgrader_config.py").write_text(
        "c = get_config()\nc.CourseDirectory.course_id = \"theirs\"\n"
        "c.IncludeHeaderFooter.header = \"source/top.ipynb\"\n", encoding="utf-8")
    root = tmp_path / "course"
    assert build(root, course) == 0
    assert load_config(root).CourseDirectory.course_id == "theirs"
    assert sources(root / "source" / "week1" / "sequences.ipynb")[:2] == sources(NBCOURSE / "header.ipynb")
    assert not (root / "source" / "top").exists(), "the header is not an assignment"
    (course / "nbgrader_config.py").write_text("c = get_config()\n", encoding="utf-8")
    shutil.copyfile(NBCOURSE / "header.ipynb", course / "source" / "header.ipynb")
    assert build(tmp_path / "plain", course) == 0
    assert sources(tmp_path / "plain" / "source" / "week1" / "sequences.ipynb") == \
        sources(NBCOURSE / "week1" / "sequences.ipynb"), "a course root uses a header only when configured"


def test_a_configured_header_that_is_missing_is_said(tmp_path, capsys):
    course = tmp_path / "mine"
    shutil.copytree(NBCOURSE, course)
    (course / "nbgrader_config.py").write_text("c = get_config()\nc.IncludeHeaderFooter.header = 'head.ipynb'\n")
    assert build(tmp_path / "course", course) == 2
    said = capsys.readouterr().err
    assert "names the notebook 'head.ipynb'" in said and str(course / "head.ipynb") in said, said


def test_an_unlocked_task_cell_is_said(tmp_path, capsys):
    """Stock nbgrader's autograde fails on a task cell that is not locked; build says which one (and builds)."""
    course = tmp_path / "mine"
    shutil.copytree(NBCOURSE, course)
    integrals = course / "week1" / "integrals.ipynb"
    nb = json.loads(integrals.read_text(encoding="utf-8"))
    task = next(c for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("task"))
    task["metadata"]["nbgrader"]["locked"] = False
    integrals.write_text(json.dumps(nb), encoding="utf-8")
    assert build(tmp_path / "course", course) == 0
    said = capsys.readouterr().err
    assert f"the task cell {task['metadata']['nbgrader']['grade_id']!r} is not locked" in said, said
    assert "integrals.ipynb" in said and "sequences.ipynb" not in said
    assert build(tmp_path / "again", NBCOURSE) == 0 and "not locked" not in capsys.readouterr().err


def test_a_rebuild_drops_a_notebook_the_folder_no_longer_has(tmp_path):
    course = tmp_path / "mine"
    shutil.copytree(NBCOURSE, course)
    root = tmp_path / "course"
    assert build(root, course) == 0
    (course / "week1" / "integrals.ipynb").unlink()
    assert build(root, course) == 0
    assert sorted(p.name for p in (root / "source" / "week1").glob("*.ipynb")) == ["sequences.ipynb"]


def test_a_folder_with_notebooks_at_its_top_is_this_projects_layout(tmp_path):
    shutil.copytree(NBCOURSE / "week1", tmp_path / "week1")
    assert read_layout(tmp_path) is not None
    shutil.copyfile(NBCOURSE / "week1" / "sequences.ipynb", tmp_path / "01_sequences.ipynb")
    assert read_layout(tmp_path) is None
    assert read_layout(Path(__file__).parents[1] / "course") is None


def test_released_as_stock_nbgrader_releases_it_with_its_header(tmp_path):
    """nbgrader's generate_assignment (no kernel) of the built course, and of an nbgrader course root holding
    the same folder with c.IncludeHeaderFooter.header: the same student notebooks."""
    root = tmp_path / "course"
    assert build(root, NBCOURSE) == 0
    assert main(["release", "--root", str(root), "--no-references"]) == 0  # nbgrader's part alone, no kernel
    stock = stock_course(tmp_path / "stock", NBCOURSE / "week1", NBCOURSE / "header.ipynb", "numerics-101")
    for name in ("sequences.ipynb", "integrals.ipynb"):
        ours, theirs = root / "release" / "week1" / name, stock / "release" / "week1" / name
        assert sources(ours) == sources(theirs), name
    assert (root / "release" / "week1" / "trapezoids.png").is_file()


def test_check_gates_every_notebook_of_the_assignment_folders():
    assert course_notebooks(NBCOURSE) == [NBCOURSE / "week1" / "integrals.ipynb", NBCOURSE / "week1" / "sequences.ipynb"]
    flat = Path(__file__).parent / "fixtures" / "grader" / "asserts"
    assert course_notebooks(flat) == [flat / "01_asserts.ipynb"]
