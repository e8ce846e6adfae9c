"""Attacks on the grading machine's resources, each a real submission graded with the sandbox on.

A kernel holds its session's key, so it can send signed messages of any kind and size; it can leave
folder trees deeper than Python recurses; and whatever it does, the worker that grades it may die.
None of these may stop the batch or cost another student anything (grader/THREAT_MODEL.md).

Memory is measured in a fresh worker process per submission: the peak resident size that grading
that one submission added (``ru_maxrss`` after, minus before), not the pytest process's own peak.
"""
from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import tempfile
import threading
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "engine"))
from submissions import PLAIN, _grade_job, references, submission, write  # noqa: E402
from resource_payloads import DEEP_TREES, flood  # noqa: E402

from grader.engine.grade import Limits  # noqa: E402
from grader.engine.isolation.messages import MAX_MESSAGE_BYTES  # noqa: E402

WRONG_ADD = "def add(a, b):\n    return 5 if (a, b) == (2, 3) else a - b\n"  # passes the visible check
SOLVED = {"add": "def add(a, b):\n    return a + b", "mean": "def mean(xs):\n    return sum(xs) / len(xs)",
          "shout": "def shout(s):\n    return s.upper() + '!'"}
LIMITS = Limits(cell_timeout_s=120)


JUST_UNDER_THE_CAP = (MAX_MESSAGE_BYTES - (64 << 10)) / (1 << 20)  # MB of text: the message is just under the cap


