"""The grading engine: run a trusted reference, grade a submission, validate a notebook.

    refs = run_reference(source, workdir=tmp / "ref")
    refs.save(path); refs = References.load(path)
    result = grade(source, submission, refs, workdir=tmp / "alice")
    result.tests["dist_test"].status, result.score, result.notebook

The graded notebook is the trusted source with the student's answer cells merged in
(:mod:`grader.engine.notebook.merge`). It runs in a sandboxed kernel (:mod:`grader.engine.isolation.sandbox`, :mod:`grader.engine.isolation.kernel`);
each graded test cell reports values with ``grader.record.record``, and :mod:`grader.engine.verdict.compare`
compares them with what the same cell recorded in the reference run, here in the grader.
"""
from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

import nbformat

from .isolation.kernel import CellRun
from .isolation.notebook_run import RECORD_LIMITS, run_notebook, scrub_tainted
from .isolation.sandbox import Limits, SandboxUnavailable, sandbox_status
from .notebook.cells import (asserts_only, cell_points, is_manual, is_task, is_test, nbgrader_meta, released_answer,
                             support_files_under)
from .notebook.failures import raised_in_answer, visible_message
from .notebook.merge import (Merged, Role, last_graded_cell, merge, plain_text, read_submission,
                            store_written_answers)
from .notebook.shares import TOLERANCE, earned, has_shares
from .reading.bounds import bounded_readings
from .reading.rules import REVIEW_REASON, Reading, review_note, source_reason
from .verdict.compare import check_records, collect, failing_keys, key_problems, test_reason
from .verdict.output_score import output_points, result_text, too_high
from .verdict.references import References, sha256_of
from .verdict.result import NotebookResult, TestResult, verdict_line
from .verdict.statuses import AWAITING, LEFT_AS_RELEASED, UNDER_REVIEW

__all__ = ["Limits", "TestResult", "NotebookResult", "References", "ReferenceRunError",
           "SandboxUnavailable", "sandbox_status", "AWAITING", "UNDER_REVIEW", "reviewed", "source_readings",
           "LEFT_AS_RELEASED", "manual_result", "unanswered_result", "run_reference", "save_reference", "grade",
           "validate", "verdict_line"]


class ReferenceRunError(RuntimeError):
    """The instructor's solution did not pass its own tests (or recorded nothing)."""


# Stock nbgrader grades such an assignment and scores the failing test 0 for every student, without a word (a test
# written for an older library, e.g. numpy's removed ``np.float``, or a package the course no longer installs);
# course-grader refuses it instead (README, THREAT_MODEL.md: deliberate differences).
REFUSED = ("Stock nbgrader would score that test 0 for every student; course-grader grades no submission of "
           "this assignment until the solution passes it. Fix that cell in the source notebook (run it there to "
           "see the error) and run autograde again: the collected submissions wait, and are graded then")


def _require_sandbox(unsafe: bool) -> bool:
    """True when kernels run sandboxed; raises when they cannot and unsafe was not asked for."""
    if unsafe:
        return False
    ok, why = sandbox_status()
    if not ok:
        raise SandboxUnavailable(f"cannot isolate student code: {why}. To grade without "
                                 "isolation anyway (only for code you trust), pass --unsafe.")
    return True


def _check_workdir(source: Path, workdir: Path) -> None:
    """The kernel may write anywhere in ``workdir``: refuse one that holds the source notebook."""
    if Path(source).resolve().is_relative_to(Path(workdir).resolve()):
        raise ValueError(f"workdir {workdir} contains the source notebook {source}; give each "
                         "run an empty scratch folder of its own")


def _support_files(source: Path) -> tuple[tuple[str, Path], ...]:
    """The files that ship with the assignment (non-notebook files beside the trusted source and in
    its sub-folders, e.g. ``ddp_lenet.py`` beside ``05_multigpu.ipynb``, ``mini-dataset/cat.png``),
    as (relative name, path): every kernel gets fresh copies of them in the same places in its
    working folder. A student's own copies of them are never used."""
    folder = Path(source).resolve().parent
    return tuple((name, folder / name) for name in support_files_under(folder))


