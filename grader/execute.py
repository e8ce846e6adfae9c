"""The grading engine: run a trusted reference, grade a submission, validate a notebook.

    refs = run_reference(source, workdir=tmp / "ref")
    refs.save(path); refs = References.load(path)
    result = grade(source, submission, refs, workdir=tmp / "alice")
    result.tests["dist_test"].status, result.score, result.notebook

The graded notebook is the trusted source with the student's answer cells merged in
(:mod:`grader.merge`). It runs in a sandboxed kernel (:mod:`grader.sandbox`, :mod:`grader.kernel`);
each graded test cell reports values with ``grader.record.record``, and :mod:`grader.verdicts`
compares them with what the same cell recorded in the reference run, here in the grader.
"""
from __future__ import annotations

import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import nbformat

from .kernel import CellRun, Kernel
from .course import cell_points, is_support_file, is_test, nbgrader_meta
from .merge import Merged, Role, merge, read_submission
from .references import References, sha256_of
from .sandbox import Limits, SandboxUnavailable, sandbox_status
from .verdicts import check_records, collect

__all__ = ["Limits", "TestResult", "NotebookResult", "References", "ReferenceRunError",
           "SandboxUnavailable", "sandbox_status", "run_reference", "save_reference", "grade", "validate"]

STATUSES = ("passed", "failed", "error", "timeout", "crashed", "not run", "missing")


class ReferenceRunError(RuntimeError):
    """The instructor's solution did not pass its own tests (or recorded nothing)."""


@dataclass
class TestResult:
    grade_id: str
    max_points: float
    points: float
    status: str  # one of STATUSES
    reason: str  # one sentence for instructor and student; never shows hidden test source


@dataclass
class NotebookResult:
    tests: dict[str, TestResult]  # by grade_id, in notebook order
    notebook: nbformat.NotebookNode  # executed merged notebook, record outputs removed
    problems: list[str]  # what needs the instructor's attention

    @property
    def score(self) -> float:
        return sum(t.points for t in self.tests.values())

    @property
    def max_score(self) -> float:
        return sum(t.max_points for t in self.tests.values())


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


def _copy_support_files(source: Path, workdir: Path) -> list[str]:
    """Copy the files that ship with the assignment (non-notebook files next to the trusted source,
    e.g. ``ddp_lenet.py`` beside ``05_multigpu.ipynb``) into the kernel's workdir. A student's own
    copies of them are never used."""
    Path(workdir).mkdir(parents=True, exist_ok=True)
    copied = []
    for path in sorted(Path(source).resolve().parent.iterdir()):
        if is_support_file(path):
            shutil.copyfile(path, Path(workdir) / path.name)
            copied.append(path.name)
    return copied


def _execute(nb, roles: list[Role], workdir: Path, limits: Limits, *, sandboxed: bool,
             record: bool) -> tuple[dict[int, CellRun], list[str]]:
    """Run every code cell of ``nb`` in order in one kernel; outputs go into ``nb``."""
    runs: dict[int, CellRun] = {}
    problems: list[str] = []
    count = 0
    try:
        kernel = Kernel(Path(workdir).resolve(), limits, sandboxed=sandboxed, record=record)
        kernel.__enter__()
    except Exception as exc:  # noqa: BLE001 - whatever stops the kernel, grading goes on
        problems.append(f"the kernel could not start: {exc}")
        for i, cell in enumerate(nb.cells):
            if cell.cell_type == "code":
                runs[i] = CellRun("not run", error=f"the kernel could not start ({exc})")
        return runs, problems
    budget_end = time.monotonic() + limits.notebook_timeout_s
    try:
        for i, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            left = budget_end - time.monotonic()
            if left <= 0:
                runs[i] = CellRun("not run", error="the notebook used up its total time limit "
                                  f"of {limits.notebook_timeout_s:g} s")
                continue
            run = kernel.run(cell.source, timeout=min(limits.cell_timeout_s, left))
            runs[i] = run
            if run.status != "not run":
                count += 1
                cell.execution_count = count
            cell.outputs = run.outputs
            label = roles[i].grade_id or f"cell {i + 1}"
            if run.status == "timeout" and left < limits.cell_timeout_s:
                problems.append(f"{label} timed out: the notebook used up its total time limit "
                                f"of {limits.notebook_timeout_s:g} s; later cells were not run")
            elif run.status == "timeout":
                problems.append(f"{label} timed out after {limits.cell_timeout_s:g} s")
                if not kernel.alive() and left >= limits.cell_timeout_s:
                    problems.append(_replay(kernel, nb, runs, i, label, budget_end))
            elif run.status == "crashed":
                problems.append(f"{label}: {run.error}; later cells were not run")
            if run.truncated:
                problems.append(f"{label} printed more than {limits.max_output_bytes} bytes; "
                                "its output was cut")
            if run.records and roles[i].kind in ("answer", "added"):
                problems.append(f"{label} (a student cell) emitted grading records; they were "
                                "ignored")
    finally:
        kernel.__exit__(None, None, None)
    return runs, problems


