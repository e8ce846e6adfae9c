"""The course quality gate (``course-grader check``): is every graded test worth its points?

For each source notebook:

(a) ``SOLUTION_SCORES_FULL_MARKS``: graded with its own solutions, it scores full marks;
(b) ``RELEASE_SCORES_ZERO``: the released, unmodified student notebook scores zero on every test;
    (a) and (b) are graded as a student's notebook is, up to its last graded test: later cells decide no points;
    in (a), (b) and (c) the grader must report nothing beside the verdicts (no cell timed out or crashed,
    no output cut): every student's grading would meet it too;
(c) ``EACH_TEST_FAILS_WITHOUT_ITS_ANSWER``: each graded test fails when only its own exercise is stubbed (no test
    passes vacuously; one check ``c:<exercise>`` per exercise, :meth:`GateCheck.per_exercise`);
    the copy is cut after the exercise's last test cell, so later cells are not run; a test whose
    keys carry shares (partial credit) runs its hidden part there even when its visible part fails,
    and each key must fail on its own: one that matches is named (its share is given for nothing);
(d) ``RELEASE_LEAKS_NOTHING``: the release holds no solution code and no hidden test text;
(e) ``IDS_UNIQUE_AND_POINTS_ADD_UP``: grade_ids are unique and the points add up to the header's
    ``Total points: N`` (with ``allow_asserts``, for a course brought in from nbgrader, a notebook without that
    header passes);
(f) ``TEST_CELLS_FOLLOW_THE_RULES``: every graded test cell follows the authoring rules
    (:mod:`grader.authoring.graded_cells`): its hidden part
    records the student's results and compares nothing in the kernel; its visible part runs
    without the grader. A line "who decides" (``WHO_DECIDES``, never failing) says how many points rest on values
    the grader compares, how many also on facts it reads from the answer's source, how many on the
    kernel's own word, and which visible parts hold kernel-side checks (advice, no points);
(m) ``HAND_GRADED_ANSWERS_FOLLOW_THEIR_RULES``: hand-graded answers (:mod:`grader.authoring.manual_cells`)
    follow their own rules; (a) and (b) leave their points out and name them: "N points graded by hand".

The trusted reference run (``REFERENCE_RUN``) also fails when a graded test cell that calls ``record()`` records no
value. Grading runs through :mod:`grader.engine.grade`; the runs of all notebooks share one pool of ``workers``
processes.

An assert-only test cell (no ``record()``, stock nbgrader's kind: the engine scores it as nbgrader does: full marks
when it runs without an error, or the number its last line shows) fails (f) unless the gate runs with ``allow_asserts`` (``--allow-asserts``), meant for an
nbgrader course brought in as it is; either way a line "kernel's word" (``KERNELS_WORD``) names those cells and shows how to add
a hidden part that records. A line "markers" (``MARKER_TYPOS``, a warning) names lines that look like nbgrader's
region markers but are none to nbgrader.

Each check is a :class:`GateCheck`; its value is the letter or word the report prints.
"""
from __future__ import annotations

import re
import shutil
import tempfile
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

import nbformat

from ..authoring.assembly import build, release
from ..authoring.graded_cells import graded_cell_problems, kernel_word_hint, who_decides
from ..authoring.manual_cells import manual_cell_problems, manual_cell_warnings
from ..engine.notebook import cells as nbs
from ..engine.notebook import variants
from ..engine.notebook.shares import visible_apart
from ..engine.verdict.result import Outcome, TestResult
from ..engine.verdict.statuses import LEFT_AS_RELEASED
from ..errors import GraderError
from .jobs import GradeJob, ReferenceJob, TrustedNotebook, run_grade_job, run_reference_job
from .runner import open_runner

__all__ = ["Check", "GateCheck", "GateReport", "leaks", "check_notebooks"]

TRIVIAL = re.compile(r"^(#.*|(return|pass|break|continue|else:|try:|finally:)\s*\w*|[\W_]*)$")


