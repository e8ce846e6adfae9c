"""The autograde driver: grade pending submissions through a runner, record them as they arrive.

Workers - local processes (``--workers N``) or a Dask cluster (``--scheduler``) - only execute
jobs (:mod:`grader.running.jobs`) and hand results back. Only this process writes (:mod:`grader.results.gradebook`):
the autograded notebook, the gradebook rows, and last the marker. So a batch killed at any moment
(even SIGKILL) restarts by grading only the submissions without an up-to-date marker, re-running is
idempotent, and ``force`` regrades everything.

A worker process that dies (killed from outside, out of memory) takes with it every job of the pool;
the pool is replaced and each of these jobs is graded again, alone. A job whose worker dies twice
fails: a submission scores 0 with the reason, saved like any result (so the next run does not start
with it again; ``--force --student`` grades it again), a reference run fails its assignment. The
batch goes on with the other submissions.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ..authoring.assembly import release
from ..authoring.coursedir import CourseDir
from ..engine.isolation.cleanup import remove_orphans
from ..engine.verdict.references import References
from ..engine.verdict.result import Outcome
from ..engine.verdict.seal import course_key
from ..errors import GraderError
from ..results.gradebook import outcomes as _outcomes, save_or_report, sync_semester
from ..results.late import semester_of
from .jobs import (GradeJob, NotebooksJob, ReferenceJob, TrustedNotebook, failed_result, merged_results, run_grade_job,
                   run_notebooks_job, run_notebooks_reference_job, run_reference_job)
from .pending import gradebook_scores, pending_submissions, reference_plan
from .runner import open_runner
from .schedule import GradingQueue, ReferenceRun, SubmissionRun

__all__ = ["ReferenceFailed", "NotGraded", "Outcomes", "autograde", "compute_references", "outcomes"]


class Outcomes(list):
    """The outcomes of the selected submissions (a list of Outcome); ``pending``: how many of them
    this run found to grade (0: nothing new, everything was graded before)."""

    def __init__(self, items=(), pending: int = 0):
        super().__init__(items)
        self.pending = pending


class ReferenceFailed(GraderError):
    """Some assignment's trusted solution failed its own tests; the rest of the batch was graded."""

    def __init__(self, message: str, outcomes: list[Outcome]):
        super().__init__(message)
        self.outcomes = outcomes  # of every selected submission that is graded


class NotGraded(ReferenceFailed):
    """Some submissions could not be graded where they were sent (e.g. a worker without bubblewrap);
    they stay pending, the rest of the batch was graded and saved."""


def outcomes(root: Path, names: list[str] | None = None, students: list[str] | None = None) -> list[Outcome]:
    """The recorded outcome of every graded submission (from the markers)."""
    return _outcomes(CourseDir(Path(root)), names, students)


def _require_submissions(course: CourseDir, students: list[str] | None) -> None:
    """Refuse, saying what to run, when there is nothing (or nothing of ``students``) to grade."""
    from ..authoring.invocation import command

    present = set(course.students())
    if not present:
        raise GraderError(f"nothing collected in {course.root / 'submitted'}: run `{command('collect INBOX', course.root)}` "
                          "first (INBOX holds one folder or zip per student, or is an nbgrader exchange)")
    unknown = sorted(set(students or []) - present)
    if unknown:
        raise GraderError(f"no submission collected for {', '.join(map(repr, unknown))} in "
                          f"{course.root / 'submitted'}; check the spelling, or collect their work first")


