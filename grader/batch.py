"""The autograde driver: grade submissions in parallel, record them in nbgrader's gradebook.

Workers (``--workers N`` processes) only execute: each calls :func:`grader.execute.grade` on one
submission and hands the result back. Only this parent process writes: the autograded notebook
(``autograded/<student>/<assignment>/``), the gradebook rows (one commit per submission), and
last a marker file ``course-grader.json`` saying which submission was graded against which
source. So a batch killed at any moment (even SIGKILL) restarts by grading only the submissions
without an up-to-date marker, re-running is idempotent, and ``force`` regrades everything.
"""
from __future__ import annotations

import json
import multiprocessing
import os
import sys
import tempfile
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import asdict, dataclass
from pathlib import Path

import nbformat

from .assembly import GraderError, release, source_notebook
from .assembly import assignments as course_assignments
from .collect import REJECTED_FILE, TIMESTAMP_FILE, timestamp_text
from .outputs import printable
from .references import References, sha256_of
from .schedule import GradingQueue

__all__ = ["MARKER", "Outcome", "ReferenceFailed", "autograde", "outcomes", "grade_table"]

MARKER = "course-grader.json"
ATTENTION = ("timeout", "crashed", "not run", "missing")  # beyond a wrong answer


@dataclass
class Outcome:
    student: str
    assignment: str
    score: float
    max_score: float
    tests: list[dict]       # TestResult fields, in notebook order
    problems: list[str]     # what needs the instructor's attention
    timestamp: str = ""
    source_sha256: str = ""


class ReferenceFailed(GraderError):
    """Some assignment's trusted solution failed its own tests; the rest of the batch was graded."""

    def __init__(self, message: str, outcomes: list[Outcome]):
        super().__init__(message)
        self.outcomes = outcomes  # of every selected submission that is graded


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


# -- worker side ------------------------------------------------------------------------------