class GateCheck(StrEnum):
    """The gate's checks, named for what they check; each value is what the report prints (see the table above)."""
    SOLUTION_SCORES_FULL_MARKS = "a"
    RELEASE_SCORES_ZERO = "b"
    EACH_TEST_FAILS_WITHOUT_ITS_ANSWER = "c"
    RELEASE_LEAKS_NOTHING = "d"
    IDS_UNIQUE_AND_POINTS_ADD_UP = "e"
    TEST_CELLS_FOLLOW_THE_RULES = "f"
    HAND_GRADED_ANSWERS_FOLLOW_THEIR_RULES = "m"
    REFERENCE_RUN = "reference"
    KERNELS_WORD = "kernel's word"
    WHO_DECIDES = "who decides"
    MARKER_TYPOS = "markers"

    @staticmethod
    def per_exercise(name: str) -> str:
        """The check (c) for one exercise, with only that exercise stubbed: ``"c:<exercise>"``."""
        return f"{GateCheck.EACH_TEST_FAILS_WITHOUT_ITS_ANSWER}:{name}"

    @staticmethod
    def exercise_of(check: str) -> str:
        """The exercise a :meth:`per_exercise` check names."""
        return check.removeprefix(GateCheck.per_exercise(""))


@dataclass
class Check:
    name: str      # a GateCheck, or GateCheck.per_exercise(<exercise>)
    ok: bool
    detail: str


@dataclass
class GateReport:
    notebook: Path
    checks: list[Check] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    def add(self, name: str, ok: bool, detail: str) -> None:
        self.checks.append(Check(name, ok, detail))


def _substantial(line: str) -> bool:
    """Worth reporting when found in a release: not a comment, bracket, block header or bare ``return out``."""
    text = line.strip()
    return (len(text) >= 8 and not TRIVIAL.match(text) and not text.endswith(":")
            and "NotImplementedError" not in text)


def leaks(source: nbs.NotebookNode, released: nbs.NotebookNode) -> list[str]:
    """Gate (d): solution lines, hidden-test-only lines or nbgrader markers found in the release.

    A solution line counts wherever it appears (a hint that spells out the answer is a leak), unless the
    course's own code cells outside the solutions hand it out too (a given version the exercise extends:
    ``u = a.copy()`` in a naive LU the student turns into a pivoted one); a
    hidden test line counts only if the visible part of the source does not have it too (hidden
    tests often repeat a visible call on fresh inputs).
    """
    found = []
    released_lines = {line.strip() for cell in released.cells for line in cell.source.splitlines()}
    text = "\n".join(cell.source for cell in released.cells)
    for marker in nbs.MARKERS:
        if marker in text:
            found.append(f"the marker {marker!r} is in the release")
    visible = {line.strip() for cell in nbs.stub(source).cells
               for line in nbs.strip_hidden(cell.source).splitlines()}
    given = {line.strip() for cell in source.cells if cell.cell_type == "code" and not nbs.is_solution(cell)
             for line in nbs.strip_hidden(cell.source).splitlines()}  # code the course hands out as it is
    for line in dict.fromkeys(l.strip() for l in variants.solution_lines(source) if _substantial(l)):
        if line in released_lines and line not in given:
            found.append(f"solution line in the release: {line[:100]!r}")
    for line in dict.fromkeys(l.strip() for l in variants.hidden_test_lines(source) if _substantial(l)):
        if line in released_lines and line not in visible:
            found.append(f"hidden test line in the release: {line[:100]!r}")
    for index, cell in enumerate(released.cells):
        if cell.cell_type == "code" and cell.get("outputs"):
            found.append(f"released cell {index} has outputs")
    return found


# -- jobs (run by grader.running.runner: local processes or a Dask cluster) ---------------------------

def _grade_job(plan: "_Plan", source: nbs.NotebookNode, submission: nbs.NotebookNode, refs: dict,
               limits, unsafe: bool, truncated: bool = False) -> GradeJob:
    """A job grading ``submission`` against the variant ``source`` of the plan's notebook.

    A truncated variant is a changed copy of the source: its hash differs from the reference run's
    on purpose, and its stubbed test cells look up the references of the cells they copy."""
    if truncated:
        cells = dict(refs["cells"])
        cells.update({variants.STUBBED_PREFIX + gid: value for gid, value in refs["cells"].items()})
        refs = dict(refs, cells=cells, source_sha256="")
    trusted = plan.assignment if source is plan.source else \
        TrustedNotebook(plan.assignment.name, nbformat.writes(source).encode("utf-8"), plan.assignment.support)
    return GradeJob(trusted, nbformat.writes(submission).encode("utf-8"), refs, limits, unsafe)


def _verdicts(result: Outcome) -> tuple[list[TestResult], list[str]]:
    """The tests and the problems of a grade job's outcome."""
    return list(result.tests), list(result.problems)