def _replay(kernel: Kernel, nb, runs: dict[int, CellRun], upto: int, label: str,
            budget_end: float) -> str:
    """After a cell ignored the interrupt and its kernel was killed: start a fresh kernel and
    run again, silently, every cell before it that had succeeded. Returns the problem to report."""
    try:
        kernel.restart()
    except Exception:  # noqa: BLE001
        return f"{label} ignored the interrupt; the kernel could not be restarted"
    for j in range(upto):
        left = min(kernel.limits.cell_timeout_s, budget_end - time.monotonic())
        if j in runs and runs[j].status == "ok" and (
                left <= 0 or kernel.run(nb.cells[j].source, timeout=left).status != "ok"):
            kernel.stop()
            kernel.dead_reason = (f"the kernel was restarted after {label} ignored the interrupt, "
                                  "but the cells before it did not run again")
            return kernel.dead_reason + "; later cells were not run"
    return (f"{label} ignored the interrupt: the kernel was restarted and the cells before it "
            "were run again")


def run_reference(source: Path, *, workdir: Path, limits: Limits = Limits(),
                  unsafe: bool = False) -> References:
    """Execute the instructor's source notebook and keep what each graded test cell recorded."""
    sandboxed = _require_sandbox(unsafe)
    _check_workdir(source, workdir)
    started = time.monotonic()
    nb = nbformat.read(str(source), as_version=4)
    roles = [Role("test" if is_test(c) else "trusted", nbgrader_meta(c).get("grade_id", ""))
             for c in nb.cells]
    _copy_support_files(source, workdir)
    runs, problems = _execute(nb, roles, workdir, limits, sandboxed=sandboxed, record=True)
    cells: dict[str, dict[str, dict]] = {}
    for i, role in enumerate(roles):
        if role.kind != "test":
            continue
        run = runs.get(i) or CellRun("not run")
        where = f"{Path(source).name}: graded test cell {role.grade_id!r}"
        if run.status != "ok":
            raise ReferenceRunError(f"{where} did not pass with the solution ({run.status}: "
                                    f"{run.error or 'see the notebook'}); fix the notebook")
        by_key, bad = collect([p for p, _ in run.records])
        if bad or not by_key:
            raise ReferenceRunError(f"{where} recorded no values; every graded test must call "
                                    "grader.record.record(key, value) on its hidden inputs")
        twice = [k for k, v in by_key.items() if len(v) > 1]
        if twice:
            raise ReferenceRunError(f"{where} recorded {twice[0]!r} more than once; use "
                                    "distinct keys")
        cells[role.grade_id] = {k: {"value": v[0]["value"], "rtol": float(v[0].get("rtol", 0)),
                                    "atol": float(v[0].get("atol", 0))}
                                for k, v in by_key.items()}
    return References(cells, sha256_of(source), round(time.monotonic() - started, 2))


def save_reference(source: Path, target: Path, *, limits: Limits = Limits(),
                   unsafe: bool = False) -> References:
    """:func:`run_reference` in a scratch folder of its own; the values are saved to ``target``."""
    with tempfile.TemporaryDirectory(prefix="reference-") as workdir:
        references = run_reference(Path(source), workdir=Path(workdir), limits=limits, unsafe=unsafe)
    references.save(Path(target))
    return references


