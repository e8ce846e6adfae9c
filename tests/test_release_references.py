"""`course-grader release` runs each released solution once for its reference values.

What autograde would do before grading an assignment's first submission happens at release, while
nobody waits for grades: a solution that fails its own tests is found before students get the
notebook, and autograde starts grading at once. The values are sealed as autograde seals them, so
autograde reuses them (they are computed again only when the source changes).
"""
from __future__ import annotations

from pathlib import Path

from classroom import A, FIXTURE, class_of, student_scores, write_inbox
from grader.authoring.coursedir import CourseDir
from grader.cli import main
from grader.engine.notebook import cells as nbs
from grader.engine.verdict.references import References, sha256_of
from grader.engine.verdict.seal import course_key


def built(root: Path) -> Path:
    assert main(["build", "--root", str(root), "--course", str(FIXTURE.parent)]) == 0
    return root


def test_release_seals_the_solutions_reference_values_and_autograde_grades_with_them(tmp_path, capsys):
    root = built(tmp_path / "course")
    assert main(["release", "--root", str(root), "--quiet"]) == 0
    assert f"reference values of {A}: computed in" in capsys.readouterr().out
    course = CourseDir(root)
    path = course.references(A, A)
    sealed = References.load(path, course_key(course.key))  # raises unless the grader's seal is valid
    assert sealed.source_sha256 == sha256_of(course.source_notebook(A, A))
    before = path.read_bytes()

    ann = class_of(root)["ann"]  # the solution itself: full marks, graded against the values from the release
    assert main(["collect", str(write_inbox(tmp_path / "inbox", {"ann": ann})), "--root", str(root)]) == 0
    assert main(["autograde", "--root", str(root), "--quiet"]) == 0
    assert student_scores(root) == {"ann": 6.0}
    assert path.read_bytes() == before  # not run again: a new run records its own seconds and seal

    assert main(["release", "--root", str(root), "--quiet"]) == 0  # released again, the source unchanged
    assert f"reference values of {A}: up to date" in capsys.readouterr().out
    assert path.read_bytes() == before


def test_a_solution_that_fails_its_own_run_is_said_at_release_and_the_release_is_kept(tmp_path, capsys):
    root = built(tmp_path / "course")
    source = CourseDir(root).source_notebook(A, A)
    nb = nbs.read_notebook(source)
    for cell in nb.cells:
        if nbs.nbgrader_meta(cell).get("grade_id") == "scale":
            cell.source = "def scale(x, factor):\n    return x * factor + 1\n"
    nbs.write_notebook(nb, source)
    assert main(["release", "--root", str(root), "--quiet"]) == 2
    said = capsys.readouterr().err
    assert f"the reference run of {A} failed" in said and "test_scale" in said, said
    assert "The student versions were released" in said and "release --build" in said, said
    assert "run autograde again" not in said  # autograde's advice; nothing is collected yet
    assert CourseDir(root).released_notebook(A).is_file()
    assert not CourseDir(root).references(A, A).exists()


def test_no_references_leaves_the_runs_to_autograde(tmp_path, capsys):
    root = built(tmp_path / "course")
    assert main(["release", "--root", str(root), "--no-references"]) == 0
    assert "reference values" not in capsys.readouterr().out
    assert CourseDir(root).released_notebook(A).is_file()
    assert not CourseDir(root).references(A, A).exists()


def test_where_kernels_cannot_be_isolated_release_says_so_and_leaves_the_runs_to_autograde(tmp_path, capsys,
                                                                                         monkeypatch):
    from grader.engine.isolation import sandbox

    root = built(tmp_path / "course")
    monkeypatch.setattr(sandbox, "sandbox_status", lambda: (False, "bubblewrap is not installed"))
    assert main(["release", "--root", str(root), "--quiet"]) == 0  # the release itself needs no sandbox
    said = capsys.readouterr().err
    assert "reference values not computed (cannot isolate the reference runs: bubblewrap is not installed)" in said
    assert "autograde computes them" in said and "--unsafe" in said, said
    assert CourseDir(root).released_notebook(A).is_file()
    assert not CourseDir(root).references(A, A).exists()
