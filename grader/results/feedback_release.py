"""Release feedback: each student's feedback page put into the course's nbgrader exchange, where the
Assignments tab of the student's JupyterLab ("Fetch Feedback") or ``nbgrader fetch_feedback`` finds it.

In:  ``feedback/<student>/<assignment>/<notebook>.html`` (``course-grader feedback``; one page per notebook) and the
     ``submission_secret.txt`` that collect kept from the student's ``nbgrader submit``.
Out: ``exchange/<course>/feedback/<md5(secret + notebook id)>.html``, written by nbgrader's own
     ``release_feedback`` (:meth:`NbGraderAPI.release_feedback`), one student at a time.

nbgrader names a released page by a hash of the secret that ``nbgrader submit`` wrote into the
submission and into the student's cache; the student's side recomputes it from the cache. So only a
submission collected from the exchange can be released there: one collected from an INBOX folder or
zip has no secret, and is listed as such (the student gets the page another way), never stopping
the others. A page is released only when it was generated from the submission collected now (the
feedback folder's ``timestamp.txt`` is the submission's), and each release is checked afterwards by
reading the file back where ``fetch_feedback`` will look for it.
"""
from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from ..authoring.coursedir import SECRET_FILE, TIMESTAMP_FILE, CourseDir
from ..authoring.invocation import command
from ..errors import GraderError

__all__ = ["Release", "release_feedback", "released_path", "release_notes"]

RELEASED, INBOX, MISSING, STALE, FAILED = "released", "not in the exchange", "no feedback", "outdated", "failed"


@dataclass
class Release:
    student: str
    assignment: str
    status: str   # one of RELEASED, INBOX, MISSING, STALE, FAILED
    detail: str   # what happened, and what to do when something is left to do

    @property
    def ok(self) -> bool:
        """Nothing left for the instructor to run (an inbox submission reaches the student another way)."""
        return self.status in (RELEASED, INBOX)


def released_path(root: Path, course_id: str, secret: str, notebook: str) -> Path:
    """Where nbgrader's exchange keeps the page released for the submission with ``secret``."""
    from nbgrader.utils import notebook_hash

    return Path(root) / course_id / "feedback" / f"{notebook_hash(secret=secret, notebook_id=notebook)}.html"


def release_feedback(root: Path, assignments: list[str] | None = None,
                     students: list[str] | None = None) -> list[Release]:
    """Release the generated feedback of every graded submission (of these assignments and students)."""
    from nbgrader.exchange.default import Exchange

    from ..authoring.config import nbgrader_api
    from .gradebook import outcomes

    course = CourseDir(Path(root).resolve())
    done = outcomes(course, assignments, students)
    if not done:
        raise GraderError(f"nothing graded yet in {course.root}; run `{command('autograde', course.root)}`, "
                          f"then `{command('feedback', course.root)}` first")
    api = nbgrader_api(course.root)
    exchange = Path(Exchange(config=api.config).root)  # c.Exchange.root of the course's nbgrader_config.py
    if not exchange.exists():  # a course folder copied without the exchange beside it: nbgrader needs one
        from ..authoring.assembly import EXCHANGE

        exchange.mkdir(parents=True)
        exchange.chmod(EXCHANGE)
    results = [_release_one(api, course, exchange, api.coursedir.course_id, o.student, o.assignment) for o in done]
    return sorted(results, key=lambda r: (r.assignment, r.student))


def _release_one(api, course: CourseDir, exchange: Path, course_id: str, student: str, assignment: str) -> Release:
    folder = course.feedback(student, assignment)
    pages = {name: folder / f"{name}.html" for name in course.notebooks(assignment) or [assignment]}  # one a notebook
    if not all(page.is_file() for page in pages.values()):
        return Release(student, assignment, MISSING, "")  # the command to run: release_notes, once
    try:
        secret = (course.submission(student, assignment) / SECRET_FILE).read_text(encoding="ascii").strip()
    except OSError:
        secret = ""
    if not secret:
        return Release(student, assignment, INBOX, ", ".join(map(str, pages.values())))
    generated = _read(folder / TIMESTAMP_FILE)
    if generated != course.timestamp(student, assignment):
        return Release(student, assignment, STALE, f"the feedback is of the submission of {generated or 'unknown'}, "
                       f"not of the one collected now ({course.timestamp(student, assignment)}); run "
                       f"`{command(f'autograde {assignment}', course.root)}` and "
                       f"`{command(f'feedback {assignment}', course.root)}`, then release again")
    shutil.copyfile(course.submission(student, assignment) / SECRET_FILE, folder / SECRET_FILE)
    result = api.release_feedback(assignment, student)
    targets = {name: released_path(exchange, course_id, secret, name) for name in pages}
    wrong = [t for name, t in targets.items() if not t.is_file() or t.read_bytes() != pages[name].read_bytes()]
    if not result.get("success") or wrong:
        target = (wrong or list(targets.values()))[0]
        said = ((result.get("error") or "") + (result.get("log") or ""))[-1500:]
        return Release(student, assignment, FAILED, f"nbgrader's release_feedback did not put the page at {target}"
                       + (f":\n{said}" if said else ""))
    return Release(student, assignment, RELEASED, "")


def release_notes(root: Path, results: list[Release]) -> list[str]:
    """What the results of one kind have in common, said once after their lines (not once per page)."""
    course = CourseDir(Path(root))
    by = {status: sorted({r.assignment for r in results if r.status == status}) for status in (RELEASED, INBOX, MISSING)}
    notes = []
    if by[RELEASED]:
        notes.append("released: each student finds the page in JupyterLab, Nbgrader > Assignment List, Fetch Feedback")
    if by[INBOX]:
        notes.append("not in the exchange: these were collected from an inbox folder or zip, without the submission "
                     "secret that nbgrader's Fetch Feedback needs; give each student the page listed another way "
                     "(e-mail, LMS)")
    if by[MISSING]:
        notes.append(f"no feedback generated yet: run `{command('feedback ' + ' '.join(by[MISSING]), course.root)}`, "
                     "then release again")
    return notes


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8").strip()
    except OSError:
        return ""