def _first_failure(nb, runs: dict[int, CellRun], upto: int) -> str:
    """The earliest code cell before cell ``upto`` that did not run cleanly, in words ("cell 4,
    'import torch._dynamo', error: KeyError: ..."), or "" when the failing test cell is the first:
    a failed import or set-up cell is the cause an instructor needs, not the NameError it leaves."""
    for i in range(upto):
        run = runs.get(i)
        if run is not None and run.status not in ("ok", "not run"):
            line = next((text.strip() for text in nb.cells[i].source.splitlines() if text.strip()), "")
            return f"cell {i + 1}, {line[:60]!r}, {run.status}: {run.error or 'see the notebook'}"
    return ""


def run_reference(source: Path, *, workdir: Path, limits: Limits = Limits(),
                  unsafe: bool = False) -> References:
    """Execute the instructor's source notebook and keep what each graded test cell recorded."""
    sandboxed = _require_sandbox(unsafe)
    _check_workdir(source, workdir)
    started = time.monotonic()
    nb = nbformat.read(str(source), as_version=4)
    roles = [Role("test" if is_test(c) else "trusted", nbgrader_meta(c).get("grade_id", ""))
             for c in nb.cells]
    runs, problems = run_notebook(nb, roles, workdir, limits, sandboxed=sandboxed, record=True,
                                  support=_support_files(source))
    cells: dict[str, dict[str, dict]] = {}
    for i, role in enumerate(roles):
        if role.kind != "test":
            continue
        run = runs.get(i) or CellRun("not run")
        where = f"{Path(source).name}: graded test cell {role.grade_id!r}"
        if run.status != "ok":
            first = _first_failure(nb, runs, i)
            cause = f"; the first cell that failed is {first}" if first else ""
            raise ReferenceRunError(f"{where} did not pass with the solution ({run.status}: "
                                    f"{run.error or 'see the notebook'}){cause}. {REFUSED}")
        if None in run.records:
            raise ReferenceRunError(f"{where} recorded values over the grader's size limit "
                                    f"({RECORD_LIMITS}); record smaller values")
        by_key, bad = collect(run.payloads())
        if not bad and not by_key and asserts_only(nb.cells[i]):
            if too_high(cell_points(nb.cells[i]), run.outputs):
                raise ReferenceRunError(f"{where} ends in {result_text(run.outputs)[:40]!r}, above its "
                                        f"{cell_points(nb.cells[i]):g} points: nbgrader would stop grading every "
                                        "submission there; make its last line a score between 0 and the points")
            cells[role.grade_id] = {}  # nothing to compare: the verdict rests on the kernel's word
            continue
        if bad or not by_key:
            raise ReferenceRunError(f"{where} recorded no values; every graded test must call "
                                    "grader.record.record(key, value) on its hidden inputs")
        twice = [k for k, v in by_key.items() if len(v) > 1]
        if twice:
            raise ReferenceRunError(f"{where} recorded {twice[0]!r} more than once; use "
                                    "distinct keys")
        cells[role.grade_id] = {k: {"value": v[0]["value"], "what": _text(v[0].get("what")),
                                    "rtol": float(v[0].get("rtol", 0)), "atol": float(v[0].get("atol", 0)),
                                    **_share(v[0])}
                                for k, v in by_key.items()}
        _check_shares(where, cells[role.grade_id], cell_points(nb.cells[i]))
    return References(cells, sha256_of(source), round(time.monotonic() - started, 2), problems)


def _share(payload: dict) -> dict:
    """{"points": share} when the trusted run's record gave one (partial credit), else {}."""
    points = payload.get("points")
    return {"points": float(points)} if type(points) in (int, float) else {}


def _check_shares(where: str, cell: dict, points: float) -> None:
    """Shares (grader.engine.notebook.shares): on every key of a cell or on none, adding up to its points."""
    given = [ref["points"] for ref in cell.values() if "points" in ref]
    if given and len(given) != len(cell):
        raise ReferenceRunError(f"{where} gave points= to {len(given)} of its {len(cell)} record() calls; "
                                "give every record() call of the cell a share, or none")
    if given and abs(sum(given) - points) > TOLERANCE:
        raise ReferenceRunError(f"{where} recorded shares adding up to {sum(given):g}, but the cell is worth "
                                f"{points:g} points; make the points= of its record() calls add up to {points:g}")


def save_reference(source: Path, target: Path, *, limits: Limits = Limits(),
                   unsafe: bool = False) -> References:
    """:func:`run_reference` in a scratch folder of its own; the values are saved to ``target``."""
    from .isolation.cleanup import scratch_folder

    with scratch_folder("reference") as workdir:
        references = run_reference(Path(source), workdir=Path(workdir), limits=limits, unsafe=unsafe)
    references.save(Path(target))
    return references


