"""Reading a student's source is bounded: it asks a person, never stalls or crashes the grading (issue 28).

The grader reads every answer's source in the grading worker (:mod:`grader.engine.reading.rules`). Before
the caps of :mod:`grader.engine.reading.limits` and the child process of :mod:`grader.engine.reading.bounds`,
400 ``!`` lines in one cell took 1,050 s of a worker, a function nested 98 deep around a 1.8 MB list
700 s and 1.1 GB, and ``- - - ... 1`` 500 deep made the grading raise ``RecursionError``. Each is read
here: every test after it is flagged for review (a finding; the test keeps the points its behaviour
earned), in bounded time. The limits are safety nets far above what was measured (a few
hundredths of a second in process, about 0.3 s through a reading server's fork on a busy 2-core machine).
An honest notebook is read exactly as in process, with no finding.
"""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

import grader.engine.reading.rules as answer_rules
from grader.engine.reading import bounds
from grader.engine.reading.bounds import OVER_LIMITS, bounded_readings
from grader.engine.reading.limits import (MAX_CELL_CHARS, MAX_DEPTH, MAX_ESCAPED_LINES, OVER_CAPS, cell_over_caps,
                                         nesting_depth)

ROOT = Path(__file__).resolve().parent.parent
COURSE = ROOT / "course"
TEST = ("test", "from grader.record import record\nrecord('f', f(1))")
HONEST = "def f(x):\n    return x + 1\n"

SHELL_LINES = HONEST + "".join(f"!echo {'a' * 280} {i}\n" for i in range(400))  # 116 KB, 400 `!` lines
NESTED = ("".join("    " * i + f"def g{i}():\n" for i in range(98)) + "    " * 98 + "return ["
          + ",".join(str(i) for i in range(300_000)) + "]\n" + HONEST)  # 98 deep around a 1.8 MB list
UNARY = HONEST + "y = " + "- " * 500 + "1\n"
SHELL_UNDER_CAPS = HONEST + "".join(f"!echo {'a' * 370} {i}\n" for i in range(MAX_ESCAPED_LINES))[:MAX_CELL_CHARS - 30]
CHAIN_UNDER_CAPS = "def f(x):\n    return (x\n" + "        + 1\n" * 495 + "    )\n"  # no cap sees a chain
NESTED_UNDER_CAPS = ("".join("    " * i + f"def g{i}():\n" for i in range(MAX_DEPTH - 2)) + "    " * (MAX_DEPTH - 2)
                     + "return [" + ",".join(str(i) for i in range(3000))[:MAX_CELL_CHARS - 4000] + "]\n" + HONEST)


def notebook(answer: str, tests: int = 10, added: int = 0) -> list[tuple[str, str]]:
    """(role, source) pairs: the answer cell, ``added`` student cells of the same text, ``tests`` tests."""
    return [("trusted", "import torch"), ("answer", answer)] + [("added", answer)] * added + [TEST] * tests


def flags(read: dict) -> list[list[str]]:
    return [reading.problems for _, reading in read.values()]


@pytest.mark.parametrize("source", [SHELL_LINES, NESTED, UNARY], ids=["400 shell lines", "98 deep, 1.8 MB", "500 minus"])
def test_a_stalling_source_is_flagged_for_every_test_at_once_without_being_parsed(source, monkeypatch):
    parsed = []
    real = answer_rules.cell_statements
    monkeypatch.setattr(answer_rules, "cell_statements", lambda text, *a: parsed.append(text) or real(text, *a))
    start = time.perf_counter()
    read = answer_rules.test_cell_readings(notebook(source))
    assert time.perf_counter() - start < 10  # measured: under 0.05 s (1,050 s, 700 s or RecursionError before)
    assert source not in parsed
    assert all(len(problems) == 1 and problems[0].startswith(OVER_CAPS) for problems in flags(read))


def test_the_finding_says_which_cap_and_by_how_much():
    assert cell_over_caps(SHELL_LINES) == f"{len(SHELL_LINES):,} characters; at most {MAX_CELL_CHARS:,}"
    assert cell_over_caps(HONEST * 10 + "!ls\n" * 51) == f"51 shell, magic or help lines; at most {MAX_ESCAPED_LINES}"
    assert cell_over_caps(UNARY) == f"nested about 500 deep; at most {MAX_DEPTH}"
    assert nesting_depth("# " + "-" * 70 + "\nx = --1\n") == 2  # a comment's rule is not a chain of minus signs


