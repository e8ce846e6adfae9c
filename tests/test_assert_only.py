"""Assert-only test cells (stock nbgrader's kind): graded as nbgrader grades them, and said to be forgeable.

The fixture (tests/fixtures/grader/asserts/01_asserts.ipynb): ``test_scale`` (2 points) asserts, visible and
hidden, and records nothing; ``test_neg`` (1 point) records its result on a hidden input. Three submissions:
right, wrong, and forged (its answer replaces ``torch.equal`` in the kernel, so every assert on it holds).
They are graded once by the engine (one reference run, three submissions) and once by stock
``nbgrader autograde`` on a throwaway course with nbgrader's own configuration (no course-grader in it);
the assert-only cell must score the same in both, the forged answer included: that is what makes its
points "the kernel's word". The recording cell is not fooled by the same forgery.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "engine"))
from submissions import grade_all, submission, write  # noqa: E402

from grader.authoring.graded_cells import kernel_word_hint, who_decides  # noqa: E402
from grader.engine.notebook import cells as nbs  # noqa: E402
from grader.engine.grade import run_reference  # noqa: E402
from grader.running.gate import GateReport, _structure_check  # noqa: E402

SOURCE = Path(__file__).parent / "fixtures" / "grader" / "asserts" / "01_asserts.ipynb"
A = SOURCE.stem
FORGE = "import torch\n\ntorch.equal = lambda a, b: True  # every assert on torch.equal now holds\n\n\n"
ANSWERS = {
    "right": {"scale": "def scale(x, factor):\n    return factor * x",
              "neg": "def neg(x):\n    return 0 - x"},
    "wrong": {"scale": "def scale(x, factor):\n    return x + factor",
              "neg": "def neg(x):\n    return x"},
    "forged": {"scale": FORGE + "def scale(x, factor):\n    return x",
               "neg": "def neg(x):\n    return x"},
}
NBGRADER = "import sys; from nbgrader.apps.nbgraderapp import main; sys.exit(main())"


# -- the gate's reading of the source (no kernel) -----------------------------------------------------

def test_an_assert_only_cell_is_told_apart_from_one_that_records():
    cells = {nbs.nbgrader_meta(c).get("grade_id"): c for c in nbs.read_notebook(SOURCE).cells}
    assert nbs.asserts_only(cells["test_scale"]) and not nbs.asserts_only(cells["test_neg"])
    assert not nbs.asserts_only(cells["scale"]), "a solution cell is no test"


def test_the_gate_counts_its_points_as_the_kernels_word_and_shows_how_to_add_a_hidden_part():
    cells = nbs.read_notebook(SOURCE).cells
    assert who_decides(cells).startswith("1 of 3 points rest on values the grader compares")
    assert "2 on the kernel's own word" in who_decides(cells)
    hint = kernel_word_hint(cells)
    assert "test_scale (2 points)" in hint and "test_neg" not in hint and "forge" in hint
    for line in ("### BEGIN HIDDEN TESTS", "from grader.record import record",
                 'record("key", value, "what it checks")', "### END HIDDEN TESTS"):
        assert line in hint, hint
    assert kernel_word_hint([c for c in cells if not nbs.asserts_only(c)]) == ""


@pytest.mark.parametrize("allow", [False, True])
def test_rule_f_refuses_an_assert_only_cell_unless_asserts_are_allowed(allow):
    report = GateReport(SOURCE)
    _structure_check(SOURCE, report, allow_asserts=allow)
    checks = {c.name: c for c in report.checks}
    assert checks["e"].ok, checks["e"].detail
    assert checks["f"].ok is allow, checks["f"].detail
    assert ("test_scale" in checks["f"].detail) is not allow and "test_neg" not in checks["f"].detail
    assert "test_scale (2 points)" in checks["kernel's word"].detail and checks["kernel's word"].ok
    assert ("--allow-asserts" in checks["kernel's word"].detail) is not allow


@pytest.mark.parametrize("allow", [False, True])
def test_rule_e_wants_the_total_points_header_unless_asserts_are_allowed(allow, tmp_path):
    """A notebook brought in from nbgrader has no 'Total points: N' header: only this course's own notebooks
    must announce their points; a header that is there must add up either way."""
    nb = nbs.read_notebook(SOURCE)
    nb.cells[0].source = "# Scaling\n\nNo points announced here."
    nbs.write_notebook(nb, tmp_path / "plain.ipynb")
    nb.cells[0].source = "# Scaling\n\nTotal points: 99"
    nbs.write_notebook(nb, tmp_path / "wrong.ipynb")
    plain, wrong = GateReport(tmp_path / "plain.ipynb"), GateReport(tmp_path / "wrong.ipynb")
    _structure_check(tmp_path / "plain.ipynb", plain, allow_asserts=allow)
    _structure_check(tmp_path / "wrong.ipynb", wrong, allow_asserts=allow)
    e_plain, e_wrong = (next(c for c in r.checks if c.name == "e") for r in (plain, wrong))
    assert e_plain.ok is allow, e_plain.detail
    assert not e_wrong.ok and "Total points: 99" in e_wrong.detail


def test_the_course_own_notebooks_have_no_assert_only_cell():
    """This course stays strict: every graded test of course/*.ipynb records what the grader compares."""
    notebooks = sorted((Path(__file__).parents[1] / "course").glob("*.ipynb"))
    assert notebooks
    assert [(nb.name, kernel_word_hint(nbs.read_notebook(nb).cells)) for nb in notebooks
            if kernel_word_hint(nbs.read_notebook(nb).cells)] == []


@pytest.mark.parametrize("error, score", [(False, 2.0), (True, 0.0)])
def test_the_course_config_of_stock_nbgrader_leaves_an_assert_only_cell_to_nbgrader(error, score):
    """Opted in, stock `nbgrader autograde` on a course-grader course runs grader.stock.CheckRecords: with
    no reference values to compare (an assert-only cell), nbgrader's own verdict stands."""
    from nbgrader.utils import determine_grade

    from grader.stock import CheckRecords

    cell = next(c for c in nbs.read_notebook(SOURCE).cells if nbs.nbgrader_meta(c).get("grade_id") == "test_scale")
    cell.outputs = [nbformat.v4.new_output("error", ename="AssertionError", evalue="", traceback=[])] if error else []
    CheckRecords.check_cell(cell, {})
    assert determine_grade(cell) == (score, 2.0), cell.outputs


# -- graded by the engine and by stock nbgrader -------------------------------------------------------

def _stock_scores(base: Path, subs: dict[str, Path]) -> dict[str, float]:
    """test_scale's score per student, from stock `nbgrader autograde` on a course of its own."""
    from nbgrader.api import Gradebook

    root = base / "stock-course"
    (root / "source" / A).mkdir(parents=True)
    shutil.copy(SOURCE, root / "source" / A / SOURCE.name)
    (root / "nbgrader_config.py").write_text("c = get_config()  # noqa: F821\n"
                                             "c.CourseDirectory.course_id = 'stock'\n")
    for student, path in subs.items():
        write(nbformat.read(str(path), as_version=4), root / "submitted" / student / A / SOURCE.name)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COURSE_GRADER", "NBGRADER"))}
    env.update(COURSE_GRADER_ALLOW_UNSANDBOXED="1", PATH=str(Path(sys.executable).parent) + os.pathsep
               + env.get("PATH", ""))
    for args in (["generate_assignment", A, "--create"], ["autograde", A, "--create"]):
        done = subprocess.run([sys.executable, "-c", NBGRADER, *args], cwd=root, env=env, capture_output=True,
                              text=True, timeout=600)
        assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}", course_id="stock") as gb:
        return {s: gb.find_grade("test_scale", A, A, s).score for s in subs}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("asserts")
    refs = tmp / "refs.json"
    run_reference(SOURCE, workdir=tmp / "reference").save(refs)
    subs = {name: write(submission(SOURCE, answers), tmp / f"{name}.ipynb") for name, answers in ANSWERS.items()}
    ours = grade_all({name: (SOURCE, path) for name, path in subs.items()}, {SOURCE: refs}, tmp, workers=2)
    return refs, ours, _stock_scores(tmp, subs)


def test_the_reference_keeps_no_value_for_an_assert_only_cell(graded):
    from grader.engine.verdict.references import References

    cells = References.load(graded[0]).cells
    assert cells["test_scale"] == {} and list(cells["test_neg"]) == ["neg"]


def test_an_assert_only_cell_scores_as_stock_nbgrader_scores_it(graded):
    _, ours, stock = graded
    assert stock == {"right": 2.0, "wrong": 0.0, "forged": 2.0}, stock
    assert {name: result.tests["test_scale"].points for name, result in ours.items()} == stock


def test_its_verdict_says_it_rests_on_the_kernels_word(graded):
    _, ours, _ = graded
    right, wrong = ours["right"].tests["test_scale"], ours["wrong"].tests["test_scale"]
    assert right.status == "passed" and right.kernel_word and "kernel's word" in right.reason, right
    assert wrong.status == "error" and wrong.kernel_word and wrong.points == 0, wrong
    assert not ours["right"].tests["test_neg"].kernel_word and ours["right"].tests["test_neg"].points == 1


def test_a_forged_answer_earns_the_assert_only_points_but_not_the_recorded_ones(graded):
    """The forgery THREAT_MODEL.md warns of: no correct answer, full marks on the asserts; the
    recorded value is compared in the grader's process, which torch.equal's replacement never reaches."""
    forged = graded[1]["forged"].tests
    assert (forged["test_scale"].status, forged["test_scale"].points) == ("passed", 2.0), forged["test_scale"]
    assert (forged["test_neg"].status, forged["test_neg"].points) == ("failed", 0.0), forged["test_neg"]



# -- a test that ends in its score (nbgrader's partial credit) ----------------------------------------

def _out(text: str):
    return nbformat.v4.new_output("execute_result", data={"text/plain": text}, execution_count=1)


@pytest.mark.parametrize("outputs, points, status", [
    ([_out("0.5")], 0.5, "failed"),        # partial credit: the number, as nbgrader.utils.determine_grade reads it
    ([_out("0.0")], 0.0, "failed"),
    ([_out("-1")], 1.0, "passed"),         # negative: nbgrader gives full points
    ([_out("'done'")], 1.0, "passed"),     # not a number: full points
    ([], 1.0, "passed"),                   # no result: full points
    ([nbformat.v4.new_output("stream", name="stderr", text="RuntimeWarning\n"), _out("0.25")], 0.25, "failed"),
])
def test_an_assert_only_test_that_ends_in_a_number_scores_that_number(outputs, points, status):
    """stderr output is left out (a deliberate difference: nbgrader scores it 0, README); the points stay on the
    kernel's word."""
    from grader.engine.grade import KERNEL_WORD, TestResult, _scored_by_output

    problems: list[str] = []
    passed = TestResult("test_score", 1.0, 1.0, "passed", KERNEL_WORD, kernel_word=True)
    test = _scored_by_output(passed, outputs, problems)
    assert (test.points, test.status, test.kernel_word, problems) == (points, status, True, [])
    assert ("Partly right" in test.reason) == (0 < points < 1), test.reason


def test_a_result_above_the_points_scores_the_points_and_is_named_for_the_instructor():
    """nbgrader's determine_grade raises on it, and `nbgrader autograde` gives up on the whole submission; the
    grader scores the cell's points and names the cell (a deliberate difference, README)."""
    from grader.engine.grade import KERNEL_WORD, TestResult, _scored_by_output

    problems: list[str] = []
    passed = TestResult("test_score", 2.0, 2.0, "passed", KERNEL_WORD, kernel_word=True)
    test = _scored_by_output(passed, [_out("3.5")], problems)
    assert (test.points, test.status) == (2.0, "passed")
    assert problems == ["test_score ended in '3.5', above its 2 points: scored its points (nbgrader's autograde "
                        "stops on this submission)"]