def autograde(root: Path, *, assignments: list[str] | None = None, students: list[str] | None = None,
              workers: int = 1, force: bool = False, limits=None, unsafe: bool = False,
              progress: bool = False, scheduler: str | None = None) -> Outcomes:
    """Grade every pending submission; return the outcomes of all selected submissions
    (``.pending``: how many were graded or tried in this run).

    scheduler: the address of a Dask scheduler (``tcp://host:8786``) to grade on its workers
    instead of ``workers`` local processes."""
    from nbgrader.api import Gradebook, MissingEntry

    from ..authoring.config import deduct_certain_findings, load_config, load_limits, nbgrader_api
    from ..engine.isolation.sandbox import SandboxUnavailable, sandbox_status

    course = CourseDir(Path(root)).resolved()
    names = assignments or course.assignments()
    limits = limits or load_limits(course.root)
    if not scheduler:  # a cluster's workers check for themselves, per submission
        isolated, why = sandbox_status()
        if not (isolated or unsafe):  # refuse early, with the reason, before any work
            raise SandboxUnavailable(f"cannot isolate student code: {why}. To grade without isolation anyway "
                                     "(only for code you trust), pass --unsafe.")
    _require_submissions(course, students)
    semester_of(course)  # a wrong semester file is said before any kernel runs
    api = nbgrader_api(course.root)  # also puts alembic on PATH
    db_url, course_id = api.coursedir.db_url, load_config(course.root).CourseDirectory.course_id
    with Gradebook(db_url, course_id) as gb:
        unreleased = []
        for name in names:
            try:
                gb.find_assignment(name)
            except MissingEntry:
                unreleased.append(name)
    if unreleased:
        release(course.root, unreleased)
    key = course_key(course.key)
    stale, seconds = reference_plan(course, names, key)
    with Gradebook(db_url, course_id) as gb:
        todo = pending_submissions(course, names, students, force, stale, gradebook_scores(gb))
    batch = _Batch(course, limits, unsafe, progress, key, deduct_certain_findings(course.root))
    if todo:
        with open_runner(workers=workers, scheduler=scheduler, sandboxed=not unsafe) as runner, \
                Gradebook(db_url, course_id) as gb:
            batch.run(runner, gb, todo, [a for a in stale if any(a == t for _, t in todo)], seconds)
    sync_semester(course)  # due dates, extensions, penalties: from timestamps and the semester file, no kernel rerun
    graded = Outcomes(_with_unsaved(_outcomes(course, names, students), batch.unsaved), pending=len(todo))
    if batch.failed:
        raise ReferenceFailed("; ".join(f"the reference run of {assignment} failed, so its submissions were not "
                                        f"graded (the other assignments were): {why}"
                                        for assignment, why in batch.failed.items()), graded)
    if batch.refused:
        raise NotGraded("not graded, left pending (run autograde again once fixed):\n" + "\n".join(
            f"  {student} / {assignment}: {why}" for (student, assignment), why in batch.refused.items()), graded)
    return graded


def compute_references(root: Path, *, assignments: list[str] | None = None, workers: int = 1, limits=None,
                       unsafe: bool = False) -> tuple[dict[str, float | None], dict[str, str]]:
    """Run each assignment's trusted solution whose sealed reference values are missing or older than its
    source, and seal them, as autograde would before grading the assignment's first submission. Returns
    ({assignment: seconds of kernel time, None where its values were already up to date}, {assignment whose
    reference run failed: why}).

    `course-grader release` calls this, so that grading starts at once when the submissions come and a
    solution that fails its own run is found before students start. Raises SandboxUnavailable (before any
    run) where kernels cannot be isolated and ``unsafe`` is not given."""
    from ..authoring.config import load_limits
    from ..engine.grade import REFUSED
    from ..engine.isolation.sandbox import SandboxUnavailable, sandbox_status

    course = CourseDir(Path(root)).resolved()
    names = assignments or course.assignments()
    if not unsafe:
        isolated, why = sandbox_status()
        if not isolated:
            raise SandboxUnavailable(f"cannot isolate the reference runs: {why}")
    key = course_key(course.key)
    stale, _ = reference_plan(course, names, key)
    batch = _Batch(course, limits or load_limits(course.root), unsafe, False, key)
    if stale:
        with open_runner(workers=workers, sandboxed=not unsafe) as runner:
            batch.run(runner, None, [], stale, {})
    _, seconds = reference_plan(course, stale, key)
    sealed = {name: (seconds[name] if name in stale else None) for name in names if name in seconds or name not in stale}
    failed = {name: why.replace(REFUSED, "").rstrip(". ") for name, why in batch.failed.items()}  # autograde's advice
    return sealed, failed