def grade(source: Path, submission: Path | None, references: References, *, workdir: Path,
          limits: Limits = Limits(), unsafe: bool = False, missing: str = "",
          deduct_certain: bool = False) -> NotebookResult:
    """Grade ``submission`` against the trusted ``source``; never raises for a bad submission.

    missing: why there is no submission (``submission`` None), e.g. collect's reason for rejecting
    the upload; the default says that nothing was submitted. deduct_certain: the course's opt-in
    (``c.CourseGrader.deduct_certain_findings``): a test whose answer calls an avoided function directly
    in its own answer cells scores 0; by default every finding is flagged for review instead
    (:func:`reviewed`)."""
    sandboxed = _require_sandbox(unsafe)
    _check_workdir(source, workdir)
    trusted = nbformat.read(str(source), as_version=4)
    problems: list[str] = []
    if references.source_sha256 and references.source_sha256 != sha256_of(source):
        problems.append("the source notebook changed after the reference run; run it again")
    cells, why = read_submission(submission)
    if submission is None and missing:
        why = missing
    merged: Merged = merge(trusted, cells)
    problems += merged.problems if cells is not None else []
    tests = {}
    if cells is None:
        problems.insert(0, why)
        for i, role in enumerate(merged.roles):
            cell = merged.notebook.cells[i]
            if role.kind == "test" or ((is_manual(cell) or is_task(cell)) and role.grade_id not in tests):
                tests[role.grade_id] = TestResult(role.grade_id, cell_points(cell), 0.0, "missing",
                                                  why[0].upper() + why[1:] + ".")
        return NotebookResult(tests, merged.notebook, problems)
    runs, run_problems = run_notebook(merged.notebook, merged.roles, workdir, limits, sandboxed=sandboxed,
                                      record=True, support=_support_files(source), upto=last_graded_cell(merged))
    problems += run_problems
    scrub_tainted(merged.notebook, runs)
    read = source_readings(merged)
    unchanged = _unchanged_answers(trusted, merged)
    for i, role in enumerate(merged.roles):
        if role.kind == "test":
            cell = merged.notebook.cells[i]
            test = tests[role.grade_id] = _verdict(role.grade_id, cell_points(cell), runs.get(i),
                                                   references.cells.get(role.grade_id), problems, cell.source)
            if test.kernel_word and test.status == "passed":
                test = tests[role.grade_id] = _scored_by_output(test, runs[i].outputs, problems)
            answers, reading = read.get(i, ([], Reading()))
            if reading.problems and test.points > 0:
                exercise = next((merged.roles[a].grade_id for a in answers if merged.roles[a].grade_id), role.grade_id)
                test = tests[role.grade_id] = reviewed(test, reading, exercise, deduct_certain)
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=verdict_line(test))]
        elif role.kind == "answer" and is_manual(merged.notebook.cells[i]) and role.grade_id not in tests:
            points = cell_points(merged.notebook.cells[i])
            tests[role.grade_id] = (unanswered_result(role.grade_id, points) if role.grade_id in unchanged
                                    else manual_result(role.grade_id, points))
        elif is_task(merged.notebook.cells[i]):  # nbgrader's task: answered in added cells, graded by hand
            gid = nbgrader_meta(merged.notebook.cells[i]).get("grade_id", "")
            tests.setdefault(gid, manual_result(gid, cell_points(merged.notebook.cells[i])))
    store_written_answers(merged)
    return NotebookResult(tests, merged.notebook, problems)


def manual_result(gid: str, points: float) -> TestResult:
    """A hand-graded answer's result: merged and run, never scored here."""
    return TestResult(gid, points, 0.0, "manual",
                      "This answer is graded by hand by your instructor (awaiting manual grading).")


def unanswered_result(gid: str, points: float) -> TestResult:
    """A hand-graded answer handed in as released: 0 points, decided here (nbgrader's autograde scores an
    answer whose checksum is the release's 0 and asks no one to grade it)."""
    return TestResult(gid, points, 0.0, "failed", LEFT_AS_RELEASED)


