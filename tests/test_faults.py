"""Faults in real submissions: slow cells, dying kernels, floods and damaged notebooks.

Each case is a submission of the plain fixture (add: 1 pt, mean: 2 pts, shout: 1 pt) graded
end to end. Correct answers that ran before a fault keep their points; the rest score zero with a
reason; a damaged notebook is graded from the trusted source wherever its answers can be found.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import nbformat
import pytest

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "engine"))
from submissions import PLAIN, cell_with_id, grade_all, references, submission, write  # noqa: E402

from grader.engine.grade import Limits  # noqa: E402

MEAN = "def mean(xs):\n    return sum(xs) / len(xs)"
LIMITS = Limits(cell_timeout_s=12, max_output_bytes=50_000)  # room for a kernel on a busy machine


def answers_cells(nb):
    return [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution")]


def reorder(nb):
    answers = answers_cells(nb)
    nb.cells = [c for c in nb.cells if c not in answers] + answers[::-1]


def strip_metadata(nb):
    for cell in nb.cells:
        cell.metadata = {}


def to_markdown(nb):
    for i, cell in enumerate(nb.cells):
        if cell in answers_cells(nb):
            nb.cells[i] = nbformat.v4.new_markdown_cell(cell.source, metadata=cell.metadata)


def split(nb):
    cell = cell_with_id(nb, "mean")
    cell.source = "import statistics"
    at = nb.cells.index(cell)
    nb.cells.insert(at + 1, nbformat.v4.new_code_cell(MEAN))


def duplicate_with_stub_first(nb):
    cell = cell_with_id(nb, "mean")
    stub = nbformat.from_dict(json.loads(json.dumps(cell)))
    stub.source = "def mean(xs):\n    raise NotImplementedError()"
    stub.id = nbformat.v4.new_code_cell().id
    nb.cells.insert(nb.cells.index(cell), stub)


def delete_mean(nb):
    nb.cells.remove(cell_with_id(nb, "mean"))


# The slow cells wait in time.sleep: the grader watches only the clock (it interrupts a cell past its time limit,
# and restarts a kernel that ignores the interrupt), so a loop that never ends is the same fault whether it spins
# or sleeps, and three spinning loops took the cores from the rest of the suite for LIMITS.cell_timeout_s each.
# A loop that spins meets the CPU-time limit in test_sandbox.
CASES = {  # name -> (answers for mean, mutate, expected points per test)
    "slow_answer_cell": (MEAN + "\nimport time\nwhile True:\n    time.sleep(0.1)", None, (1, 2, 1)),
    "slow_test": ("import time\n\n\ndef mean(xs):\n    while len(xs) == 9:\n        time.sleep(0.1)\n"
                  "    return sum(xs) / len(xs)", None, (1, 0, 1)),
    "ignores_interrupt": ("import signal\nimport time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
                          "while True:\n    time.sleep(0.1)", None, (1, 0, 1)),
    "exit_midway": ("import os\nos._exit(1)", None, (1, 0, 0)),
    "segfault": ("import ctypes\nctypes.string_at(0)", None, (1, 0, 0)),
    "killed_like_oom": ("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)", None, (1, 0, 0)),
    "flood": ("print('\\n'.join(map(str, range(1_000_000))))\nprint('x' * 3_000_000)\n" + MEAN,
              None, (1, 2, 1)),
    "reordered": (MEAN, reorder, (1, 2, 1)),
    "stripped_metadata": (MEAN, strip_metadata, (1, 2, 1)),
    "code_to_markdown": (MEAN, to_markdown, (1, 2, 1)),
    "split_cell": (MEAN, split, (1, 2, 1)),
    "duplicated_cell": (MEAN, duplicate_with_stub_first, (1, 2, 1)),
    "deleted_cell": (MEAN, delete_mean, (1, 0, 1)),
}
GOOD = {"add": "def add(a, b):\n    return a + b", "shout": "def shout(s):\n    return s.upper() + '!'"}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("faults")
    refs = references([PLAIN], tmp_path_factory)
    subs = tmp / "subs"
    jobs = {name: (PLAIN, write(submission(PLAIN, {**GOOD, "mean": mean}, mutate=mutate),
                                subs / f"{name}.ipynb"))
            for name, (mean, mutate, _) in CASES.items()}
    (subs / "corrupt.ipynb").write_text(
        (subs / "reordered.ipynb").read_text()[:500], encoding="utf-8")
    (subs / "not_a_notebook.ipynb").write_text("[1, 2, 3]")
    (subs / "binary.ipynb").write_bytes(bytes(range(256)) * 10)
    for name in ("corrupt", "not_a_notebook", "binary"):
        jobs[name] = PLAIN, subs / f"{name}.ipynb"
    jobs["missing"] = PLAIN, None
    jobs["missing_path"] = PLAIN, subs / "nowhere" / "plain.ipynb"
    return grade_all(jobs, refs, tmp, limits=LIMITS)


@pytest.mark.parametrize("name", list(CASES))
def test_points_survive_the_fault(graded, name):
    result = graded[name]
    got = tuple(t.points for t in result.tests.values())
    statuses = [(t.grade_id, t.status, t.reason) for t in result.tests.values()]
    assert got == CASES[name][2], (statuses, result.problems)


def test_a_timed_out_answer_cell_is_interrupted_and_later_cells_run(graded):
    result = graded["slow_answer_cell"]
    assert any("timed out" in p for p in result.problems)
    assert result.tests["shout_test"].status == "passed"


def test_a_timed_out_test_says_timeout(graded):
    assert graded["slow_test"].tests["mean_test"].status == "timeout"


def test_a_cell_that_ignores_the_interrupt_gets_a_fresh_kernel_and_later_cells_run(graded):
    result = graded["ignores_interrupt"]
    assert "NameError" in result.tests["mean_test"].reason  # its answer never finished
    assert result.tests["shout_test"].status == "passed"
    assert any("kernel was restarted and the cells before it were run again" in p
               for p in result.problems), result.problems


@pytest.mark.parametrize("name, words", [("exit_midway", "exit status 1"),
                                         ("segfault", "segmentation fault"),
                                         ("killed_like_oom", "SIGKILL")])
def test_kernel_death_is_explained(graded, name, words):
    result = graded[name]
    assert result.tests["add_test"].status == "passed"
    assert result.tests["mean_test"].status == "not run"
    assert words in result.tests["mean_test"].reason
    assert any(words in p for p in result.problems)


def test_output_floods_are_cut_in_the_saved_notebook(graded):
    result = graded["flood"]
    answer = cell_with_id(result.notebook, "mean")
    assert len(json.dumps(answer.outputs)) < 2 * LIMITS.max_output_bytes
    # mean's cell runs after add_test's hidden part: the grader keeps none of its outputs at all
    assert "outputs of cells run after the first hidden test are not kept" in answer.outputs[-1]["text"]
    assert any("output was cut" in p for p in result.problems)


@pytest.mark.parametrize("name", ["stripped_metadata", "deleted_cell"])
def test_damaged_structure_is_reported(graded, name):
    assert graded[name].problems


@pytest.mark.parametrize("name, words", [
    ("corrupt", "not valid JSON"), ("not_a_notebook", "not a Jupyter notebook"),
    ("binary", "not valid JSON"), ("missing", "no notebook was submitted"),
    ("missing_path", "does not exist")])
def test_unreadable_submissions_score_zero_with_a_reason(graded, name, words):
    result = graded[name]
    assert result.score == 0 and result.max_score == 4
    assert all(t.status == "missing" and words.lower() in t.reason.lower() for t in result.tests.values()), \
        [t.reason for t in result.tests.values()]
    assert words in result.problems[0]


def test_the_whole_notebook_has_a_time_budget(tmp_path_factory, tmp_path):
    from grader.engine.grade import References, grade

    refs = References.load(references([PLAIN], tmp_path_factory)[PLAIN])
    # Two 20 s sleeps in a 30 s budget: the first fits with 10 s to spare for every other cell on a busy
    # machine (6 s in 10 s left too little: add_test did not run under load), the second cannot.
    sleepy = {"add": GOOD["add"] + "\nimport time\ntime.sleep(20)",
              "mean": MEAN + "\nimport time\ntime.sleep(20)", "shout": GOOD["shout"]}
    sub = write(submission(PLAIN, sleepy), tmp_path / "sleepy.ipynb")
    limits = Limits(cell_timeout_s=25, notebook_timeout_s=30)
    result = grade(PLAIN, sub, refs, workdir=tmp_path / "w", limits=limits)
    assert [t.status for t in result.tests.values()] == ["passed", "not run", "not run"]
    assert "total time limit of 30 s" in result.tests["shout_test"].reason
    assert any("used up its total time limit" in p for p in result.problems)