def _with_unsaved(results: list[Outcome], unsaved: list[Outcome]) -> list[Outcome]:
    """The saved outcomes, with those of this run's unsaved results in their place."""
    lost = {(o.student, o.assignment) for o in unsaved}
    return sorted([o for o in results if (o.student, o.assignment) not in lost] + unsaved,
                  key=lambda o: (o.student, o.assignment))


class _Batch:
    """One batch: reference runs first, each assignment's submissions as soon as its own reference
    is done (grader.running.schedule), every result saved the moment it arrives."""

    def __init__(self, course: CourseDir, limits, unsafe: bool, progress: bool, key: bytes, deduct: bool = False):
        self.course, self.limits, self.unsafe, self.progress, self.key = course, limits, unsafe, progress, key
        self.deduct = deduct  # the course's c.CourseGrader.deduct_certain_findings
        self.failed: dict[str, str] = {}                   # assignment -> why its reference failed
        self.refused: dict[tuple[str, str], str] = {}      # (student, assignment) -> why not graded
        self.trusted: dict[tuple[str, str], TrustedNotebook] = {}  # (assignment, notebook) -> its trusted material
        self.unsaved: list[Outcome] = []                   # results that could not be saved
        self.lost: set[ReferenceRun | SubmissionRun] = set()  # jobs whose worker died once already

    def _assignment(self, name: str, notebook: str | None = None) -> TrustedNotebook:
        key = (name, notebook or name)
        if key not in self.trusted:
            self.trusted[key] = TrustedNotebook.from_source(self.course.source_notebook(*key))
        return self.trusted[key]

    def _single(self, name: str) -> bool:
        """One notebook named as its assignment (a course built from course/*.ipynb): graded by a plain job;
        any other assignment (nbgrader's layout) by a :class:`NotebooksJob`."""
        return self.course.notebooks(name) == [name]

    def _failed(self, name: str, why: str) -> Outcome:
        """Every test of the assignment 0, ``why`` its problem (:func:`failed_result`, per notebook)."""
        if self._single(name):
            return failed_result(self._assignment(name), why)
        result = merged_results({nb: failed_result(self._assignment(name, nb), why) for nb in self.course.notebooks(name)})
        return replace(result, problems=[why] if why else [])

    def _grade_job(self, student: str, assignment: str, notebook: str) -> GradeJob:
        path = self.course.submitted_notebook(student, assignment, notebook)
        content = path.read_bytes() if path.is_file() else None
        missing = "" if content is not None else " ".join(self.course.rejections(student, assignment, notebook))
        references = References.load(self.course.references(assignment, notebook), self.key).to_dict()
        return GradeJob(self._assignment(assignment, notebook), content, references, self.limits, self.unsafe, missing,
                        self.deduct)

    def run(self, runner, gb, todo: list[tuple[str, str]], stale: list[str], seconds: dict[str, float]) -> None:
        remove_orphans()  # left by a grading process killed earlier (a batch killed, a worker lost)
        queue = GradingQueue(stale, todo, seconds)
        running: dict = {}  # future -> job
        alone: list[ReferenceRun | SubmissionRun] = []  # jobs lost with a dead worker: each graded again by itself
        bar = _progress(len(todo)) if self.progress else None
        try:
            while queue or running or alone:
                if alone and not running:
                    job = alone.pop(0)
                    running[self._start(runner, job)] = job
                while queue and not alone and len(running) < runner.slots():
                    job = queue.next()
                    running[self._start(runner, job)] = job
                if not running:
                    break  # nothing runs and nothing can start: only submissions of failed references
                done = runner.wait_any(set(running))
                lost = []
                for future in sorted(done, key=lambda f: f.exception() is not None):  # results first
                    job = running.pop(future)
                    if runner.lost(future):
                        lost.append(job)
                    else:
                        self._finish(runner, gb, queue, job, future, bar)
                if lost:  # the pool is broken: whatever still runs in it is lost as well
                    for future, job in running.items():
                        if future.done() and future.exception() is None:  # finished just in time
                            self._finish(runner, gb, queue, job, future, bar)
                        else:
                            lost.append(job)
                    running.clear()
                    runner.replace()
                    remove_orphans()  # the dead worker's kernel folders (it could not remove them)
                    alone += [job for job in lost if not self._lost_twice(gb, queue, job, bar)]
        finally:
            if bar:
                bar.close()

    def _lost_twice(self, gb, queue: GradingQueue, job: ReferenceRun | SubmissionRun, bar) -> bool:
        """Record that ``job``'s worker died; the second time the job fails (True), with the reason."""
        if job not in self.lost:
            self.lost.add(job)
            return False
        why = ("the grading worker process died twice while running it, the second time alone (killed "
               "from outside, or out of memory)")
        if isinstance(job, ReferenceRun):
            self.failed[job.assignment] = why
            queue.reference_failed(job.assignment)
        else:
            self._save(gb, job.student, job.assignment, self._failed(job.assignment, f"grading failed: {why}"), bar)
        return True

    def _start(self, runner, job: ReferenceRun | SubmissionRun):
        if isinstance(job, ReferenceRun):
            name = job.assignment
            if self._single(name):
                return runner.submit(run_reference_job, ReferenceJob(self._assignment(name), self.limits, self.unsafe))
            return runner.submit(run_notebooks_reference_job, NotebooksJob(tuple(
                (nb, ReferenceJob(self._assignment(name, nb), self.limits, self.unsafe))
                for nb in self.course.notebooks(name))))
        student, assignment = job.student, job.assignment
        jobs = tuple((nb, self._grade_job(student, assignment, nb)) for nb in self.course.notebooks(assignment))
        if self._single(assignment):
            return runner.submit(run_grade_job, jobs[0][1])
        return runner.submit(run_notebooks_job, NotebooksJob(jobs))

    def _finish(self, runner, gb, queue: GradingQueue, job: ReferenceRun | SubmissionRun, future, bar) -> None:
        from ..engine.isolation.sandbox import SandboxUnavailable

        if isinstance(job, ReferenceRun):
            try:
                result = runner.result(future)
                found = {job.assignment: References.from_dict(result)} if self._single(job.assignment) else \
                    {nb: References.from_dict(one) for nb, one in result.items()}
            except GraderError:
                raise
            except Exception as error:  # noqa: BLE001 - e.g. ReferenceRunError: say which, go on
                self.failed[job.assignment] = str(error)
                queue.reference_failed(job.assignment)
                return
            for notebook, references in found.items():
                path = self.course.references(job.assignment, notebook)
                path.parent.mkdir(parents=True, exist_ok=True)
                references.save(path, self.key)
            queue.reference_done(job.assignment, sum(references.seconds for references in found.values()))
            return
        student, assignment = job.student, job.assignment
        try:
            result = runner.result(future)
        except GraderError:
            raise
        except SandboxUnavailable as error:  # that worker cannot isolate: not a grade, leave it pending
            self.refused[(student, assignment)] = str(error)
            return
        except Exception as error:  # noqa: BLE001 - the engine itself failed: zero, with the reason
            result = self._failed(assignment, f"grading failed: {type(error).__name__}: {error}")
        self._save(gb, student, assignment, result, bar)

    def _save(self, gb, student: str, assignment: str, result: Outcome, bar) -> None:
        has_notebook = any(self.course.submitted_notebook(student, assignment, nb).exists()
                           for nb in self.course.notebooks(assignment))
        lost = save_or_report(self.course, gb, student, assignment, result,
                              self.course.rejections(student, assignment) if has_notebook else [],
                              self._failed(assignment, ""))
        if lost is not None:
            self.unsaved.append(lost)
        if bar:
            bar.set_postfix_str(f"{student} / {assignment}", refresh=False)
            bar.update()


def _progress(total: int):
    import sys

    from tqdm import tqdm

    return tqdm(total=total, desc="autograde", unit="submission", file=sys.stderr)