def _unchanged_answers(trusted: nbformat.NotebookNode, merged: Merged) -> set[str]:
    """Grade ids of hand-graded answers whose every merged copy is the released text of the answer."""
    released = {nbgrader_meta(c).get("grade_id"): plain_text(released_answer(c.source, c.cell_type))
                for c in trusted.cells if is_manual(c)}
    copies: dict[str, list[str]] = {}
    for role, cell in zip(merged.roles, merged.notebook.cells):
        if role.kind == "answer" and role.grade_id in released:
            copies.setdefault(role.grade_id, []).append(plain_text(cell.source))
    return {gid for gid, texts in copies.items() if all(text == released[gid] for text in texts)}


def source_readings(merged: Merged) -> dict[int, tuple[list[int], Reading]]:
    """For each graded test cell (by index), its exercise's answer cells and what the grader read there
    (:mod:`grader.engine.reading.rules`); decided from text, in a child process with a time and a memory
    limit (:mod:`grader.engine.reading.bounds`), no code of the student's run."""
    return bounded_readings(_reading_input(merged))


def _reading_input(merged: Merged) -> list[tuple[str, str]]:
    """(role, source) of every cell of ``merged``: what :func:`bounded_readings` reads."""
    return [(role.kind if cell.cell_type == "code" else "markdown", cell.source)
            for role, cell in zip(merged.roles, merged.notebook.cells)]


def source_problems(merged: Merged) -> dict[int, list[str]]:
    """For each graded test cell (by index), the findings of :func:`source_readings`."""
    return {index: reading.problems for index, (_, reading) in source_readings(merged).items()}


def reviewed(test: TestResult, reading: Reading, exercise: str, deduct_certain: bool = False) -> TestResult:
    """A test whose answer's source holds findings: it keeps the points its behaviour earned and is flagged
    for a person (``review``), who confirms or clears the finding in formgrader. Only a course that opted
    in (``deduct_certain``) scores 0 for a certain finding (a direct call of an avoided function in the
    exercise's own answer cells), with the reason, instead."""
    if deduct_certain and reading.certain:
        return TestResult(test.grade_id, test.max_points, 0.0, "failed", source_reason(reading.certain))
    return TestResult(test.grade_id, test.max_points, test.points, test.status, f"{test.reason} {REVIEW_REASON}",
                      test.failed_keys, test.unchecked_keys, test.kernel_word, review_note(exercise, reading),
                      exercise)


def _text(value) -> str:
    return value if isinstance(value, str) else ""


KERNEL_WORD = ("The test ran without an error. It records no values, so the grader compared none: scored as "
               "nbgrader scores it, on the kernel's word.")


def _verdict(gid: str, points: float, run: CellRun | None, expected: dict | None,
             problems: list[str], source: str = "") -> TestResult:
    def result(status: str, reason: str) -> TestResult:
        ran = expected is not None and status in ("failed", "error") and None not in run.records
        keys = failing_keys(expected, run.payloads()) if ran else []  # which hidden checks it missed
        if expected == {} and status == "passed":  # an assert-only test (notebook.cells.asserts_only)
            reason = KERNEL_WORD
        return TestResult(gid, points, points if status == "passed" else 0.0, status, reason, keys,
                          _unchecked(keys, run, expected), kernel_word=expected == {})

    run = run or CellRun("not run")
    if expected is None:
        problems.append(f"no reference values for {gid!r}; run the reference again")
        return result("error", "This test could not be graded (no reference values).")
    if has_shares(expected) and run.records and None not in run.records:
        return _partial_verdict(result, points, run, expected)  # also when it stopped part-way
    if run.status == "error":
        trace = next((o.get("traceback") for o in reversed(run.outputs) if o.get("output_type") == "error"), None)
        own = raised_in_answer(trace) if isinstance(trace, list) else None
        message = visible_message(run.error, source) if run.part == "visible" else ("", False)
        return result("error", test_reason("error", run.part, run.error, own=own, message=message))
    if run.status != "ok":
        return result(run.status, test_reason(run.status, run.part, run.error))
    if None in run.records:
        return result("failed", f"The values this test recorded were over the grader's size limit "
                                f"({RECORD_LIMITS}), so they were not compared.")
    ok, why = check_records(expected, run.payloads())
    status = "passed" if ok else "failed"
    return result(status, test_reason(status, run.part, run.error, why))


