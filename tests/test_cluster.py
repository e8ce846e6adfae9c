"""Autograde on a real Dask cluster: `dask scheduler` and `dask worker` processes on 127.0.0.1.

Each worker runs in an empty folder of its own: it gets every job as data (grader.running.jobs) and never
sees the course directory. The cluster must give the same gradebook (and class report) as local workers, survive a
worker killed mid-batch, and refuse clearly - before any work - when the scheduler is unreachable,
has no workers, or its workers run other grading code; a worker without bubblewrap refuses each
submission, which stays pending.
"""
from __future__ import annotations

import difflib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

import grader
from classroom import A, FIXTURE, cell_scores, class_of, released_course, write_corrupt, write_inbox
from grader.errors import GraderError
from grader.authoring.coursedir import CourseDir
from grader.engine.notebook import cells as nbs
from grader.engine.verdict.seal import course_key
from grader.intake.collect import collect
from grader.running.batch import NotGraded, autograde
from grader.running.pending import reference_plan
from grader.running.cluster import CONNECT_TIMEOUT_S, DaskRunner

DASK = str(Path(sys.executable).parent / "dask")


class Cluster:
    """A scheduler and workers as real processes; every process is ended by :meth:`close`."""

    def __init__(self, base: Path):
        self.base = base
        self.address = ""  # the scheduler's, once it has bound a port of its own choosing
        self.processes: list[subprocess.Popen] = []
        self.workers: list[subprocess.Popen] = []

    def _start(self, args: list[str], folder: Path, env: dict | None = None) -> subprocess.Popen:
        folder.mkdir(parents=True, exist_ok=True)
        log = open(folder.with_suffix(".log"), "w")
        env = {k: v for k, v in (env or os.environ).items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
        process = subprocess.Popen([DASK, *args], cwd=folder, env=env, stdout=log,
                                   stderr=subprocess.STDOUT, start_new_session=True)
        self.processes.append(process)
        return process

    def start_scheduler(self, timeout: float = 600) -> None:
        """Start the scheduler on a port the system gives it (port 0); read its address from the
        file it writes once it listens."""
        info = self.base / "scheduler.json"
        scheduler = self._start(["scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                                 "--scheduler-file", str(info)], self.base / "scheduler")
        deadline = time.monotonic() + timeout
        while not self.address:
            try:
                self.address = json.loads(info.read_text())["address"]
            except (OSError, ValueError, KeyError):  # not written yet, or half written
                if scheduler.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"the scheduler wrote no address to {info}; see {self.base / 'scheduler.log'}")
                time.sleep(0.1)

    def start_worker(self, name: str, env: dict | None = None) -> subprocess.Popen:
        worker = self._start(["worker", self.address, "--nthreads", "1", "--no-nanny", "--host", "127.0.0.1",
                              "--no-dashboard", "--name", name, "--local-directory", str(self.base / name / "dask")],
                             self.base / name, env)
        self.workers.append(worker)
        return worker

    def wait_for_workers(self, count: int, timeout: float = 600) -> None:
        from distributed import Client

        with Client(self.address, timeout=timeout, set_as_default=False) as client:
            client.wait_for_workers(count, timeout=timeout)

    def close(self) -> None:
        for process in reversed(self.processes):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


@contextmanager
def cluster(base: Path, workers: int = 2, env: dict | None = None):
    running = Cluster(base)
    try:
        running.start_scheduler()
        for number in range(workers):
            running.start_worker(f"worker{number}", env)
        if workers:
            running.wait_for_workers(workers)
        yield running
    finally:
        running.close()


@pytest.fixture(scope="module")
def collected(tmp_path_factory):
    """The fixture course, released, with a class of six collected (not graded)."""
    base = tmp_path_factory.mktemp("cluster")
    root = released_course(base / "course")
    source = nbs.read_notebook(FIXTURE)
    write_inbox(base / "inbox", {**class_of(root), "fay": nbs.stub(source, {"scale"}), "gus": source})
    write_corrupt(base / "inbox", "hal")
    collect(root, base / "inbox")
    return root


def copy_of(root: Path, target: Path) -> Path:
    shutil.copytree(root, target)
    return target


def gradebook(root: Path) -> dict[tuple[str, str], tuple[float, str, str]]:
    """(student, grade cell) -> (points, status, reason), from the markers, and the gradebook's scores."""
    from grader.results.gradebook import outcomes

    scores = cell_scores(root)
    verdicts = {(o.student, t.grade_id): (t.points, t.status, t.reason)
                for o in outcomes(CourseDir(root)) for t in o.tests}
    assert {k: v[0] for k, v in verdicts.items()} == scores
    return verdicts


def problems(root: Path) -> dict[str, list[str]]:
    """Student -> what the grader reported beside the verdicts (why a submission could not be graded)."""
    from grader.results.gradebook import outcomes

    return {o.student: o.problems for o in outcomes(CourseDir(root)) if o.problems}


@pytest.fixture(scope="module")
def local_grades(collected, tmp_path_factory):
    """The class graded by two local worker processes (tests/test_grader_pipeline.py shows one gives the
    same): its gradebook, and the course folder."""
    local = copy_of(collected, tmp_path_factory.mktemp("local") / "course")
    autograde(local, workers=2)
    return gradebook(local), local


def class_report(root: Path) -> dict[str, str]:
    """The class report's pages (grader.results.report) as text, without the grading-time section and with
    every other duration masked (wall seconds differ between any two runs): page name -> HTML."""
    from grader.results.report import write_report

    course = CourseDir(root)
    pages = {"index.html": write_report(course).read_text().split('<h2 id="time">')[0]}
    for student in ("ann", "bob", "dan", "eve", "fay", "gus", "hal"):
        page = write_report(course, student)
        pages[page.name] = page.read_text()
    pages = {name: re.sub(r"\b\d+(?:\.\d+)? (?:s|min)\b", "<time>", page) for name, page in pages.items()}
    return pages


def test_a_cluster_grades_exactly_as_local_workers(collected, local_grades, tmp_path):
    ours = copy_of(collected, tmp_path / "course")
    with cluster(tmp_path / "nodes") as nodes:
        autograde(ours, scheduler=nodes.address)
        for worker in ("worker0", "worker1"):  # workers saw only their own empty folders
            assert not list((tmp_path / "nodes" / worker).glob("*.ipynb"))
        with DaskRunner(nodes.address) as runner:  # two kernels on this machine split its cores
            threads = set(runner.client.run(lambda: os.environ.get("OMP_NUM_THREADS")).values())
        cores = len(os.sched_getaffinity(0))
        assert threads == {str(max(1, cores // 2))} or (cores < 2 and threads == {None})
    local, local_root = local_grades
    assert gradebook(ours) == local, problems(ours)
    cluster_pages, local_pages = class_report(ours), class_report(local_root)  # the instructor sees the same class
    for name, page in local_pages.items():
        assert cluster_pages[name] == page, "\n".join(difflib.unified_diff(
            page.split(">"), cluster_pages[name].split(">"), "local workers", "cluster", lineterm="", n=1))
    assert {s for s, _ in local} == {"ann", "bob", "dan", "eve", "fay", "gus", "hal"}
    assert 0 < sum(v[0] for v in local.values()) < len(local) * 3  # right and wrong answers


def test_a_worker_killed_mid_batch_costs_a_retry_not_a_grade(collected, local_grades, tmp_path):
    ours = copy_of(collected, tmp_path / "course")
    with cluster(tmp_path / "nodes") as nodes:
        errors = []
        batch = threading.Thread(target=lambda: _run(errors, ours, nodes.address))
        batch.start()
        marker_dir = ours / "autograded"
        deadline = time.monotonic() + 1200
        while not list(marker_dir.glob(f"*/{A}/course-grader.json")) and time.monotonic() < deadline:
            time.sleep(0.2)  # the reference has run and grading is under way
        name, jobs = busy_worker(nodes.address)  # a worker that holds a job now, and its jobs
        victim = nodes.workers[int(name[-1])]
        os.killpg(victim.pid, signal.SIGKILL)
        batch.join(timeout=600)
        assert not batch.is_alive() and not errors, errors
        assert victim.poll() is not None
        runs = runs_of(nodes.address, jobs)
    survivor = ({"worker0", "worker1"} - {name}).pop()
    assert runs and all(runs[key][0] >= 2 and runs[key][1] == [survivor] for key in jobs), \
        f"each job {name} held when killed should have been given again and finished by {survivor}: {runs}"
    assert gradebook(ours) == local_grades[0]


def busy_worker(address: str, timeout: float = 600) -> tuple[str, list[str]]:
    """The name of a worker that is running a job, and the keys of its jobs (asked of the scheduler)."""
    from distributed import Client

    with Client(address, set_as_default=False) as client:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            names = {a: w["name"] for a, w in client.scheduler_info()["workers"].items()}
            busy = [(names[a], list(jobs)) for a, jobs in client.processing().items() if jobs and a in names]
            if busy:
                return busy[0]
            time.sleep(0.1)
    raise AssertionError("no worker took a job")


def runs_of(address: str, keys: list[str]) -> dict[str, tuple[int, list[str]]]:
    """key -> (how many times the scheduler gave it to a worker, the names of the live workers that
    finished it), read from the scheduler's transition log and each worker's own log."""
    from distributed import Client

    def given(dask_scheduler) -> dict:
        return {key: sum(1 for event in dask_scheduler.transition_log if event[0] == key and event[2] == "processing")
                for key in keys}

    def finished(dask_worker) -> list:
        return [key for key in keys if any(isinstance(event, tuple) and len(event) > 2 and event[0] == key
                                           and event[2] == "memory" for event in dask_worker.state.log)]

    with Client(address, set_as_default=False) as client:
        times = client.run_on_scheduler(given)
        done = client.run(finished)
        names = {a: w["name"] for a, w in client.scheduler_info()["workers"].items()}
    return {key: (times[key], [names.get(a, a) for a, ks in done.items() if key in ks]) for key in keys}


def _run(errors: list, root: Path, address: str) -> None:
    try:
        autograde(root, scheduler=address)
    except Exception as error:  # noqa: BLE001 - reported by the test
        errors.append(error)


def test_an_unreachable_scheduler_is_refused_after_the_connect_timeout(collected, tmp_path):
    """Nothing listens on the port (this test holds it, bound but not listening, so nothing else
    can take it meanwhile). How long the refusal takes is measured in `make bench`
    (benchmarks/bench_refusals.py)."""
    ours = copy_of(collected, tmp_path / "course")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        address = "tcp://127.0.0.1:%d" % taken.getsockname()[1]
        with pytest.raises(GraderError, match="cannot reach the Dask scheduler") as refused:
            autograde(ours, scheduler=address)
    assert f"within {CONNECT_TIMEOUT_S:g} s" in str(refused.value), "the message names the timeout it waited"
    assert not (ours / "autograded").exists()


def test_a_scheduler_without_workers_is_refused(collected, tmp_path):
    ours = copy_of(collected, tmp_path / "course")
    with cluster(tmp_path / "nodes", workers=0) as nodes:
        with pytest.raises(GraderError, match="has no workers"):
            autograde(ours, scheduler=nodes.address)
    assert not (ours / "autograded").exists()


def test_workers_running_other_grading_code_are_refused(collected, tmp_path):
    """A worker that imports a changed copy of the grader (another version) grades nothing."""
    changed = tmp_path / "other-version"
    shutil.copytree(Path(grader.__file__).parent, changed / "grader", ignore=shutil.ignore_patterns("__pycache__"))
    with open(changed / "grader" / "engine" / "verdict" / "compare.py", "a") as verdicts:
        verdicts.write("\n# a different release of the grader\n")
    env = dict(os.environ, PYTHONPATH=str(changed))
    ours = copy_of(collected, tmp_path / "course")
    with cluster(tmp_path / "nodes", workers=1, env=env) as nodes:
        with pytest.raises(GraderError, match="run different grading code"):
            autograde(ours, scheduler=nodes.address)
    assert not (ours / "autograded").exists()


def test_a_worker_without_bubblewrap_refuses_each_submission_and_they_stay_pending(collected, tmp_path):
    no_bwrap = dict(os.environ, PATH=str(Path(sys.executable).parent))
    assert shutil.which("bwrap", path=no_bwrap["PATH"]) is None
    ours = copy_of(collected, tmp_path / "course")
    course = CourseDir(ours)  # its references were sealed at release (tests/classroom.py), as by an earlier batch:
    assert reference_plan(course, [A], course_key(course.key))[0] == []  # nothing but the submissions to run
    with cluster(tmp_path / "nodes", workers=1, env=no_bwrap) as nodes:
        with pytest.raises(NotGraded) as refused:
            autograde(ours, scheduler=nodes.address)
    said = str(refused.value)
    for student in ("ann", "bob", "hal"):
        assert f"{student} / {A}: cannot isolate student code: bubblewrap" in said and "--unsafe" in said
    assert not list((ours / "autograded").glob(f"*/{A}/course-grader.json"))
