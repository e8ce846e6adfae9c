"""A graded test and a graded submission, as one typed value from the worker to the marker file and back.

    test = TestResult("test_dist", 2.0, 2.0, "passed", "The hidden checks passed.")
    outcome = Outcome("ann", "01_tensors", 2.0, 2.0, [test], [])
    text = outcome.to_json()             # the marker: autograded/<student>/<assignment>/course-grader.json
    Outcome.from_json(json.loads(text)) == outcome

Both are frozen: a stage that changes a result makes a new one (``dataclasses.replace``). Their list fields
stay lists (nothing appends to them) so that they compare equal to lists. Imports only the standard library
and :mod:`.statuses`: the processes that only read results (table, export, feedback) need no torch.

The marker's format: :data:`MARKER_FORMAT` is written as its last key; a marker without ``"format"`` is format 1
(every marker before it), read alike. Unknown keys are ignored; a missing required key raises (KeyError for a
test's, TypeError for the submission's), so a damaged marker is never taken for a grade.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from typing import TYPE_CHECKING

from .statuses import AWAITING, UNDER_REVIEW

if TYPE_CHECKING:  # only for the annotation: reading results needs no nbformat
    import nbformat

__all__ = ["MARKER_FORMAT", "TestResult", "NotebookResult", "Outcome", "verdict_line"]

MARKER_FORMAT = 2  # 1: no "format" key (every marker up to it); the same keys otherwise


@dataclass(frozen=True)
class TestResult:
    """One graded test cell (or hand-graded answer) of one submission; its fields in this order (positional
    construction relies on it). In the marker: a JSON object of these keys, ``"notebook"`` only when not ""."""

    __test__ = False  # a grading record whose name starts with "Test": not a class of tests for pytest to collect
    grade_id: str
    max_points: float
    points: float
    status: str  # one of statuses.STATUSES; "manual": a hand-graded answer, not scored here (points 0,
    # which count neither as earned nor as lost: the instructor's score comes from formgrader)
    reason: str  # one sentence for instructor and student; never shows hidden test source
    failed_keys: list[str] = field(default_factory=list)  # reference keys it did not match (class report)
    unchecked_keys: list[str] = field(default_factory=list)  # of those, never recorded: the cell stopped before them
    kernel_word: bool = False  # an assert-only test (notebook.cells.asserts_only): passed iff it ran without an error
    review: str = ""  # what the grader read in the answer's source, for a person (gradebook: needs_manual_grade)
    review_cell: str = ""  # the grade_id of the exercise's answer cell, where formgrader shows ``review``
    notebook: str = ""  # the notebook it belongs to (nbgrader's layout); "": the assignment's own notebook

    def to_json(self) -> dict:
        """{field: value} in field order, without ``"notebook"`` when it is ""."""
        data = asdict(self)
        if not self.notebook:
            del data["notebook"]
        return data

    @classmethod
    def from_json(cls, data: dict) -> "TestResult":
        """From a marker's test: the first five keys required (KeyError), the others default; unknown keys
        ignored (a 5-key test of a failed submission, written before format 2, reads)."""
        if not isinstance(data, dict):
            raise TypeError(f"a test result is a JSON object, not {type(data).__name__}")
        return cls(data["grade_id"], data["max_points"], data["points"], data["status"], data["reason"],
                   **{name: data[name] for name in _OPTIONAL if name in data})


_OPTIONAL = [f.name for f in fields(TestResult)][5:]


@dataclass
class NotebookResult:
    """What grading one notebook gives the engine's caller (grader.engine.grade.grade)."""

    tests: dict[str, TestResult]  # by grade_id, in notebook order
    notebook: nbformat.NotebookNode  # executed merged notebook, record outputs removed
    problems: list[str]  # what needs the instructor's attention

    @property
    def score(self) -> float:
        return sum(t.points for t in self.tests.values())

    @property
    def max_score(self) -> float:
        return sum(t.max_points for t in self.tests.values())

    @property
    def awaiting(self) -> float:
        """The points of hand-graded answers: not in ``score`` until the instructor grades them."""
        return sum(t.max_points for t in self.tests.values() if t.status == "manual")


def verdict_line(test: TestResult) -> str:
    """What a graded test cell shows once graded: its verdict, points and reason."""
    if test.status == "manual":
        return f"{AWAITING.upper()} (-/{test.max_points:g}): {test.reason}\n"
    if test.review:
        return f"{test.status.upper()} ({test.points:g}/{test.max_points:g}), {UNDER_REVIEW.upper()}: {test.reason}\n"
    return f"{test.status.upper()} ({test.points:g}/{test.max_points:g}): {test.reason}\n"


@dataclass(frozen=True)
class Outcome:
    """One graded submission: what a worker returns (student and assignment blank: it never learns them), what
    the main process saves (grader.results.gradebook.save_result) and what the marker holds; fields in this
    order. In the marker: a JSON object of the fields but ``notebooks``, ``tests`` as :meth:`TestResult.to_json`,
    then ``"format": MARKER_FORMAT``."""

    student: str
    assignment: str
    score: float
    max_score: float
    tests: list[TestResult]  # in notebook order (the notebooks of an nbgrader-layout assignment one after another)
    problems: list[str]     # what needs the instructor's attention
    timestamp: str = ""
    source_sha256: str = ""
    references_sha256: str = ""  # the reference values it was compared with
    seconds: float = 0.0    # how long grading took (the kernel's run, on whichever machine); 0: not measured
    notebooks: dict[str, str] = field(default_factory=dict, compare=False, repr=False)  # notebook name (no
    # ".ipynb") -> the graded notebook's text: from the worker to the main process only, never in the marker ({})

    def to_json(self) -> str:
        """The marker's text (indented JSON, ASCII: any text escaped), ``"format"`` last."""
        data = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "notebooks"}
        data["tests"] = [test.to_json() for test in self.tests]
        data["problems"] = list(self.problems)
        data["format"] = MARKER_FORMAT
        return json.dumps(data, indent=1)

    @classmethod
    def from_json(cls, data: dict) -> "Outcome":
        """From a marker's parsed JSON, format 1 or 2: unknown keys ignored, a missing required key raises
        (TypeError; KeyError for a test's), as does a value that is not a JSON object (TypeError)."""
        if not isinstance(data, dict):
            raise TypeError(f"a marker is a JSON object, not {type(data).__name__}")
        known = {name: data[name] for name in _STORED if name in data}
        if "tests" in known:
            known["tests"] = [TestResult.from_json(test) for test in known["tests"]]
        return cls(**known)


_STORED = [f.name for f in fields(Outcome) if f.name != "notebooks"]
