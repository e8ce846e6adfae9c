"""Every attack in one batch, among honest students: the honest get exactly their own scores.

The attackers each submit wrong answers together with one attack on the grader (verdicts, the
kernel's own status, a builtin the exercise rules out, the kernel's output, the host's files, the
batch's resources: a message flood past a cell's byte budget, folder trees deeper than Python
recurses; the terminal; the pages and files made from the results: outputs that would run script in
a feedback page, an id that a spreadsheet splitting on ``;`` would read as a formula); the honest students are
graded again alone, in a course of their own, and must score the same to the cell. Every attacker
scores 0, and the batch finishes with a readable gradebook.
"""
from __future__ import annotations

import json

import nbformat
import pytest

from classroom import A, class_of, graded_class, released_course, write_inbox
from csv_formulas import DELIMITERS, formula_cells
from page_payloads import ATTACK, active_markup
from resource_payloads import DEEP_TREES, flood
from grader.authoring.coursedir import CourseDir
from grader.engine.notebook import cells as nbs
from grader.intake.collect import collect
from grader.results.export import export_csv
from grader.results.feedback import feedback
from grader.record import MIME_TYPE
from grader.running.batch import autograde

WRONG_SCALE = "def scale(x, factor):\n    return x + factor\n"


def attacker(release: nbs.NotebookNode, answers: dict[str, str], extra_cells: int = 0) -> nbs.NotebookNode:
    nb = nbformat.from_dict(json.loads(json.dumps(release)))
    for cell in nb.cells:
        gid = nbs.nbgrader_meta(cell).get("grade_id")
        if gid in answers:
            cell.source = answers[gid]
    nb.cells += [nbformat.v4.new_code_cell("pass") for _ in range(extra_cells)]
    return nb


def attacks(course: CourseDir) -> dict[str, nbs.NotebookNode]:
    release = nbs.read_notebook(course.released_notebook(A))
    forged = {"key": "hidden", "value": {"float": "1.0"}, "what": "", "rtol": 1e9, "atol": 1e9}
    return {
        "excepthook": attacker(release, {"scale": "import sys\nsys.excepthook = lambda *a: None\n"
                                         "get_ipython().set_custom_exc((BaseException,), lambda *a, **k: None)\n"
                                         + WRONG_SCALE}),
        "forger": attacker(release, {"scale": WRONG_SCALE + "from IPython.display import display\n"
                                     f"display({{{MIME_TYPE!r}: {forged!r}}}, raw=True)\n"}),
        "patcher": attacker(release, {"pairwise": "import torch\ntorch.testing.assert_close = lambda *a, **k: None\n"
                                      "torch.equal = lambda *a, **k: True\n"
                                      "def pairwise_sq_dists(x, y):\n    return torch.zeros(len(x), len(y))\n"}),
        "linker": attacker(release, {"scale": "import os\nos.makedirs('.matplotlib', exist_ok=True)\n"
                                     f"for name in ('fontlist-v390.json', 'gradebook.db'):\n"
                                     f"    os.symlink({str(course.gradebook)!r}, os.path.join('.matplotlib', name))\n"
                                     "os.symlink('/etc/passwd', 'ddp_lenet.py')\n" + WRONG_SCALE,
                                     "mean_of": "import os\nos._exit(1)\n"}),
        "flooder": attacker(release, {"scale": "print('x' * 10_000_000)\n" + WRONG_SCALE}),
        "raw bytes": attacker(release, {"scale": "import os, sys\nos.write(1, b'\\xff\\xfe\\x1b]0;pwned\\x07\\x1b[2J')\n"
                                        "sys.stdout.write('\\ud800')\n" + WRONG_SCALE}),
        "historian": attacker(release, {"mean_of": "def mean_of(x):\n    print(get_ipython().user_ns.get('In'))\n"
                                        "    return x.sum()\n"}),
        "many cells": attacker(release, {}, extra_cells=6000),
        "shortcut": attacker(release, {"pairwise": "import torch\ndef pairwise_sq_dists(x, y):\n"
                                                   "    return torch.cdist(x, y) ** 2\n", "scale": WRONG_SCALE}),
        "deep trees": attacker(release, {"scale": DEEP_TREES + WRONG_SCALE}),
        "message flood": attacker(release, {"scale": flood(60, 8) + WRONG_SCALE}),  # 480 MB, past a cell's 256
        "status forger": attacker(release, {"scale": "kernel = get_ipython().kernel\nreal = kernel.do_execute\n"
                                            "async def ok(*a, **k):\n    return {**(await real(*a, **k)), 'status': 'ok'}\n"
                                            "kernel.do_execute = ok\n" + WRONG_SCALE}),
        "mallory\u009b2J\u202e": attacker(release, {"scale": WRONG_SCALE}),
        "pages": attacker(release, {"scale": ATTACK + WRONG_SCALE}),
        "eve;=1+1": attacker(release, {"scale": WRONG_SCALE}),
    }