@pytest.mark.parametrize("line", ["y = " + "- " * 9_000, "y = " + "-" * 19_000, "(" * 19_000, "not " * 4_900 + "x"])
def test_the_caps_are_counted_in_one_pass_over_the_text(line):
    start = time.perf_counter()
    cell_over_caps(line)
    assert time.perf_counter() - start < 2  # measured: under 0.07 s (a backtracking regex took 45 s)


def test_every_cell_of_the_course_is_far_under_the_caps():
    for path in sorted(COURSE.glob("*.ipynb")):
        for cell in nbformat.read(str(path), as_version=4).cells:
            if cell.cell_type == "code":
                assert cell_over_caps(cell.source) is None, (path.name, cell.source[:80])
                assert nesting_depth(cell.source) <= MAX_DEPTH // 4, (path.name, cell.source[:80])


def test_a_recursion_error_while_reading_is_a_finding_not_a_crash():
    read = answer_rules.test_cell_readings(notebook(CHAIN_UNDER_CAPS, tests=3))
    assert cell_over_caps(CHAIN_UNDER_CAPS) is None
    assert all(problems and problems[0].startswith("code the grader cannot read") for problems in flags(read))


def test_under_the_caps_the_reading_process_is_stopped_at_its_time_limit():
    cells = notebook(NESTED_UNDER_CAPS, tests=20, added=9)
    assert all(cell_over_caps(source) is None for _, source in cells)
    start = time.perf_counter()
    read = bounded_readings(cells, timeout_s=2)  # in process, this notebook reads for 7-35 s (quiet to busy)
    assert time.perf_counter() - start < 20
    assert flags(read) == [[OVER_LIMITS.format(what="took longer than 2 s to read")]] * 20


def test_the_reading_process_that_runs_out_of_memory_flags_every_test():
    """With room to read, this notebook has no finding; with an address space smaller than the reading process
    already holds, its parse cannot allocate, and every test is flagged for a person."""
    cells = notebook(NESTED_UNDER_CAPS, tests=3)
    assert not any(flags(bounded_readings(cells)))
    read = bounded_readings(cells, memory_mb=1)
    assert all(problems and problems[0].startswith("code the grader cannot read") for problems in flags(read))