def _grade_measured(source: str, sub: str, refs: str, workdir: str, limits: Limits):
    """Grade in this (fresh) process: (result, MB that grading added to the process's peak memory)."""
    import resource

    import grader.engine.grade  # noqa: F401 - what a worker has imported before its first job
    import jupyter_client  # noqa: F401

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result = _grade_job(source, sub, refs, workdir, limits)
    return result, (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024


def in_fresh_process(function, *args):
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return pool.submit(function, *args).result()


@pytest.fixture(scope="module")
def refs(tmp_path_factory) -> Path:
    return references([PLAIN], tmp_path_factory)[PLAIN]


def grade_measured(tmp_path, refs, answers, limits=LIMITS):
    sub = write(submission(PLAIN, {**SOLVED, **answers}), tmp_path / "sub.ipynb")
    return in_fresh_process(_grade_measured, str(PLAIN), str(sub), str(refs), str(tmp_path / "work"), limits)


# -- 1. message floods ----------------------------------------------------------------------------

def test_signed_messages_just_under_the_size_cap_do_not_fill_the_workers_memory(tmp_path, refs):
    """40 messages of just under the cap: 2.6 GB sent. The worker keeps under 1 GB of it."""
    result, grown_mb = grade_measured(tmp_path, refs, {"add": flood(JUST_UNDER_THE_CAP, 40) + WRONG_ADD})
    assert grown_mb < 1024, f"grading the flood added {grown_mb:.0f} MB to the worker's peak memory"
    assert result.tests["add_test"].points == 0
    assert {t.status for t in result.tests.values()} <= {"passed", "failed", "crashed", "not run"}


def test_a_cell_over_its_message_budget_is_stopped_before_parsing_with_a_clear_reason(tmp_path, refs):
    limits = Limits(cell_timeout_s=120, max_cell_message_mb=64, max_notebook_message_mb=1024)
    result, grown_mb = grade_measured(tmp_path, refs, {"add": flood(8, 20, 0.2) + WRONG_ADD}, limits)
    add = result.tests["add_test"]
    assert add.status == "not run" and "more than 64 MB of messages during one cell" in add.reason, add
    assert any("more than 64 MB of messages during one cell" in p for p in result.problems), result.problems
    assert grown_mb < 512, grown_mb


def test_a_submission_over_its_message_budget_is_stopped_with_a_clear_reason(tmp_path, refs):
    """Each answer cell stays under the cell's budget; together they pass the submission's."""
    limits = Limits(cell_timeout_s=120, max_cell_message_mb=64, max_notebook_message_mb=100)
    answers = {name: flood(8, 5, 0.2) + SOLVED[name] for name in ("add", "mean", "shout")}
    result, _ = grade_measured(tmp_path, refs, answers, limits)
    for within in ("add_test", "mean_test"):  # 40 MB, then 80 MB in all: within both budgets, so they ran
        test = result.tests[within]  # (and passed, flagged for review for what the grader read: get_ipython)
        assert test.status == "passed" and "get_ipython" in test.review, test
    shout = result.tests["shout_test"]
    assert shout.status == "not run" and "more than 100 MB of messages in all" in shout.reason, shout


# -- 2. folder trees deeper than Python recurses --------------------------------------------------



def _grade_job_in(tmpdir: str, source: str, sub: str, refs: str) -> dict:
    """run_grade_job, as a batch's worker runs it, with its temporary folders in ``tmpdir``."""
    import tempfile

    from grader.engine.grade import References
    from grader.running.jobs import GradeJob, TrustedNotebook, run_grade_job

    tempfile.tempdir = tmpdir
    job = GradeJob(TrustedNotebook.from_source(Path(source)), Path(sub).read_bytes(),
                   References.load(Path(refs)).to_dict(), LIMITS, False)
    return run_grade_job(job)


def test_folder_trees_deeper_than_python_recurses_are_removed_and_grading_completes(tmp_path, refs):
    """1500 levels (31 kB paths, past PATH_MAX) in the kernel's working and socket folders."""
    sub = write(submission(PLAIN, {**SOLVED, "add": DEEP_TREES + WRONG_ADD}), tmp_path / "sub.ipynb")
    # A short folder of its own: under tmp_path (longer under pytest-xdist, .../popen-gw0/...) the kernel's
    # socket path passed the 107 bytes a Unix socket address holds, and the kernel could not start.
    scratch = Path(tempfile.mkdtemp(prefix="deep-"))
    try:
        result = in_fresh_process(_grade_job_in, str(scratch), str(PLAIN), str(sub), str(refs))
    finally:  # a grader that leaves the tree behind must not break pytest's own clean-up of tmp_path
        left = list(scratch.iterdir())
        subprocess.run(["rm", "-rf", "--one-file-system", *map(str, left)], check=False)
        subprocess.run(["rm", "-rf", "--one-file-system", str(scratch)], check=False)
    assert left == []  # the job's scratch folder and the socket folder: gone
    statuses = {t.grade_id: t.status for t in result.tests}
    assert statuses == {"add_test": "failed", "mean_test": "passed", "shout_test": "passed"}, result.problems
    reviews = [t.review for t in result.tests if t.grade_id != "add_test"]  # they ran to the end, and
    assert all("ipykernel" in r for r in reviews), reviews  # are flagged for review for `ipykernel`
    assert not [p for p in result.problems if "could not" in p or "failed" in p], result.problems
    assert Path("/etc/passwd").exists()


def test_remove_tree_never_follows_a_link_and_never_raises(tmp_path):
    from grader.engine.isolation.cleanup import remove_tree

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("keep")
    tree = tmp_path / "tree"
    (tree / "locked").mkdir(parents=True)
    (tree / "locked" / "link").symlink_to(outside)
    (tree / "top-link").symlink_to(outside / "keep")
    (tree / "locked").chmod(0)
    assert remove_tree(tree) == "" and not tree.exists()
    assert (outside / "keep").read_text() == "keep"
    assert remove_tree(tmp_path / "never-there") == ""
    link = tmp_path / "link"
    link.symlink_to(outside)
    assert remove_tree(link) == "" and not link.exists() and (outside / "keep").exists()


# -- 3. a worker process that dies ---------------------------------------------------------------

KILL_ME = "KILL-MY-WORKER"
SLEEPER = f"open({KILL_ME!r}, 'w').close()\nimport time\ntime.sleep(300)\n"


def _parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def _is_mine(pid: int) -> bool:
    """Whether ``pid`` descends from this test process: another test run on the machine (another pytest-xdist
    worker, another checkout) may grade the same attack at the same time, and its workers are not ours to kill."""
    while pid > 1:
        pid = _parent(pid)
        if pid == os.getpid():
            return True
    return False


class WorkerKiller(threading.Thread):
    """SIGKILLs the worker process (from outside, as the out-of-memory killer would) of every kernel of this
    process's batches whose working folder holds the file KILL_ME; counts the kills and notes the kernel's
    scratch folder."""

    def __init__(self):
        super().__init__(daemon=True)
        self.stop, self.killed, self.folders = threading.Event(), set(), set()

    @property
    def kills(self) -> int:
        return len(self.killed)

    def run(self):
        while not self.stop.wait(0.2):
            for pid in filter(str.isdigit, os.listdir("/proc")):
                try:
                    argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
                    if not argv[0].endswith(b"bwrap") or b"--chdir" not in argv:
                        continue
                    workdir = Path(argv[argv.index(b"--chdir") + 1].decode())
                    if (workdir / KILL_ME).exists():
                        worker = _parent(int(pid))
                        if (worker not in self.killed and _is_mine(worker)
                                and b"multiprocessing" in Path(f"/proc/{worker}/cmdline").read_bytes()):
                            os.kill(worker, signal.SIGKILL)  # a grading worker (spawned), killed once
                            self.killed.add(worker)
                            self.folders |= {p for p in workdir.parents if p.name.startswith("course-grader-")}
                except (OSError, ValueError, IndexError):
                    continue


@pytest.fixture(scope="module")
def killed_batch(tmp_path_factory):
    from classroom import A, class_of, graded_class, released_course, write_inbox
    from grader.engine.notebook import cells as nbs
    from grader.intake.collect import collect
    from grader.running.batch import autograde

    base = tmp_path_factory.mktemp("killed-worker")
    root = released_course(base / "course")
    victim = nbs.read_notebook(root / "release" / A / f"{A}.ipynb")
    scale = next(c for c in victim.cells if nbs.nbgrader_meta(c).get("grade_id") == "scale")
    scale.source = SLEEPER
    students = {**class_of(root), "mallory": victim}
    write_inbox(base / "inbox", students)
    collect(root, base / "inbox")
    killer = WorkerKiller()
    killer.start()
    try:
        first = autograde(root, workers=2)
        kills = killer.kills
        again = autograde(root, workers=2)
    finally:
        killer.stop.set()
    return root, first, again, kills, graded_class()[1], killer  # the class graded alone (shared, read only)


def test_a_killed_worker_fails_only_its_submission_and_the_batch_completes(killed_batch):
    root, first, _, kills, alone, _ = killed_batch
    by = {o.student: o for o in first}
    assert kills == 2  # mallory's worker, then again when mallory was graded alone
    assert by["mallory"].score == 0 and any("worker process died twice" in p for p in by["mallory"].problems)
    assert {o.student: o.score for o in first if o.student != "mallory"} == {o.student: o.score for o in alone}


def test_the_failure_is_saved_so_the_next_run_neither_dies_nor_starts_with_it(killed_batch):
    from grader.results.table import grade_table

    root, first, again, _, _, _ = killed_batch
    assert [(o.student, o.score, o.problems) for o in again] == [(o.student, o.score, o.problems) for o in first]
    assert "mallory / 01_fixture: grading failed: the grading worker process died twice" in grade_table(root, again)


def test_what_a_killed_worker_left_on_disk_is_removed_by_the_batch(killed_batch):
    """A worker killed from outside cannot remove its kernel's folders; the batch removes them when it
    replaces the worker (cleanup.remove_orphans), and nothing of a dead worker is left in /tmp."""
    import tempfile

    killer = killed_batch[-1]
    assert len(killer.folders) == 2 and all(folder.name.startswith("course-grader-") for folder in killer.folders)
    assert [folder for folder in killer.folders if folder.exists()] == []
    left = [p.name for p in Path(tempfile.gettempdir()).iterdir() for pid in killer.killed
            if p.name.startswith("course-grader-") and f"-{pid}-" in p.name]
    assert left == []


def test_orphaned_folders_are_removed_only_when_their_process_is_gone(tmp_path, monkeypatch):
    import tempfile

    from grader.engine.isolation.cleanup import owned_folder, remove_orphans

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = tmp_path / f"course-grader-submission-{int(ended.stdout)}-abc"
    (dead / "kernel-1" / "deep").mkdir(parents=True)
    (dead / "kernel-1" / "link").symlink_to(tmp_path / "keep")
    (tmp_path / "keep").write_text("not the orphan's")
    mine, other = owned_folder("ipc"), tmp_path / "submission-1-not-ours"
    other.mkdir()
    assert mine.name.startswith(f"course-grader-ipc-{os.getpid()}-")
    assert remove_orphans() == []
    assert not dead.exists() and mine.exists() and other.exists() and (tmp_path / "keep").read_text()