def _free_shares(plan: "_Plan", gid: str, test: TestResult) -> str:
    """For a test with shares (partial credit) that earned points on a stub: which keys matched there,
    each a share given for nothing (" " + a sentence), else ""."""
    expected = (plan.references or {}).get("cells", {}).get(gid.removeprefix(variants.STUBBED_PREFIX), {})
    free = [f"{key!r} ({ref.get('what') or 'no description'})" for key, ref in expected.items()
            if "points" in ref and key not in test.failed_keys]
    return (f" (key {', '.join(free)} of {gid.removeprefix(variants.STUBBED_PREFIX)!r} matches on the stub: its share "
            "is given for nothing; record a value that depends on the student's answer)") if free else ""


# -- the gate ---------------------------------------------------------------------------------

@dataclass
class _Plan:
    report: GateReport
    source: nbs.NotebookNode | None
    files: Path
    assignment: TrustedNotebook | None = None
    jobs: dict[str, object] = field(default_factory=dict)  # check name -> future
    references: dict | None = None  # the reference run's values (References.to_dict())


def _structure_check(path: Path, report: GateReport, allow_asserts: bool = False) -> nbs.NotebookNode | None:
    """Gate (e); returns the notebook, or None when it cannot be read."""
    try:
        source = nbs.read_notebook(path)
    except Exception as error:
        report.add(GateCheck.IDS_UNIQUE_AND_POINTS_ADD_UP, False, f"cannot read the notebook: {error}")
        return None
    problems = nbs.structure_problems(source, header_required=not allow_asserts)
    points = nbs.test_points(source) + nbs.manual_points(source) + nbs.task_points(source)
    report.add(GateCheck.IDS_UNIQUE_AND_POINTS_ADD_UP, not problems, "; ".join(problems) or
               f"{len(nbs.exercises(source))} exercises, grade_ids unique, " +
               (f"{points:g} points as announced" if nbs.header_points(source) is not None else
                f"{points:g} points (no 'Total points' header: not required with --allow-asserts)"))
    rules = [problem for cell in source.cells if nbs.is_test(cell) for problem in graded_cell_problems(cell)]
    if allow_asserts:  # assert-only test cells answer to nbgrader's rule instead (points on the kernel's word)
        rules = [problem for cell in source.cells if nbs.is_test(cell) and not nbs.asserts_only(cell)
                 for problem in graded_cell_problems(cell)]
    report.add(GateCheck.TEST_CELLS_FOLLOW_THE_RULES, not rules,
               "; ".join(rules) or "hidden parts record results and compare nothing; "
               "visible parts run without the grader" + ("; assert-only test cells allowed (--allow-asserts)"
                                                         if allow_asserts and kernel_word_hint(source.cells) else ""))
    if kernel_word_hint(source.cells):
        report.add(GateCheck.KERNELS_WORD, True, kernel_word_hint(source.cells) + ("" if allow_asserts else
                   "\n  (or, for an nbgrader course brought in as it is, run the gate with --allow-asserts)"))
    report.add(GateCheck.WHO_DECIDES, True, who_decides(source.cells))
    if nbs.marker_typos(source):
        report.add(GateCheck.MARKER_TYPOS, True,
                   "warning: lines that look like nbgrader's region markers but are none to nbgrader (it reads "
                   "`### BEGIN HIDDEN TESTS`, `### END HIDDEN TESTS`, `### BEGIN SOLUTION`, "
                   "`### END SOLUTION` exactly), so what they mark is released as it is: "
                   + "; ".join(nbs.marker_typos(source)))
    if nbs.manual_points(source):
        manual = manual_cell_problems(source, zero_points_ok=allow_asserts)
        unmodelled = manual_cell_warnings(source) if allow_asserts else []  # nbgrader needs no model answer
        report.add(GateCheck.HAND_GRADED_ANSWERS_FOLLOW_THEIR_RULES, not manual,
                   "; ".join(manual) or f"{nbs.manual_points(source):g} points graded by hand: "
                   + ("each answer has a question and points; warning: " + "; ".join(unmodelled) if unmodelled
                      else "each answer has a question, a model answer and points"))
    return source


def _release_check(path: Path, source: nbs.NotebookNode, files: Path, report: GateReport) -> None:
    """Gate (d) on nbgrader's own release, saved as ``files/release.ipynb`` for (b)."""
    try:
        root = files / "nbgrader"
        build(root, path)
        released = nbs.read_notebook(release(root)[0])
        nbs.write_notebook(released, files / "release.ipynb")
    except Exception as error:
        report.add(GateCheck.RELEASE_LEAKS_NOTHING, False, f"nbgrader could not generate the release: {error}")
        return
    found = leaks(source, released)
    report.add(GateCheck.RELEASE_LEAKS_NOTHING, not found,
               "; ".join(found) or "no solution code or hidden test text in the release")