def _share_cores(workers: int) -> None:
    """Runs in each worker process. Parallel kernels split the cores between them: left alone, each
    torch kernel would start one thread per core, and N kernels on N cores would fight over them.
    Kernels inherit these variables (see grader.sandbox); an instructor's own setting wins."""
    if workers > 1:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ.setdefault(name, str(max(1, cores // workers)))


def _reference_job(source: str, target: str, limits, unsafe: bool) -> float:
    """Run the trusted solution and save its reference values; returns how long it took."""
    from .execute import save_reference

    return save_reference(Path(source), Path(target), limits=limits, unsafe=unsafe).seconds


def _grade_job(source: str, submission: str | None, references: str, limits, unsafe: bool,
               missing: str = "") -> dict:
    from .execute import grade

    with tempfile.TemporaryDirectory(prefix="submission-") as workdir:
        result = grade(Path(source), Path(submission) if submission else None, References.load(Path(references)),
                       workdir=Path(workdir), limits=limits, unsafe=unsafe, missing=missing)
    return {"tests": [asdict(t) for t in result.tests.values()], "problems": list(result.problems),
            "notebook": nbformat.writes(result.notebook)}


# -- parent side ------------------------------------------------------------------------------

def _reference_plan(root: Path, names: list[str]) -> tuple[dict[str, Path], list[str], dict[str, float]]:
    """Each assignment's references file; the assignments whose file is missing or older than the
    source (their solution must run again); and how long each up-to-date reference run took."""
    paths, stale, seconds = {}, [], {}
    for assignment in names:
        path = root / "references" / f"{assignment}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        paths[assignment] = path
        try:
            cached = References.load(path)
        except (OSError, ValueError):
            cached = None
        if cached is not None and cached.source_sha256 == sha256_of(source_notebook(root, assignment)):
            seconds[assignment] = cached.seconds
        else:
            stale.append(assignment)
    return paths, stale, seconds


def _read_marker(folder: Path) -> dict | None:
    try:
        return json.loads((folder / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _pending(root: Path, names: list[str], students: list[str] | None, force: bool):
    """(student, assignment) pairs that have a submission and no up-to-date grade."""
    todo = []
    sources = {assignment: sha256_of(source_notebook(root, assignment)) for assignment in names}
    submitted = root / "submitted"
    for folder in sorted(submitted.iterdir()) if submitted.is_dir() else []:
        if not folder.is_dir() or (students and folder.name not in students):
            continue
        for assignment in names:
            sub = folder / assignment
            if not sub.is_dir():
                continue
            marker = _read_marker(root / "autograded" / folder.name / assignment)
            stamp = _timestamp(sub)
            current = marker is not None and marker.get("timestamp") == stamp and \
                marker.get("source_sha256") == sources[assignment]
            if force or not current:
                todo.append((folder.name, assignment))
    return todo


def _timestamp(submission: Path) -> str:
    try:
        return (submission / TIMESTAMP_FILE).read_text(encoding="utf-8").strip()
    except OSError:
        from datetime import datetime, timezone

        return timestamp_text(datetime.fromtimestamp(submission.stat().st_mtime, tz=timezone.utc))


def _save(root: Path, gb, student: str, assignment: str, result: dict, extra: list[str]) -> Outcome:
    """Write the autograded notebook, the gradebook rows (one commit), then the marker."""
    import warnings

    from nbgrader.api import MissingEntry
    from sqlalchemy.exc import SAWarning

    warnings.filterwarnings("ignore", category=SAWarning)  # nbgrader's add_submission autoflush chatter

    submitted, target = root / "submitted" / student / assignment, root / "autograded" / student / assignment
    target.mkdir(parents=True, exist_ok=True)
    (target / MARKER).unlink(missing_ok=True)
    stamp = _timestamp(submitted)
    (target / f"{assignment}.ipynb").write_text(result["notebook"], encoding="utf-8")
    (target / TIMESTAMP_FILE).write_text(stamp, encoding="utf-8")
    problems = extra + result["problems"]
    gb.update_or_create_student(student)
    gb.update_or_create_submission(assignment, student, timestamp=stamp)
    for test in result["tests"]:
        try:
            grade = gb.find_grade(test["grade_id"], assignment, assignment, student)
        except MissingEntry:
            problems.append(f"{test['grade_id']} is not in the gradebook; release {assignment} again")
            continue
        grade.auto_score = test["points"]
        grade.needs_manual_grade = False
    gb.db.commit()
    outcome = Outcome(student, assignment, sum(t["points"] for t in result["tests"]),
                      sum(t["max_points"] for t in result["tests"]), result["tests"], problems, stamp,
                      sha256_of(source_notebook(root, assignment)))
    _write_atomic(target / MARKER, json.dumps(asdict(outcome), indent=1))
    return outcome


def _save_or_report(root: Path, gb, student: str, assignment: str, result: dict, extra: list[str]) -> Outcome | None:
    """:func:`_save`; when that fails, undo its gradebook changes and return an outcome that says so
    (zero points, not saved: the next run grades the submission again). None when saved."""
    try:
        _save(root, gb, student, assignment, result, extra)
        return None
    except Exception as error:  # noqa: BLE001 - one submission's failure must not stop the batch
        gb.db.rollback()
        why = f"its result could not be saved ({type(error).__name__}: {error}); run autograde again"
        failed = _failed(root, assignment, why)
        return Outcome(student, assignment, 0.0, sum(t["max_points"] for t in failed["tests"]), failed["tests"],
                       extra + failed["problems"])


def autograde(root: Path, *, assignments: list[str] | None = None, students: list[str] | None = None,
              workers: int = 1, force: bool = False, limits=None, unsafe: bool = False,
              progress: bool = False) -> list[Outcome]:
    """Grade every pending submission; return the outcomes of all selected submissions."""
    from nbgrader.api import Gradebook, MissingEntry

    from .config import load_config, nbgrader_api
    from .sandbox import Limits, SandboxUnavailable, sandbox_status

    root = root.resolve()
    names = assignments or course_assignments(root)
    limits = limits or Limits()
    isolated, why = sandbox_status()
    if not (isolated or unsafe):  # refuse early, with the reason, before any work
        raise SandboxUnavailable(f"cannot isolate student code: {why}. To grade without isolation anyway "
                                 "(only for code you trust), pass --unsafe.")
    _require_submissions(root, students)
    api = nbgrader_api(root)  # also puts alembic on PATH
    db_url, course_id = api.coursedir.db_url, load_config(root).CourseDirectory.course_id
    with Gradebook(db_url, course_id) as gb:
        unreleased = []
        for name in names:
            try:
                gb.find_assignment(name)
            except MissingEntry:
                unreleased.append(name)
    if unreleased:
        release(root, unreleased)
    todo = _pending(root, names, students, force)
    unsaved: list[Outcome] = []
    failed = _run_batch(root, todo, workers=max(1, workers), limits=limits, unsafe=unsafe, progress=progress,
                        gradebook=lambda: Gradebook(db_url, course_id), unsaved=unsaved)
    results = _with_unsaved(outcomes(root, names, students), unsaved)
    if failed:
        raise ReferenceFailed("; ".join(f"the reference run of {assignment} failed, so its submissions were not "
                                        f"graded (the other assignments were): {why}"
                                        for assignment, why in failed.items()), results)
    return results


def _with_unsaved(results: list[Outcome], unsaved: list[Outcome]) -> list[Outcome]:
    """The saved outcomes, with those of this run's unsaved results in their place."""
    if not unsaved:
        return results
    lost = {(o.student, o.assignment) for o in unsaved}
    return sorted([o for o in results if (o.student, o.assignment) not in lost] + unsaved,
                  key=lambda o: (o.student, o.assignment))


def _require_submissions(root: Path, students: list[str] | None) -> None:
    """Refuse, saying what to run, when there is nothing (or nothing of ``students``) to grade."""
    from .invocation import command

    submitted = root / "submitted"
    present = {p.name for p in submitted.iterdir() if p.is_dir()} if submitted.is_dir() else set()
    if not present:
        raise GraderError(f"nothing collected in {submitted}: run `{command('collect INBOX')}` first "
                          "(INBOX holds one folder or zip per student, or is an nbgrader exchange)")
    unknown = sorted(set(students or []) - present)
    if unknown:
        raise GraderError(f"no submission collected for {', '.join(map(repr, unknown))} in {submitted}; "
                          "check the spelling, or collect their work first")


def _run_batch(root: Path, todo: list[tuple[str, str]], *, workers: int, limits, unsafe: bool, progress: bool,
               gradebook, unsaved: list[Outcome]) -> dict[str, str]:
    """Grade ``todo`` in ``workers`` processes, saving each result as it arrives; reference runs
    first, each assignment's submissions as soon as its own reference is done (grader.schedule).
    Returns {assignment: why} for the reference runs that failed; the outcomes of results that
    could not be saved are appended to ``unsaved``."""
    if not todo:
        return {}
    paths, stale, seconds = _reference_plan(root, sorted({a for _, a in todo}))
    queue = GradingQueue(stale, todo, seconds)
    failed: dict[str, str] = {}
    running: dict = {}  # future -> job, at most `workers` of them
    bar = _progress(len(todo)) if progress else None
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=_share_cores,
                             initargs=(workers,)) as pool, gradebook() as gb:

        def start(job: tuple[str, ...]):
            if job[0] == "reference":
                source = source_notebook(root, job[1])
                return pool.submit(_reference_job, str(source), str(paths[job[1]]), limits, unsafe)
            _, student, assignment = job
            sub = root / "submitted" / student / assignment / f"{assignment}.ipynb"
            rejected = _rejections(sub.parent)  # collect kept no notebook: its reason is the only one
            return pool.submit(_grade_job, str(source_notebook(root, assignment)), str(sub) if sub.exists() else None,
                               str(paths[assignment]), limits, unsafe, "" if sub.exists() else " ".join(rejected))

        def finish(job: tuple[str, ...], future) -> None:
            if job[0] == "reference":
                try:
                    queue.reference_done(job[1], future.result())
                except BrokenProcessPool:
                    raise
                except Exception as error:  # noqa: BLE001 - e.g. ReferenceRunError: say which, go on
                    failed[job[1]] = str(error)
                    queue.reference_failed(job[1])
                return
            _, student, assignment = job
            try:
                result = future.result()
            except BrokenProcessPool:
                raise
            except Exception as error:  # noqa: BLE001 - the engine itself failed: zero, with the reason
                result = _failed(root, assignment, f"grading failed: {type(error).__name__}: {error}")
            submission = root / "submitted" / student / assignment
            lost = _save_or_report(root, gb, student, assignment, result,
                                   _rejections(submission) if (submission / f"{assignment}.ipynb").exists() else [])
            if lost is not None:
                unsaved.append(lost)
            if bar:
                bar.set_postfix_str(f"{student} / {assignment}", refresh=False)
                bar.update()

        try:
            while queue or running:
                while queue and len(running) < workers:
                    job = queue.next()
                    running[start(job)] = job
                if not running:
                    break  # nothing runs and nothing can start: only submissions of failed references
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in sorted(done, key=lambda f: f.exception() is not None):  # results first
                    finish(running.pop(future), future)
        except BrokenProcessPool:  # a worker process died (not a kernel): what is pending stays pending
            raise GraderError("a grading worker process died (killed from outside, or out of memory); every "
                              "result that arrived is saved: run autograde again to grade the rest") from None
        finally:
            if bar:
                bar.close()
    return failed


def _progress(total: int):
    from tqdm import tqdm

    return tqdm(total=total, desc="autograde", unit="submission", file=sys.stderr)


def _rejections(submission: Path) -> list[str]:
    try:
        return [f"at collect: {why}" for why in json.loads((submission / REJECTED_FILE).read_text()).values()
                if isinstance(why, str)]
    except (OSError, ValueError):
        return []


def _failed(root: Path, assignment: str, why: str) -> dict:
    from .course import cell_points, is_test, nbgrader_meta, read_notebook

    nb = read_notebook(source_notebook(root, assignment))
    tests = [{"grade_id": nbgrader_meta(c)["grade_id"], "max_points": cell_points(c),
              "points": 0.0, "status": "error", "reason": "This submission could not be graded."}
             for c in nb.cells if is_test(c)]
    return {"tests": tests, "problems": [why], "notebook": nbformat.writes(nb)}


def outcomes(root: Path, names: list[str] | None = None, students: list[str] | None = None) -> list[Outcome]:
    """The recorded outcome of every graded submission (from the markers)."""
    found = []
    graded = root / "autograded"
    for folder in sorted(graded.iterdir()) if graded.is_dir() else []:
        if students and folder.name not in students:
            continue
        for assignment in names or sorted(p.name for p in folder.iterdir() if p.is_dir()):
            marker = _read_marker(folder / assignment)
            if marker:
                found.append(Outcome(**marker))
    return found


def grade_table(root: Path, results: list[Outcome], students: list[str] | None = None) -> str:
    """Student x assignment scores; then what needs attention, and each submission's failed tests.

    students: only these rows (``autograde --student``); by default everyone collected."""
    names = sorted({o.assignment for o in results}) or course_assignments(root)
    submitted = root / "submitted"
    folders = {p.name for p in submitted.iterdir() if p.is_dir()} if submitted.is_dir() else set()
    students = sorted(({o.student for o in results} | folders) & set(students)) if students else \
        sorted({o.student for o in results} | folders)
    by = {(o.student, o.assignment): o for o in results}
    width = max([len("student"), *(len(printable(s)) for s in students)])
    lines = ["student".ljust(width) + "".join(f"  {n:>14}" for n in names)]
    attention, failures = [], []
    for student in students:
        cells = []
        for name in names:
            o = by.get((student, name))
            cells.append(f"  {f'{o.score:g}/{o.max_score:g}' if o else '-':>14}")
            where = f"{student} / {name}"
            if o is None:
                attention.append(f"{where}: nothing submitted")
                continue
            reasons = list(o.problems) + [f"{t['grade_id']}: {t['status']} - {t['reason']}" for t in o.tests
                                          if t["status"] in ATTENTION and t["status"] != "missing"]
            attention += [f"{where}: {r}" for r in dict.fromkeys(reasons)]
            failures += _failures(where, o.tests)
        lines.append(printable(student).ljust(width) + "".join(cells))
    if attention:
        lines += ["", "needs attention:"] + [f"  {line}" for line in attention]
    if failures:
        lines += ["", "failed tests (reasons are in each student's feedback):"] + [f"  {line}" for line in failures]
    return "\n".join(map(printable, lines))  # student ids and reasons: no escape sequence reaches the terminal


def _failures(where: str, tests: list[dict]) -> list[str]:
    """One line per submission: stubs left as released are counted, other failures named."""
    failed = [t for t in tests if t["status"] in ("failed", "error")]
    untouched = [t for t in failed if "NotImplementedError" in t["reason"]]
    named = [f"{t['grade_id']} ({t['reason'][:90]})" for t in failed if t not in untouched]
    parts = named[:3] + ([f"{len(named) - 3} more"] if len(named) > 3 else [])
    if untouched:
        parts.append(f"{len(untouched)} not attempted")
    return [f"{where}: " + "; ".join(parts)] if parts else []
