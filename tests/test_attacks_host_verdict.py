"""The grader alone decides a grade: real submissions of the course's own notebooks, one batch.

Each attacker below reaches the right values by a means its exercise rules out (the forbidden
builtin under another name or through torch's C layer, a loop with the profile hook removed,
numpy's broadcasting, d2lite's own version by three import paths), or makes its kernel report
failed checks as passed. Positive controls, in the same run: a shortcut's test is flagged for a
person's review with the grader's reading of the source, over a test whose recorded values *matched*
(a grader that compares values alone would have given the point unseen; one that zeroes on the
reading takes points from honest code too, issue 28); the forged status makes the
kernel's own verdict (``validate``, which trusts the kernel) say "passed". Honest students in the
same batch get exactly their scores, and nobody's other exercises lose anything.
"""
from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from grader.engine.notebook import cells as nbs
from grader.engine.reading.rules import REVIEW_REASON
from grader.engine.grade import validate
from grader.intake.collect import collect
from grader.running.batch import autograde

COURSE = Path(__file__).resolve().parent.parent / "course"
T, A = "01_tensors", "02_autograd"

SHORTCUTS = {  # student -> (notebook, {answer grade_id: source}, the test that must earn 0)
    "special": (T, {"softmax": "def softmax(X, dim):\n    return torch.special.softmax(X, dim)\n"}, "test_softmax"),
    "c_layer": (T, {"pairwise_distances": "def pairwise_distances(X, Y):\n"
                                          "    return torch._C._VariableFunctions.cdist(X, Y)\n"},
                "test_pairwise_distances"),
    "unhooked": (T, {"pairwise_distances": "import sys\n\ndef pairwise_distances(X, Y):\n"
                                           "    sys.setprofile(None)\n    sys.settrace(None)\n"
                                           "    return torch.stack([((x - Y) ** 2).sum(-1).sqrt() for x in X])\n"},
                 "test_pairwise_distances"),
    "numpy": (T, {"broadcast_shape": "import numpy\n\ndef broadcast_shape(*shapes):\n"
                                     "    try:\n        return tuple(numpy.broadcast_shapes(*shapes))\n"
                                     "    except ValueError as error:\n        raise ValueError(str(error))\n"},
              "test_broadcast_shape"),
    "d2l_sgd": (A, {"sgd_step": "def sgd_step(params, lr, batch_size):\n    d2lite.sgd(params, lr, batch_size)\n"},
                "test_sgd_step"),
    "d2l_iter": (A, {"my_data_iter": "from d2lite.data import data_iter as batches\n\n"
                                     "def my_data_iter(batch_size, features, labels):\n"
                                     "    yield from batches(batch_size, features, labels)\n"}, "test_my_data_iter"),
    "d2l_alias": (A, {"predict": "line = d2lite.models\n\ndef predict(w, b, X):\n    with torch.no_grad():\n"
                                 "        return line.linreg(X, w, b)\n"}, "test_predict"),
}
FORGED_STATUS = ("kernel = get_ipython().kernel\nreal_execute = kernel.do_execute\n\n"
                 "async def always_ok(*args, **kwargs):\n    reply = await real_execute(*args, **kwargs)\n"
                 "    return {**reply, 'status': 'ok'}\n\nkernel.do_execute = always_ok\n"
                 "get_ipython()._showtraceback = lambda *a, **k: None\n\n"
                 "def softmax(X, dim):\n    return X / X.sum(dim=dim, keepdim=True)\n")


def notebook_with(name: str, answers: dict[str, str]) -> nbs.NotebookNode:
    nb = nbs.read_notebook(COURSE / f"{name}.ipynb")
    for cell in nb.cells:
        if nbs.nbgrader_meta(cell).get("grade_id") in answers:
            cell.source = answers[nbs.nbgrader_meta(cell)["grade_id"]]
    return nb


def points(outcomes, student, name) -> dict[str, tuple[float, str]]:
    found = next(o for o in outcomes if o.student == student and o.assignment == name)
    return {t.grade_id: (t.points, t.reason) for t in found.tests}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    from classroom import COURSE_NOTEBOOKS, released_course_notebooks

    assert (T, A) == COURSE_NOTEBOOKS
    base = tmp_path_factory.mktemp("host-verdict")
    root = released_course_notebooks(base / "course")
    inbox = base / "inbox"
    honest = {"ada": {T: {}, A: {}}, "ben": {T: {"softmax": nbs.CODE_STUB, "pairwise_distances": nbs.CODE_STUB},
                                            A: {"sgd_step": nbs.CODE_STUB}}}
    for student, by_notebook in honest.items():
        for name, answers in by_notebook.items():
            notebook = notebook_with(name, answers)
            nbs.write_notebook(notebook if answers or student == "ada" else notebook, inbox / student / f"{name}.ipynb")
    for student, (name, answers, _) in SHORTCUTS.items():
        nbs.write_notebook(notebook_with(name, answers), inbox / student / f"{name}.ipynb")
    nbs.write_notebook(notebook_with(T, {"softmax": FORGED_STATUS}), inbox / "forger" / f"{T}.ipynb")
    collect(root, inbox)
    return inbox, autograde(root, workers=2)


def full_marks(name: str) -> dict[str, float]:
    return {nbs.nbgrader_meta(c)["grade_id"]: nbs.cell_points(c)
            for c in nbs.read_notebook(COURSE / f"{name}.ipynb").cells if nbs.is_test(c)}


def test_honest_students_get_exactly_their_scores_in_the_same_batch(graded):
    _, outcomes = graded
    for name in (T, A):
        assert {k: p for k, (p, _) in points(outcomes, "ada", name).items()} == full_marks(name)
    stubbed = {T: {"test_softmax", "test_pairwise_distances"}, A: {"test_sgd_step"}}
    for name in (T, A):
        expected = {k: (0.0 if k in stubbed[name] else p) for k, p in full_marks(name).items()}
        assert {k: p for k, (p, _) in points(outcomes, "ben", name).items()} == expected
        assert reviews(outcomes, "ada", name) == reviews(outcomes, "ben", name) == {}  # nobody asked to look


def reviews(outcomes, student, name) -> dict[str, str]:
    """grade_id -> the finding a person must judge, for the tests flagged for review."""
    found = next(o for o in outcomes if o.student == student and o.assignment == name)
    return {t.grade_id: t.review for t in found.tests if t.review}


@pytest.mark.parametrize("student", sorted(SHORTCUTS))
def test_a_shortcut_the_exercise_rules_out_is_flagged_for_review_though_its_values_match(graded, student):
    """The values matched, so the test keeps its points until a person confirms the finding (issue 28):
    nothing is taken silently, and nothing passes unseen."""
    _, outcomes = graded
    name, _, attacked = SHORTCUTS[student]
    got = points(outcomes, student, name)
    assert got[attacked][0] == full_marks(name)[attacked] and got[attacked][1].endswith(REVIEW_REASON), got[attacked]
    assert set(reviews(outcomes, student, name)) == {attacked}
    others = {k: p for k, (p, _) in got.items() if k != attacked}
    assert others == {k: p for k, p in full_marks(name).items() if k != attacked}


def test_a_kernel_that_reports_its_failures_as_passed_earns_nothing(graded, tmp_path):
    inbox, outcomes = graded
    kernel_says = {t.grade_id: t.status for t in validate(inbox / "forger" / f"{T}.ipynb", workdir=tmp_path)}
    assert kernel_says["test_softmax"] == "passed"  # the kernel's own word, forged
    got = points(outcomes, "forger", T)
    assert got["test_softmax"][0] == 0
