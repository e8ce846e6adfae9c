"""Files that ship with an assignment reach the sandboxed kernel; a student's copies of them do not."""
from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from grader.authoring.assembly import build, support_files
from grader.engine.grade import grade, run_reference

HELPER = "def shipped():\n    return 'from the course'\n"


def source_notebook(folder: Path) -> Path:
    """A one-exercise notebook whose test imports helper.py from the working directory."""
    nb = new_notebook(cells=[
        new_markdown_cell("# Support files\n\nTotal points: 1\n\nUses `helper.py`."),
        new_code_cell("def answer():\n    ### BEGIN SOLUTION\n    return 42\n    ### END SOLUTION",
                      metadata={"nbgrader": {"solution": True, "grade": False, "locked": False,
                                             "grade_id": "answer", "schema_version": 3}}),
        new_code_cell('"""answer() and the shipped helper"""\nfrom grader.record import record\n'
                      "import helper\nrecord('helper', helper.shipped())\nrecord('answer', answer())",
                      metadata={"nbgrader": {"solution": False, "grade": True, "locked": True,
                                             "points": 1, "grade_id": "test_answer",
                                             "schema_version": 3}}),
    ])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "helper.py").write_text(HELPER)
    (folder / "unrelated.py").write_text("raise SystemExit('not named by the notebook')\n")
    path = folder / "support.ipynb"
    nbformat.write(nb, path)
    return path


def test_build_ships_only_the_files_a_notebook_names(tmp_path):
    source = source_notebook(tmp_path / "course")
    assert [p.name for p in support_files(source)] == ["helper.py"]
    build(tmp_path / "built", source)
    assert sorted(p.name for p in (tmp_path / "built" / "source" / "support").iterdir()) == [
        "helper.py", "support.ipynb"]


def test_the_kernel_gets_the_trusted_copy_of_support_files(tmp_path):
    source = source_notebook(tmp_path / "course")
    refs = run_reference(source, workdir=tmp_path / "ref")
    assert refs.cells["test_answer"]["helper"]["value"] == {"str": "from the course"}

    student = tmp_path / "student"
    student.mkdir()
    (student / "helper.py").write_text("def shipped():\n    return 'forged by the student'\n")
    submitted = nbformat.read(source, 4)
    nbformat.write(submitted, student / "support.ipynb")
    result = grade(source, student / "support.ipynb", refs, workdir=tmp_path / "work")
    assert result.tests["test_answer"].status == "passed", result.tests


def test_files_in_sub_folders_reach_every_kernel_in_the_same_places(tmp_path):
    """nbgrader courses keep data beside the notebooks in folders (``mini-dataset/*.png``): the
    reference and the grading kernels find them at the same relative paths, through a job too."""
    from grader.running.jobs import TrustedNotebook

    source = source_notebook(tmp_path / "course")
    (tmp_path / "course" / "data" / "deeper").mkdir(parents=True)
    (tmp_path / "course" / "data" / "deeper" / "values.txt").write_text("3 4 5")
    (tmp_path / "course" / "__pycache__").mkdir()
    (tmp_path / "course" / "__pycache__" / "helper.cpython-311.pyc").write_bytes(b"not shipped")
    nb = nbformat.read(source, 4)
    nb.cells[2].source += "\nrecord('data', open('data/deeper/values.txt').read())"
    nbformat.write(nb, source)
    job = TrustedNotebook.from_source(source)
    assert [name for name, _ in job.support] == ["data/deeper/values.txt", "helper.py", "unrelated.py"]
    trusted = job.write(tmp_path / "job")                     # where a worker would put it
    refs = run_reference(trusted, workdir=tmp_path / "ref")
    assert refs.cells["test_answer"]["data"]["value"] == {"str": "3 4 5"}
    result = grade(trusted, trusted, refs, workdir=tmp_path / "work")
    assert result.tests["test_answer"].status == "passed", result.tests


@pytest.mark.parametrize("name", ["../outside.txt", "/etc/passwd", "data/../../x", ""])
def test_a_job_refuses_support_file_names_that_leave_its_folder(tmp_path, name):
    from grader.running.jobs import TrustedNotebook

    with pytest.raises(ValueError, match="not a relative file name"):
        TrustedNotebook("a.ipynb", b"{}", ((name, b"x"),)).write(tmp_path / "job")
    assert not (tmp_path / "outside.txt").exists()
