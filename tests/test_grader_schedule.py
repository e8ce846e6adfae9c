"""How an autograde batch orders its work, shares the cores, and survives a broken solution.

- Reference runs start first; an assignment's submissions wait only for their own reference.
- Among ready submissions the longest (by the reference run's time) start first.
- Parallel workers split the cores between their kernels' torch threads.
- A solution that fails its own tests stops only its own assignment: the rest is graded and saved,
  the command fails naming it, and once the solution is fixed a re-run grades what is missing.
"""
import os

import pytest

from classroom import FIXTURE, answer_of, with_answer, write_inbox
from grader.authoring.assembly import build, release
from grader.authoring.coursedir import MARKER
from grader.cli import main
from grader.engine.notebook import cells as nbs
from grader.intake.collect import collect
from grader.running.batch import ReferenceFailed, autograde
from grader.running.jobs import share_cores as _share_cores
from grader.running.schedule import GradingQueue


def _drain(queue: GradingQueue) -> list[tuple[str, ...]]:
    jobs = []
    while queue:
        jobs.append(queue.next())
    return jobs


def test_references_start_before_any_submission():
    queue = GradingQueue(["a", "b"], [("ann", "a"), ("bob", "b"), ("cat", "c")], {"c": 1.0})
    assert queue.next() == ("reference", "a")
    assert queue.next() == ("reference", "b")
    assert queue.next() == ("grade", "cat", "c"), "c's reference is cached, so its submission is ready"
    assert queue.next() is None and not queue, "a's and b's submissions wait for their references"


def test_submissions_wait_only_for_their_own_reference():
    queue = GradingQueue(["a", "b"], [("ann", "a"), ("bob", "b")], {})
    _drain(queue)
    queue.reference_done("b", seconds=3.0)
    assert _drain(queue) == [("grade", "bob", "b")], "b is ready while a's reference still runs"
    queue.reference_done("a", seconds=1.0)
    assert _drain(queue) == [("grade", "ann", "a")]


def test_the_longest_submissions_start_first_and_ties_keep_their_order():
    todo = [("ann", "short"), ("ann", "long"), ("bob", "short"), ("bob", "long"), ("cat", "middle")]
    queue = GradingQueue([], todo, {"short": 5.0, "long": 30.0, "middle": 12.0})
    assert _drain(queue) == [("grade", "ann", "long"), ("grade", "bob", "long"), ("grade", "cat", "middle"),
                             ("grade", "ann", "short"), ("grade", "bob", "short")]


def test_a_failed_reference_drops_its_submissions_only():
    queue = GradingQueue(["a"], [("ann", "a"), ("bob", "a"), ("cat", "b")], {"b": 2.0})
    assert _drain(queue) == [("reference", "a"), ("grade", "cat", "b")]
    assert queue.reference_failed("a") == ["ann", "bob"]
    assert not queue and queue.next() is None


@pytest.mark.parametrize("cores_per_kernel", [1, 2])
def test_parallel_workers_split_the_cores_between_kernels(monkeypatch, cores_per_kernel):
    cores = len(os.sched_getaffinity(0))
    workers = max(1, cores // cores_per_kernel)
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.setenv(name, "")  # so that teardown restores the value from before the test
        monkeypatch.delenv(name)
    _share_cores(workers)
    expected = str(max(1, cores // workers)) if workers > 1 else None
    assert os.environ.get("OMP_NUM_THREADS") == expected
    assert os.environ.get("MKL_NUM_THREADS") == expected


def test_an_instructors_thread_setting_wins(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "7")
    monkeypatch.setenv("MKL_NUM_THREADS", "")
    monkeypatch.delenv("MKL_NUM_THREADS")
    _share_cores(2)
    assert os.environ["OMP_NUM_THREADS"] == "7"


def test_a_broken_solution_stops_only_its_own_assignment(tmp_path, capsys):
    course_dir, inbox, root = tmp_path / "course", tmp_path / "inbox", tmp_path / "graded"
    nbs.write_notebook(nbs.read_notebook(FIXTURE), course_dir / "01_fixture.ipynb")
    broken = "def scale(x, factor):\n    ### BEGIN SOLUTION\n    raise RuntimeError('unfinished')\n    ### END SOLUTION\n"
    nbs.write_notebook(with_answer("scale", broken), course_dir / "02_broken.ipynb")
    build(root, course_dir)
    release(root)
    for name in ("01_fixture", "02_broken"):
        write_inbox(inbox, {student: nbs.read_notebook(FIXTURE) for student in ("ann", "bob")}, name)
    assert len(collect(root, inbox).imported) == 4

    with pytest.raises(ReferenceFailed, match="reference run of 02_broken failed") as failure:
        autograde(root, workers=2)
    assert {(o.student, o.assignment, o.score) for o in failure.value.outcomes} == \
        {("ann", "01_fixture", 6.0), ("bob", "01_fixture", 6.0)}
    assert not list(root.glob(f"autograded/*/02_broken/{MARKER}")), "nothing is graded against a broken solution"

    assert main(["--root", str(root), "autograde", "--workers", "2", "--quiet"]) == 2
    captured = capsys.readouterr()
    assert "6/6" in captured.out and "unfinished" in captured.err, "the table of what was graded, then why"

    fixed = root / "source" / "02_broken" / "02_broken.ipynb"
    graded = {p: p.stat().st_mtime_ns for p in root.glob(f"autograded/*/01_fixture/{MARKER}")}
    nbs.write_notebook(with_answer("scale", answer_of("scale")), fixed)
    results = autograde(root, workers=2)
    assert {(o.student, o.assignment, o.score) for o in results} == \
        {(s, a, 6.0) for s in ("ann", "bob") for a in ("01_fixture", "02_broken")}
    assert {p: p.stat().st_mtime_ns for p in graded} == graded, "what was graded is not graded again"