def check_notebooks(paths: list[Path], *, workers: int = 2, limits=None, unsafe: bool = False,
                    progress=None, thorough: bool = False, scheduler: str | None = None,
                    allow_asserts: bool = False) -> list[GateReport]:
    """Run the gate on every notebook; ``progress(msg)`` is called as checks finish.

    (c) runs by default in one kernel per notebook (:func:`grader.engine.notebook.variants.stubbed_walkthrough`);
    ``thorough`` runs one kernel per exercise instead, each on a copy cut after that exercise.
    Runs go to ``workers`` local processes, or to the Dask cluster at ``scheduler``.
    ``allow_asserts``: assert-only test cells pass (f) (their points rest on the kernel's word).
    """
    from ..engine.isolation.sandbox import Limits

    limits = limits or Limits()
    say = progress or (lambda msg: None)
    scratch = Path(tempfile.mkdtemp(prefix="course-gate-"))
    plans: list[_Plan] = []
    try:
        for index, path in enumerate(paths):
            report = GateReport(path)
            files = scratch / f"{index}-{path.stem}"
            files.mkdir()
            plan = _Plan(report, _structure_check(path, report, allow_asserts), files)
            if plan.source is not None:
                plan.assignment = TrustedNotebook.from_source(path)
            plans.append(plan)
        with open_runner(workers=workers, scheduler=scheduler, sandboxed=not unsafe) as runner:
            refs = {id(p): runner.submit(run_reference_job, ReferenceJob(p.assignment, limits, unsafe))
                    for p in plans if p.source is not None}
            for plan in plans:  # nbgrader's release, here, while the reference runs work
                if plan.source is not None:
                    _release_check(plan.report.notebook, plan.source, plan.files, plan.report)
            for plan in plans:
                if plan.source is None:
                    continue
                try:
                    references, error = runner.result(refs[id(plan)]), None
                except GraderError:
                    raise
                except Exception as failure:  # noqa: BLE001 - ReferenceRunError, SandboxUnavailable, ...
                    references, error = None, f"{type(failure).__name__}: {failure}"
                _reference_check(plan.report, references, error)
                say(f"{plan.report.notebook.name}: reference run {'ok' if error is None else 'FAILED'}")
                if error is None:
                    plan.references = references
                    _submit_variants(runner, plan, references, limits, unsafe, thorough)
            for plan in plans:
                _collect_variants(runner, plan, say)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return [p.report for p in plans]


def _reference_check(report: GateReport, references: dict | None, error: str | None) -> None:
    """REFERENCE_RUN: the reference run gave its values (``error`` None) and reported nothing beside them (no cell
    of the solution timed out, crashed or printed too much: ``References.problems``). Cells after the last graded
    test run only there, so only this check can tell the instructor about them."""
    said = (references or {}).get("problems") or []
    report.add(GateCheck.REFERENCE_RUN, error is None and not said, error or (
        "the solution's run reported: " + "; ".join(said) + " (grading stops after the last graded test, so no "
        "student's grading shows it)" if said else
        "the solution runs to its end and every test that calls record() records a value"))


def _submit_variants(runner, plan: _Plan, refs: dict, limits, unsafe: bool, thorough: bool) -> None:
    def submit(source: nbs.NotebookNode, submission: nbs.NotebookNode, truncated: bool = False):
        return runner.submit(run_grade_job, _grade_job(plan, source, submission, refs, limits, unsafe, truncated))

    # (a) and (b) grade the whole notebook as a student's would be graded: grading stops after its last graded
    # cell by itself (grader.engine.notebook.merge.last_graded_cell); the reference run runs every cell, and
    # REFERENCE_RUN fails where one of them timed out, crashed or printed too much.
    plan.jobs[GateCheck.SOLUTION_SCORES_FULL_MARKS] = submit(plan.source, plan.source)
    if (plan.files / "release.ipynb").exists():
        released = nbs.read_notebook(plan.files / "release.ipynb")
        plan.jobs[GateCheck.RELEASE_SCORES_ZERO] = submit(plan.source, released)
    if not thorough:  # (c) in one kernel: each exercise stubbed in turn, then restored
        walk = variants.stubbed_walkthrough(plan.source)
        plan.jobs[GateCheck.EACH_TEST_FAILS_WITHOUT_ITS_ANSWER] = submit(walk, walk, truncated=True)
        return
    for exercise in nbs.exercises(plan.source):
        cut = variants.truncate(plan.source, exercise.last_cell)
        apart = nbformat.from_dict(dict(cut, cells=[c for cell in cut.cells for c in visible_apart(cell)]))
        plan.jobs[GateCheck.per_exercise(exercise.name)] = submit(apart, nbs.stub(cut, set(exercise.solution_ids)),
                                                                  truncated=True)


