"""The autograde driver: grade submissions in parallel, record them in nbgrader's gradebook.

Workers (``--workers N`` processes) only execute: each calls :func:`grader.execute.grade` on one
submission and hands the result back. Only this parent process writes: the autograded notebook
(``autograded/<student>/<assignment>/``), the gradebook rows (one commit per submission), and
last a marker file ``course-grader.json`` saying which submission was graded against which
source. So a batch killed at any moment (even SIGKILL) restarts by grading only the submissions
without an up-to-date marker, re-running is idempotent, and ``force`` regrades everything.
"""
from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import shutil
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict, dataclass
from pathlib import Path

import nbformat

from .assembly import GraderError, release, source_notebook
from .assembly import assignments as course_assignments
from .collect import REJECTED_FILE, TIMESTAMP_FILE, timestamp_text

__all__ = ["MARKER", "Outcome", "autograde", "outcomes", "grade_table"]

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


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


# -- worker side ------------------------------------------------------------------------------

def _reference_job(source: str, target: str, limits, unsafe: bool) -> None:
    from .execute import run_reference

    with tempfile.TemporaryDirectory(prefix="reference-") as workdir:
        run_reference(Path(source), workdir=Path(workdir), limits=limits, unsafe=unsafe).save(Path(target))


def _grade_job(source: str, submission: str | None, references: str, limits, unsafe: bool) -> dict:
    from .execute import References, grade

    with tempfile.TemporaryDirectory(prefix="submission-") as workdir:
        result = grade(Path(source), Path(submission) if submission else None, References.load(Path(references)),
                       workdir=Path(workdir), limits=limits, unsafe=unsafe)
    return {"tests": [asdict(t) for t in result.tests.values()], "problems": list(result.problems),
            "notebook": nbformat.writes(result.notebook)}


# -- parent side ------------------------------------------------------------------------------

def _references(root: Path, names: list[str], pool, limits, unsafe: bool) -> dict[str, Path]:
    """Path of each assignment's reference values, re-running the solution where the source changed."""
    from .execute import References

    paths, jobs = {}, {}
    for assignment in names:
        source = source_notebook(root, assignment)
        path = root / "references" / f"{assignment}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        paths[assignment] = path
        try:
            fresh = References.load(path).source_sha256 == _sha256(source)
        except (OSError, ValueError):
            fresh = False
        if not fresh:
            jobs[assignment] = pool.submit(_reference_job, str(source), str(path), limits, unsafe)
    for assignment, job in jobs.items():
        try:
            job.result()
        except Exception as error:
            raise GraderError(f"the reference run of {assignment} failed, so nothing can be graded against it: "
                              f"{error}") from error
    return paths


def _read_marker(folder: Path) -> dict | None:
    try:
        return json.loads((folder / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _pending(root: Path, names: list[str], students: list[str] | None, force: bool):
    """(student, assignment) pairs that have a submission and no up-to-date grade."""
    todo = []
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
                marker.get("source_sha256") == _sha256(source_notebook(root, assignment))
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
                      _sha256(source_notebook(root, assignment)))
    _write_atomic(target / MARKER, json.dumps(asdict(outcome), indent=1, ensure_ascii=False))
    return outcome


def autograde(root: Path, *, assignments: list[str] | None = None, students: list[str] | None = None,
              workers: int = 1, force: bool = False, limits=None, unsafe: bool = False,
              progress: bool = False) -> list[Outcome]:
    """Grade every pending submission; return the outcomes of all selected submissions."""
    from nbgrader.api import Gradebook, MissingEntry

    from .config import load_config, nbgrader_api
    from .execute import Limits, SandboxUnavailable, sandbox_status

    root = root.resolve()
    names = assignments or course_assignments(root)
    limits = limits or Limits()
    isolated, why = sandbox_status()
    if not (isolated or unsafe):  # refuse early, with the reason, before any work
        raise SandboxUnavailable(f"cannot isolate student code: {why}. To grade without isolation anyway "
                                 "(only for code you trust), pass --unsafe.")
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
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=max(1, workers), mp_context=context) as pool:
        refs = _references(root, sorted({a for _, a in todo}), pool, limits, unsafe) if todo else {}
        jobs = {}
        for student, assignment in todo:
            sub = root / "submitted" / student / assignment / f"{assignment}.ipynb"
            jobs[pool.submit(_grade_job, str(source_notebook(root, assignment)), str(sub) if sub.exists() else None,
                             str(refs[assignment]), limits, unsafe)] = (student, assignment)
        bar = _progress(len(jobs)) if progress and jobs else None
        with Gradebook(db_url, course_id) as gb:
            for job in as_completed(jobs):
                student, assignment = jobs[job]
                extra = _rejections(root / "submitted" / student / assignment)
                try:
                    result = job.result()
                except Exception as error:  # the engine itself failed: record zero with the reason
                    result = _failed(root, assignment, f"grading failed: {type(error).__name__}: {error}")
                _save(root, gb, student, assignment, result, extra)
                if bar:
                    bar.set_postfix_str(f"{student} / {assignment}", refresh=False)
                    bar.update()
        if bar:
            bar.close()
    return outcomes(root, names, students)


def _progress(total: int):
    from tqdm import tqdm

    return tqdm(total=total, desc="autograde", unit="submission", file=sys.stderr)


def _rejections(submission: Path) -> list[str]:
    try:
        return [f"at collect: {why}" for why in json.loads((submission / REJECTED_FILE).read_text()).values()]
    except (OSError, ValueError):
        return []


def _failed(root: Path, assignment: str, why: str) -> dict:
    from .course import is_test, nbgrader_meta, read_notebook

    nb = read_notebook(source_notebook(root, assignment))
    tests = [{"grade_id": nbgrader_meta(c)["grade_id"], "max_points": float(nbgrader_meta(c).get("points", 0)),
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


def grade_table(root: Path, results: list[Outcome]) -> str:
    """Student x assignment scores; then what needs attention, and each submission's failed tests."""
    names = sorted({o.assignment for o in results}) or course_assignments(root)
    submitted = root / "submitted"
    folders = {p.name for p in submitted.iterdir() if p.is_dir()} if submitted.is_dir() else set()
    students = sorted({o.student for o in results} | folders)
    by = {(o.student, o.assignment): o for o in results}
    width = max([len("student"), *map(len, students)])
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
        lines.append(student.ljust(width) + "".join(cells))
    if attention:
        lines += ["", "needs attention:"] + [f"  {line}" for line in attention]
    if failures:
        lines += ["", "failed tests (reasons are in each student's feedback):"] + [f"  {line}" for line in failures]
    return "\n".join(lines)


def _failures(where: str, tests: list[dict]) -> list[str]:
    """One line per submission: stubs left as released are counted, other failures named."""
    failed = [t for t in tests if t["status"] in ("failed", "error")]
    untouched = [t for t in failed if "NotImplementedError" in t["reason"]]
    named = [f"{t['grade_id']} ({t['reason'][:90]})" for t in failed if t not in untouched]
    parts = named[:3] + ([f"{len(named) - 3} more"] if len(named) > 3 else [])
    if untouched:
        parts.append(f"{len(untouched)} not attempted")
    return [f"{where}: " + "; ".join(parts)] if parts else []