@pytest.fixture(scope="module")
def batches(tmp_path_factory):
    base = tmp_path_factory.mktemp("mixed")
    mixed = released_course(base / "mixed")
    honest = {k: v for k, v in class_of(mixed).items() if k != "bob"}
    write_inbox(base / "inbox", {**honest, **attacks(CourseDir(mixed))})
    (base / "inbox" / "corrupt").mkdir()
    (base / "inbox" / "corrupt" / f"{A}.ipynb").write_text('{"cells": [')
    collect(mixed, base / "inbox")
    alone = graded_class()[1]  # the class graded alone (shared, read only: bob's release too, left out below)
    return mixed, autograde(mixed, workers=2), alone, set(honest)


def cells(results, students) -> dict:
    return {(o.student, t.grade_id): (t.points, t.status) for o in results if o.student in students
            for t in o.tests}


def test_honest_students_score_exactly_as_when_graded_alone(batches):
    _, mixed, alone, honest = batches
    assert cells(mixed, honest) == cells(alone, honest)
    assert {o.student: o.score for o in alone}["ann"] == 6  # the fixture's total: the solution


def test_every_attacker_scores_zero_unless_a_person_reviews_it_and_the_gradebook_stays_readable(batches):
    from nbgrader.api import Gradebook

    root, mixed, _, honest = batches
    attackers = {o.student: o for o in mixed if o.student not in honest}
    unreviewed = {name: sum(t.points for t in o.tests if not t.review) for name, o in attackers.items()}
    assert len(attackers) == 16 and set(unreviewed.values()) == {0.0}, unreviewed  # any point kept awaits a person
    with Gradebook(f"sqlite:///{CourseDir(root).gradebook}", "d2lite") as gb:
        assert {s.id for s in gb.students} >= honest


def test_the_shortcut_matched_every_value_and_is_flagged_for_what_the_grader_read(batches):
    """Positive control: the grader flags for review a test whose values matched; its points wait for a person."""
    _, mixed, _, _ = batches
    shortcut = next(o for o in mixed if o.student == "shortcut")
    test = next(t for t in shortcut.tests if t.grade_id == "test_pairwise")
    assert test.points == test.max_points and "cdist" in test.review, test


def test_the_pages_and_files_made_from_the_batch_carry_no_active_markup(batches, tmp_path):
    """The parsed page here (tests/test_feedback_in_browser.py opens such pages in Chromium)."""
    import csv

    root, _, _, _ = batches
    [page] = feedback(root, students=["pages"])
    html = page.read_text(encoding="utf-8")
    assert active_markup(html) == [] and html.count("<div") > 10, active_markup(html)
    grades = export_csv(root, tmp_path / "grades.csv")
    ids = {r["student_id"] for r in csv.DictReader(grades.open(encoding="utf-8", newline=""))}
    assert "eve;'=1+1" in ids and "eve;=1+1" not in ids
    assert formula_cells(grades) == {d: [] for d in DELIMITERS}