def _scored_by_output(test: TestResult, outputs: list, problems: list[str]) -> TestResult:
    """An assert-only test that ran to its end, scored as nbgrader scores it from its result (``Out``):
    a number below the points is partial credit (grader.engine.verdict.output_score); still on the kernel's word."""
    points = output_points(test.max_points, outputs)
    if too_high(test.max_points, outputs):
        problems.append(f"{test.grade_id} ended in {result_text(outputs)[:40]!r}, above its {test.max_points:g} "
                        "points: scored its points (nbgrader's autograde stops on this submission)")
    if points >= test.max_points:
        return test
    reason = (f"Partly right: the test ran without an error and its last line gave {points:g} of "
              f"{test.max_points:g} points" if points > 0 else
              "The test ran without an error, but its last line gave 0 points")
    return TestResult(test.grade_id, test.max_points, points, "failed",
                      reason + " (scored as nbgrader scores it, on the kernel's word).", kernel_word=True)


def _unchecked(keys: list[str], run: CellRun, expected: dict | None) -> list[str]:
    """The ``keys`` never recorded because the cell stopped (an error in its visible part, or part-way
    through its hidden part) before reaching them: not checked, rather than not passed."""
    if run.status == "ok" or not keys or not expected:
        return []
    _, recorded = key_problems(expected, run.payloads())
    return [key for key in keys if key not in recorded]


def _partial_verdict(result, points: float, run: CellRun, expected: dict) -> TestResult:
    """A cell whose keys carry shares (grader.engine.notebook.shares): the shares of the keys that match.

    The status stays what happened ("failed", or "error"/"timeout"/"crashed" when the cell stopped
    part-way), with the points earned and a reason that starts "Partly right" when they are > 0;
    "passed" only when every key matched in a cell that ran to its end."""
    problems, recorded = key_problems(expected, run.payloads())
    stopped = run.status != "ok"
    share, keys = earned(expected, problems, recorded, stopped)
    if not stopped and len(keys) == len(expected):
        return result("passed", test_reason("passed", run.part, run.error))
    status = run.status if stopped else "failed"
    wrong = "; ".join(why for why in problems.values() if why)
    reason = test_reason(status, run.part, run.error, wrong)
    failed = [key for key in expected if key not in keys]
    test = replace(result(status, reason), failed_keys=failed, unchecked_keys=_unchecked(failed, run, expected))
    if share > 0:
        test = replace(test, points=min(share, points),
                       reason=f"Partly right: {len(keys)} of {len(expected)} hidden checks passed. " + reason)
    return test


def _first_line(text: str, limit: int = 200) -> str:
    line = (text or "an error").strip().splitlines()[0] if (text or "").strip() else "an error"
    line = line.rstrip(": ") or "an error"  # "NotImplementedError: " (an empty message)
    return line if len(line) <= limit else line[: limit - 3] + "..."


def validate(notebook: Path, *, workdir: Path, limits: Limits = Limits()) -> list[TestResult]:
    """The student self-check: run ``notebook`` as it is; a test passes iff its cell ran cleanly (and a test
    that ends in a number scores it, as nbgrader does: :mod:`grader.engine.verdict.output_score`).

    Runs without the sandbox (it is the student's own code on the student's machine). Raises
    ValueError when the notebook cannot be read.
    """
    cells, why = read_submission(notebook, whose="your")
    if cells is None:
        raise ValueError(f"cannot validate: {why}")
    try:
        nb = nbformat.read(str(notebook), as_version=4)
    except Exception as exc:  # noqa: BLE001 - any damage: say so, in one sentence
        raise ValueError(f"cannot validate: the notebook could not be parsed ({exc})") from None
    roles = [Role("test" if is_test(c) else "trusted", nbgrader_meta(c).get("grade_id", ""))
             for c in nb.cells]
    runs, _ = run_notebook(nb, roles, workdir, limits, sandboxed=False, record=False)
    results = []
    for i, role in enumerate(roles):
        if role.kind != "test":
            continue
        run, pts = runs.get(i) or CellRun("not run"), cell_points(nb.cells[i])
        status = {"ok": "passed"}.get(run.status, run.status)
        reason = {"passed": "The visible checks passed.",
                  "error": f"The test raised {_first_line(run.error)}.",
                  "timeout": "The test did not finish within the time limit."}.get(
            status, f"The test did not run: {run.error or 'the kernel had stopped'}.")
        points = output_points(pts, run.outputs) if status == "passed" else 0.0  # nbgrader's partial credit
        if points < pts and status == "passed":
            status, reason = "failed", (f"The test ran without an error; its last line gives {points:g} of {pts:g} "
                                        "points (the score nbgrader reads there).")
        results.append(TestResult(role.grade_id, pts, points, status, reason))
    return results