def _group(leader: int) -> list[int]:
    """The live processes of the process group ``leader`` leads (a reading server and the reader it forked);
    a zombie (dead, not yet reaped by whoever inherited it) is not counted."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            state, _, group = (entry / "stat").read_text().rsplit(")", 1)[1].split()[:3]
            if entry.name.isdigit() and int(group) == leader and state != "Z":
                found.append(int(entry.name))
        except (OSError, ValueError):
            pass
    return found


def _ended(leader: int) -> bool:
    """Whether the group has no live process, waiting for a SIGKILL to land (a safety net: milliseconds)."""
    deadline = time.monotonic() + 30
    while _group(leader) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not _group(leader)


def test_notebooks_are_read_one_after_another_by_one_server_and_each_in_a_fresh_fork():
    """The server stays, and a reader ends with its notebook: two honest notebooks read after one that is
    flagged read exactly as in process."""
    honest = [notebook(HONEST, tests=2), notebook(HONEST + UNARY, tests=2)]
    bounded_readings(honest[0])
    server = bounds._SERVERS[0].process.pid
    bounded_readings(notebook(SHELL_UNDER_CAPS, tests=3))
    for cells in honest:
        assert bounded_readings(cells) == answer_rules.test_cell_readings(cells)
    assert bounds._SERVERS[0].process.pid == server and _group(server) == [server]  # no reader is left


def test_a_reading_past_its_time_limit_ends_its_server_and_reader_and_the_next_notebook_gets_a_new_server():
    bounded_readings(notebook(HONEST, tests=1))
    server = bounds._SERVERS[0].process.pid
    read = bounded_readings(notebook(NESTED_UNDER_CAPS, tests=5, added=9), timeout_s=1)
    assert flags(read) == [[OVER_LIMITS.format(what="took longer than 1 s to read")]] * 5
    assert _ended(server)
    assert not any(flags(bounded_readings(notebook(HONEST, tests=1))))
    assert bounds._SERVERS[0].process.pid != server


def test_the_reading_server_and_its_reader_end_with_the_process_that_started_them():
    """A grading worker killed with SIGKILL in the middle of a long reading (one that would take minutes)
    leaves neither its server nor the reader."""
    worker = subprocess.Popen([sys.executable, "-c", (
        "import sys; sys.path.insert(0, sys.argv[1])\n"
        "from test_answer_bounds import notebook, HONEST, NESTED_UNDER_CAPS\n"
        "from grader.engine.reading import bounds\n"
        "bounds.bounded_readings(notebook(HONEST, tests=1))\n"
        "print(bounds._SERVERS[0].process.pid, flush=True)\n"
        "bounds.bounded_readings(notebook(NESTED_UNDER_CAPS, tests=400, added=9), timeout_s=600)\n"),
        str(Path(__file__).parent)], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        server = int(worker.stdout.readline())
        deadline = time.monotonic() + 30
        while len(_group(server)) < 2 and time.monotonic() < deadline:  # the server has forked the reader
            time.sleep(0.05)
        assert len(_group(server)) == 2
    finally:
        worker.kill()
        worker.wait()
    assert _ended(server)


@pytest.mark.parametrize("name", ["01_tensors.ipynb", "02_autograd.ipynb"])
def test_an_honest_notebook_reads_exactly_as_in_process_with_no_finding(name):
    cells = [("answer" if cell.metadata.get("nbgrader", {}).get("solution") else
              "test" if cell.metadata.get("nbgrader", {}).get("grade") and cell.cell_type == "code" else
              "trusted" if cell.cell_type == "code" else "markdown", cell.source)
             for cell in nbformat.read(str(COURSE / name), as_version=4).cells]
    start = time.perf_counter()
    read = bounded_readings(cells)
    assert time.perf_counter() - start < 30  # measured: about 1 s
    assert read == answer_rules.test_cell_readings(cells)
    assert read and not any(flags(read))


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    """The stalling class of tests/stalling.py (ann's solution, and the solution with each attack added) graded
    in one batch by the real engine and sandbox, two workers, in the fixture course with a written answer."""
    from classroom import write_inbox
    from grader.intake.collect import collect
    from grader.running.batch import autograde
    from stalling import stalling_class, written_course

    base = tmp_path_factory.mktemp("bounds")
    root = written_course(base / "course")
    collect(root, write_inbox(base / "inbox", stalling_class()))
    start = time.perf_counter()
    outcomes = autograde(root, workers=2)
    return root, {o.student: o for o in outcomes}, time.perf_counter() - start


def test_the_stalling_class_graded_beside_an_honest_student_gets_its_verdicts_within_budget(batch):
    """Each attack of tests/stalling.py earns what its behaviour earns, and says why: the unreadable source
    is flagged for review on every test, the 30,000-deep HTML is stored as a notice (output and written
    answer); the honest student keeps every point, unflagged. Each submission's grading stays inside its
    notebook budget (a 10x safety net: measured 12-144 s on a busy 2-core machine, mostly kernels;
    ``make bench`` reports the worst case)."""
    from grader.engine.notebook.allowlist import TOO_BIG
    from grader.engine.reading.limits import OVER_CAPS
    from grader.engine.grade import Limits
    from stalling import WRITTEN

    root, outcomes, _ = batch
    assert set(outcomes) == {"ann", "shell", "nested", "divs_output", "divs_written", "unary"}
    for student, outcome in outcomes.items():
        auto = [t for t in outcome.tests if t.grade_id != WRITTEN]
        assert [t.points for t in auto] == [t.max_points for t in auto] and outcome.score == 6, student
        assert 0 < outcome.seconds < Limits().notebook_timeout_s, (student, outcome.seconds)
        flagged = [t.review for t in auto if t.review]
        if student in ("shell", "nested", "unary"):
            assert len(flagged) == len(auto) and all(OVER_CAPS in review for review in flagged), (student, flagged)
        else:
            assert flagged == [], (student, flagged)

    def stored(student: str) -> list[str]:
        """The autograded notebook's cell sources and HTML outputs."""
        nb = nbformat.read(str(root / "autograded" / student / "01_fixture" / "01_fixture.ipynb"), as_version=4)
        return [c.source for c in nb.cells] + [str(o.get("data", {}).get("text/html", ""))
                                               for c in nb.cells if c.cell_type == "code" for o in c.outputs]

    for student in ("divs_output", "divs_written"):
        assert TOO_BIG in stored(student) and not any("<div><div>" in text for text in stored(student)), student
    assert TOO_BIG not in stored("ann")


def test_the_reading_child_finds_this_grader_package_without_an_install():
    """The child that reads answers is started with ``python -m grader.engine.reading.bounds`` and the folder
    holding this ``grader`` package on its PYTHONPATH (a checkout or worktree run without an install)."""
    from grader.engine.reading import bounds

    assert (bounds.ROOT / "grader" / "engine" / "reading" / "bounds.py").resolve() == Path(bounds.__file__).resolve()