def _collect_variants(runner, plan: _Plan, say) -> None:
    exercises = ({GateCheck.per_exercise(e.name): e for e in nbs.exercises(plan.source)}
                 if plan.source is not None else {})
    for name, job in plan.jobs.items():
        try:
            tests, problems = _verdicts(runner.result(job))
        except GraderError:
            raise
        except Exception as error:
            plan.report.add(name, False, f"grading crashed: {type(error).__name__}: {error}")
            continue
        tests, by_hand = _auto_and_by_hand(tests)
        by_id = {t.grade_id: t for t in tests}
        # What the grader reported beside the verdicts (a cell that timed out, a kernel that crashed, output cut):
        # every student's grading would meet it too, so the check fails even when the scores look right.
        reported = ("; the grader reported: " + "; ".join(problems)) if problems else ""
        if name == GateCheck.SOLUTION_SCORES_FULL_MARKS:
            score, total = sum(t.points for t in tests), sum(t.max_points for t in tests)
            lost = [f"{t.grade_id} {t.status} ({t.reason})" for t in tests if t.points < t.max_points]
            plan.report.add(GateCheck.SOLUTION_SCORES_FULL_MARKS,
                            not lost and not problems and (total > 0 or bool(by_hand)),
                            f"solution scores {score:g}/{total:g}" + by_hand
                            + ("; lost: " + "; ".join(lost) if lost else "") + reported)
        elif name == GateCheck.RELEASE_SCORES_ZERO:
            earned = [f"{t.grade_id} earns {t.points:g}{_free_shares(plan, t.grade_id, t)}"
                      for t in tests if t.points > 0]
            plan.report.add(GateCheck.RELEASE_SCORES_ZERO, not earned and not problems,
                            ("; ".join(earned) or f"release scores 0/{sum(t.max_points for t in tests):g}" + by_hand)
                            + reported)
        elif name == GateCheck.EACH_TEST_FAILS_WITHOUT_ITS_ANSWER:
            if problems:
                plan.report.add(GateCheck.EACH_TEST_FAILS_WITHOUT_ITS_ANSWER, False,
                                "the run with each exercise stubbed in turn" + reported)
            for exercise in exercises.values():
                stubbed = {gid.removeprefix(variants.STUBBED_PREFIX): t for gid, t in by_id.items()
                           if gid.startswith(variants.STUBBED_PREFIX)}
                _add_exercise_check(plan.report, exercise, stubbed, plan)
        else:
            if problems:
                plan.report.add(name, False, f"the run with {GateCheck.exercise_of(name)!r} stubbed" + reported)
            _add_exercise_check(plan.report, exercises[name], by_id, plan)
        say(f"{plan.report.notebook.name}: {name} {'ok' if plan.report.checks[-1].ok else 'FAILED'}")


def _auto_and_by_hand(tests: list[TestResult]) -> tuple[list[TestResult], str]:
    """The auto-graded verdicts, and "; N points graded by hand" for hand-graded answers (status
    "manual", or 0 points when left as released): those are neither full marks in (a) nor zero in (b),
    so (a) and (b) leave them out."""
    hand = [t for t in tests if t.status == "manual" or t.reason == LEFT_AS_RELEASED]
    by_hand = sum(t.max_points for t in hand)
    return [t for t in tests if t not in hand], (f"; {by_hand:g} points graded by hand" if by_hand else "")


def _add_exercise_check(report: GateReport, exercise: nbs.Exercise, by_id: dict, plan: "_Plan | None" = None) -> None:
    """Gate (c) for one exercise, from the verdicts of its tests with only that exercise stubbed."""
    vacuous = [gid for gid in exercise.test_ids if gid in by_id and by_id[gid].points > 0]
    missing = [gid for gid in exercise.test_ids if gid not in by_id]
    free = "".join(_free_shares(plan, gid, by_id[gid]) for gid in vacuous) if plan is not None else ""
    stubbed = f"with {', '.join(exercise.solution_ids)} stubbed" if exercise.solution_ids else "with no answer before it"
    detail = (f"{', '.join(vacuous)} still earns points {stubbed}: "
              f"the test does not depend on the student's answer{free}" if vacuous else
              f"{', '.join(missing)} was not graded" if missing else
              f"fails with {', '.join(exercise.solution_ids)} stubbed")
    report.add(GateCheck.per_exercise(exercise.name), not vacuous and not missing, detail)
