"""What autograde plans for an assignment of several notebooks (no kernel runs here): one references file per
notebook, the assignment's reference run due when any of them is missing or older than its notebook, and a
submission due again when any notebook of the assignment changed."""
from __future__ import annotations

from pathlib import Path

from grader.authoring.coursedir import CourseDir
from grader.cli import main
from grader.engine.verdict.references import References, sha256_of, sha256_of_all
from grader.engine.verdict.seal import course_key
from grader.running.pending import grade_key, in_gradebook, pending_submissions, reference_plan

NBCOURSE = Path(__file__).parent / "fixtures" / "grader" / "nbcourse"


def test_references_per_notebook_and_what_makes_them_stale(tmp_path):
    root = tmp_path / "course"
    assert main(["build", "--root", str(root), "--course", str(NBCOURSE)]) == 0
    course, key = CourseDir(root), course_key(CourseDir(root).key)
    assert course.notebooks("week1") == ["integrals", "sequences"]
    assert reference_plan(course, ["week1"], key) == (["week1"], {})
    for name, seconds in (("integrals", 1.5), ("sequences", 2.0)):
        path = course.references("week1", name)
        assert path == root / "references" / "week1" / f"{name}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        References({}, sha256_of(course.source_notebook("week1", name)), seconds).save(path, key)
    assert reference_plan(course, ["week1"], key) == ([], {"week1": 3.5})
    source = course.source_notebook("week1", "integrals")
    source.write_text(source.read_text(encoding="utf-8").replace("trapezoid", "Trapezoid"), encoding="utf-8")
    assert reference_plan(course, ["week1"], key) == (["week1"], {}), "one notebook changed: run the solution again"


def test_a_submission_is_due_again_when_any_notebook_changed(tmp_path):
    import json

    root = tmp_path / "course"
    assert main(["build", "--root", str(root), "--course", str(NBCOURSE)]) == 0
    course, key = CourseDir(root), course_key(CourseDir(root).key)
    for name in course.notebooks("week1"):
        path = course.references("week1", name)
        path.parent.mkdir(parents=True, exist_ok=True)
        References({}, sha256_of(course.source_notebook("week1", name))).save(path, key)
    course.submission("ada", "week1").mkdir(parents=True)
    marker = {"student": "ada", "assignment": "week1", "timestamp": course.timestamp("ada", "week1"),
              "source_sha256": sha256_of_all(course.source_files("week1")),
              "references_sha256": sha256_of_all(course.reference_files("week1")),
              "score": 2.0, "max_score": 2.0, "problems": [],
              "tests": [{"grade_id": "test_harmonic", "notebook": "sequences", "max_points": 2.0, "points": 2.0,
                         "status": "passed", "reason": "ok"}]}
    course.autograded("ada", "week1").mkdir(parents=True)
    course.marker("ada", "week1").write_text(json.dumps(marker))
    scores = {("ada", "week1", "sequences", "test_harmonic"): 2.0}  # the gradebook row, named with its notebook
    assert grade_key("ada", "week1", "sequences", "test_harmonic") in scores
    assert grade_key("ann", "01_fixture", "01_fixture", "test_scale") == ("ann", "01_fixture", "test_scale")
    assert in_gradebook(marker, scores) and not in_gradebook(marker, {("ada", "week1", "test_harmonic"): 2.0})
    assert pending_submissions(course, ["week1"], None, False, [], scores) == [], "graded and current"
    source = course.source_notebook("week1", "integrals")
    source.write_text(source.read_text(encoding="utf-8").replace("trapezoid", "Trapezoid"), encoding="utf-8")
    assert pending_submissions(course, ["week1"], None, False, [], scores) == [("ada", "week1")], \
        "the other notebook of the assignment changed"