def grade(source: Path, submission: Path | None, references: References, *, workdir: Path,
          limits: Limits = Limits(), unsafe: bool = False) -> NotebookResult:
    """Grade ``submission`` against the trusted ``source``; never raises for a bad submission."""
    sandboxed = _require_sandbox(unsafe)
    _check_workdir(source, workdir)
    trusted = nbformat.read(str(source), as_version=4)
    problems: list[str] = []
    if references.source_sha256 and references.source_sha256 != sha256_of(source):
        problems.append("the source notebook changed after the reference run; run it again")
    cells, why = read_submission(submission)
    merged: Merged = merge(trusted, cells)
    problems += merged.problems if cells is not None else []
    tests = {}
    if cells is None:
        problems.insert(0, why)
        for i, role in enumerate(merged.roles):
            if role.kind == "test":
                cell = merged.notebook.cells[i]
                tests[role.grade_id] = TestResult(role.grade_id, cell_points(cell), 0.0, "missing",
                                                  why[0].upper() + why[1:] + ".")
        return NotebookResult(tests, merged.notebook, problems)
    _copy_support_files(source, workdir)
    runs, run_problems = _execute(merged.notebook, merged.roles, workdir, limits,
                                  sandboxed=sandboxed, record=True)
    problems += run_problems
    for i, role in enumerate(merged.roles):
        if role.kind == "test":
            cell = merged.notebook.cells[i]
            tests[role.grade_id] = _verdict(role.grade_id, cell_points(cell), runs.get(i),
                                            references.cells.get(role.grade_id), problems)
    return NotebookResult(tests, merged.notebook, problems)


def _verdict(gid: str, points: float, run: CellRun | None, expected: dict | None,
             problems: list[str]) -> TestResult:
    def result(status: str, reason: str) -> TestResult:
        return TestResult(gid, points, points if status == "passed" else 0.0, status, reason)

    run = run or CellRun("not run")
    if expected is None:
        problems.append(f"no reference values for {gid!r}; run the reference again")
        return result("error", "This test could not be graded (no reference values).")
    if run.status == "timeout":
        return result("timeout", "The test did not finish within the time limit.")
    if run.status == "crashed":
        return result("crashed", f"The test could not finish: {run.error}.")
    if run.status == "not run":
        return result("not run", f"The test did not run: {run.error or 'the kernel had stopped'}.")
    if run.status == "error":
        return result("error", f"The test raised {_first_line(run.error)}.")
    ok, why = check_records(expected, [p for p, _ in run.records])
    if not ok:
        return result("failed", f"Wrong result: {why}.")
    return result("passed", "All checks passed.")


def _first_line(text: str, limit: int = 200) -> str:
    line = (text or "an error").strip().splitlines()[0] if (text or "").strip() else "an error"
    line = line.rstrip(": ") or "an error"  # "NotImplementedError: " (an empty message)
    return line if len(line) <= limit else line[: limit - 3] + "..."


def validate(notebook: Path, *, workdir: Path, limits: Limits = Limits()) -> list[TestResult]:
    """The student self-check: run ``notebook`` as it is; a test passes iff its cell ran cleanly.

    Runs without the sandbox (it is the student's own code on the student's machine). Raises
    ValueError when the notebook cannot be read.
    """
    cells, why = read_submission(notebook)
    if cells is None:
        raise ValueError(f"cannot validate: {why}")
    try:
        nb = nbformat.read(str(notebook), as_version=4)
    except Exception as exc:  # noqa: BLE001 - any damage: say so, in one sentence
        raise ValueError(f"cannot validate: the notebook could not be parsed ({exc})") from None
    roles = [Role("test" if is_test(c) else "trusted", nbgrader_meta(c).get("grade_id", ""))
             for c in nb.cells]
    runs, _ = _execute(nb, roles, workdir, limits, sandboxed=False, record=False)
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
        results.append(TestResult(role.grade_id, pts, pts if status == "passed" else 0.0,
                                  status, reason))
    return results
