"""Collect: import students' notebooks into nbgrader's ``submitted/<student>/<assignment>/``.

An inbox holds, per student, a folder or a ``.zip`` named by the student id, with the assignment
notebooks anywhere inside; or it is an nbgrader exchange (``<course>/inbound/<student>+<assignment>+
<timestamp>...``, see :mod:`grader.intake.exchange`). A notebook is matched by its file name
(``01_tensors.ipynb``; ``problem1.ipynb`` of an assignment of several notebooks, nbgrader's layout), or,
when renamed, by the nbgrader cell ids it shares with exactly one notebook of the course. The notebooks of
one assignment are stored together, as one submission.

Uploads are untrusted. They are read without following symbolic links (:mod:`grader.intake.uploads`),
zips within size limits (:mod:`grader.intake.zips`); two uploads naming the same student (``bob/`` and
``bob.zip``, ``Bob``) are both refused. Whatever is refused is listed in the report with what to
do, and never stops the others or touches what an earlier collect stored. An unreadable notebook
is stored as a record of why (``rejected.json``) so that autograde can say so for that student.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import partial
from pathlib import Path
from typing import Callable

import nbformat

from ..authoring.assembly import assignments
from ..authoring.coursedir import REJECTED_FILE, SECRET_FILE, TIMESTAMP_FILE, CourseDir, timestamp_text
from ..engine.notebook.cells import nbgrader_meta
from ..errors import GraderError
from .exchange import read_timestamp, submissions
from .uploads import (LINK_ADVICE, Notebook, Rejected, check_student_id, collisions, identity, open_file,
                      open_folder, read_notebooks)
from .zips import ZipLimits, read_zip

__all__ = ["Imported", "Rejected", "CollectReport", "check_student_id", "collect", "REJECTED_FILE",
           "TIMESTAMP_FILE", "timestamp_text", "INBOX_LAYOUT"]

INBOX_LAYOUT = ("one entry per student: a folder INBOX/<student>/ with <assignment>.ipynb anywhere inside "
                "(e.g. INBOX/ann/01_tensors.ipynb), or a zip INBOX/<student>.zip; or an nbgrader exchange "
                "(INBOX/inbound/<student>+<assignment>+<timestamp>/, or INBOX/<course>/inbound/...)")


@dataclass
class Imported:
    student: str
    assignment: str
    timestamp: str
    where: str = ""      # the notebook in the inbox, as the instructor sees it
    rejected: str = ""   # why it is unreadable: stored as a record of why (rejected.json), not graded
    replaced: str = ""   # the earlier submission it replaced, moved to this path (under ROOT)
    by_cells: list[tuple[str, str]] = field(default_factory=list)  # (upload path, notebook): renamed, matched by cells


@dataclass
class CollectReport:
    imported: list[Imported] = field(default_factory=list)   # stored: readable, or a record of why not (.rejected)
    rejected: list[Rejected] = field(default_factory=list)   # every upload or file refused
    unchanged: list[Imported] = field(default_factory=list)  # the same notebook as already collected
    ignored: list[str] = field(default_factory=list)   # files of a student folder that are no notebook, not collected
    loose: list[str] = field(default_factory=list)     # notebooks lying in the inbox itself, not in a student's entry

    @property
    def accepted(self) -> list[Imported]:
        return [item for item in self.imported if not item.rejected]


def collect(root: Path, inbox: Path, selected: list[str] | None = None, *, check_owner: bool = True,
            zip_limits: ZipLimits = ZipLimits()) -> CollectReport:
    """Import every student's notebooks from ``inbox``; return what was imported and rejected.

    check_owner: in an nbgrader exchange, count a submission only if its folder belongs to the
        user it names (nbgrader's ``ExchangeCollect.check_owner``); turn off only for an exchange
        copied without its owners.
    zip_limits: how large a student's zip may unpack (:class:`grader.intake.zips.ZipLimits`).
    """
    if not inbox.is_dir():
        raise GraderError(f"inbox {inbox} is not a folder; expected {INBOX_LAYOUT}")
    course = CourseDir(root)
    known = {(a, nb): _grade_ids(course.source_notebook(a, nb).read_bytes())
             for a in (selected or assignments(root)) for nb in course.notebooks(a)}
    report = CollectReport()
    inbound = next((p for p in [inbox / "inbound", *inbox.glob("*/inbound")] if p.is_dir()), None)
    if inbound is not None:
        found, report.rejected = submissions(inbound, {a for a, _ in known}, check_owner)
        for sub in found:
            upload = sub.folder.name
            notebooks = _guarded(report, upload, partial(_read_folder, sub.folder, upload))
            when = {sub.assignment: sub.when}
            _import(root, sub.student, notebooks, {k: v for k, v in known.items() if k[0] == sub.assignment}, when,
                    report, upload, sub.secret)
        return report
    uploads = _uploads(inbox, report, zip_limits)
    clashes = collisions({where: student for where, (student, _) in uploads.items()})
    for where, (student, read) in sorted(uploads.items()):
        if where in clashes:
            others = ", ".join(repr(o) for o in clashes[where])
            report.rejected.append(Rejected(where, f"{where} names the same student as {others} (ids differing only "
                                            "in spaces, unicode form or case); none of them was collected: keep "
                                            "one upload per student and collect again"))
            continue
        _import(root, student, _guarded(report, where, read), known, {}, report, where)
    _carry_clashes(root, {where: uploads[where] for where in clashes}, known, report)
    return report


def _carry_clashes(root: Path, clashing: dict[str, tuple[str, Callable]], known: dict[tuple[str, str], set[str]],
                   report: CollectReport) -> None:
    """Uploads refused because their ids name one student (``bob/``, ``Bob/``, ``bob.zip``) are carried as an
    unreadable upload is: a record of why (``rejected.json``, no notebook) for each assignment they hold, so that
    the grade table, "needs attention", the counts and the export name that student. Stored under the id the
    course already has for that person (else the first of the ids); an earlier collect's submission is kept."""
    groups: dict[str, list[str]] = {}
    for where, (student, _) in clashing.items():
        groups.setdefault(identity(student), []).append(where)
    course = CourseDir(root)
    for person, wheres in sorted(groups.items()):
        ids = sorted({clashing[where][0] for where in wheres})
        student = next((s for s in course.students() if identity(s) == person), ids[0])
        held: set[str] = set()
        for where in wheres:  # which assignments they hold, read as a collect would (nothing of it is stored)
            scratch = CollectReport()
            held |= {assignment for assignment, _ in _match(_guarded(scratch, where, clashing[where][1]), known, scratch)}
        why = (f"the uploads {', '.join(sorted(wheres))} all name this student (ids differing only in spaces, "
               "unicode form or case), so none was collected; keep one upload per student and collect again")
        for assignment in sorted(held):
            if course.submission(student, assignment).exists():
                continue  # what an earlier collect stored stays as it was
            names = sorted({notebook for a, notebook in known if a == assignment})
            _store_refusal(root, student, assignment, {f"{name}.ipynb": why for name in names})
            report.imported.append(Imported(student, assignment, course.timestamp(student, assignment),
                                            ", ".join(sorted(wheres)), why))


def _store_refusal(root: Path, student: str, assignment: str, refused: dict[str, str]) -> None:
    """``submitted/<student>/<assignment>/`` holding only a timestamp and the record of why (no notebook)."""
    parent = CourseDir(root).submission(student, assignment).parent
    parent.mkdir(parents=True, exist_ok=True)
    fresh = Path(tempfile.mkdtemp(prefix=f".{assignment}.incoming-", dir=parent))
    (fresh / TIMESTAMP_FILE).write_text(timestamp_text(datetime.now(timezone.utc)), encoding="utf-8")
    (fresh / REJECTED_FILE).write_text(json.dumps(refused), encoding="utf-8")
    fresh.chmod(0o755)
    os.replace(fresh, parent / assignment)


def _uploads(inbox: Path, report: CollectReport, zip_limits: ZipLimits) -> dict[str, tuple[str, Callable]]:
    """Inbox entry name -> (the student id it names, how to read it); odd entries are rejected."""
    found = {}
    for entry in sorted(os.scandir(inbox), key=lambda e: e.name):
        if entry.name.startswith("."):
            continue
        path, where = Path(entry.path), entry.name
        if entry.is_symlink():
            report.rejected.append(Rejected(where, f"{where} {LINK_ADVICE}"))
            continue
        if entry.is_dir(follow_symlinks=False):
            raw, read = where, partial(_read_folder, path, where, report.ignored)
        elif where.endswith(".zip") and entry.is_file(follow_symlinks=False):
            raw, read = where[:-len(".zip")], partial(_read_zip, path, where, zip_limits)
        elif where.endswith(".ipynb"):  # one student's folder, or an LMS export's loose files (ann_01_tensors.ipynb)
            report.loose.append(where)
            report.rejected.append(Rejected(where, f"{where} is a notebook lying in the inbox itself: collect reads "
                                            "one folder or zip per student, named by the student id"))
            continue
        else:
            report.rejected.append(Rejected(where, f"{where} is neither a student folder nor a .zip"))
            continue
        try:
            found[where] = (check_student_id(raw), read)
        except GraderError as error:
            report.rejected.append(Rejected(where, str(error)))
    return found


def _guarded(report: CollectReport, where: str, read) -> list[Notebook]:
    """Run ``read`` (-> notebooks, refused); a failure refuses this upload only, never the class."""
    try:
        notebooks, refused = read()
    except GraderError as error:
        report.rejected.append(Rejected(where, f"{where} {error}"))
        return []
    except Exception as error:  # noqa: BLE001 - one strange upload must not stop collecting the others
        report.rejected.append(Rejected(where, f"{where} could not be read ({type(error).__name__}: {error}); "
                                        "ask for it again"))
        return []
    report.rejected += refused
    return notebooks


def _read_folder(folder: Path, where: str, ignored: list[str] | None = None):
    fd = open_folder(folder)
    try:
        return read_notebooks(fd, where, ignored)
    finally:
        os.close(fd)


def _read_zip(archive: Path, where: str, limits: ZipLimits):
    with os.fdopen(open_file(archive), "rb") as file:
        return read_zip(file, where, limits)


def _grade_ids(data: bytes) -> set[str]:
    try:
        nb = nbformat.reads(data.decode("utf-8"), as_version=4)
    except Exception:
        return set()
    return {nbgrader_meta(c).get("grade_id") for c in nb.cells if nbgrader_meta(c).get("grade_id")}


def _match(notebooks: list[Notebook], known: dict[tuple[str, str], set[str]],
           report: CollectReport) -> dict[tuple[str, str], Notebook]:
    """(assignment, notebook) -> the upload's notebook: by file name first (when one assignment has a notebook of
    that name), then by shared grade_ids (renamed files, or a name two assignments share)."""
    found: dict[tuple[str, str], Notebook] = {}
    unknown = []
    for notebook in notebooks:
        named = [slot for slot in known if slot[1] == Path(notebook.name).stem and slot not in found]
        if len(named) == 1:
            found[named[0]] = notebook
        else:
            unknown.append(notebook)
    for notebook in unknown:
        ids = _grade_ids(notebook.data)
        candidates = [slot for slot, slot_ids in known.items() if ids & slot_ids and slot not in found]
        if len(candidates) == 1:
            found[candidates[0]] = notebook
        else:
            expected = ", ".join(sorted({f"{nb}.ipynb" for _, nb in known}))
            report.rejected.append(Rejected(notebook.where, "not recognised as any assignment notebook "
                                            f"(expected one of: {expected})"))
    return found


def _import(root: Path, student: str, notebooks: list[Notebook], known: dict[tuple[str, str], set[str]],
            when: dict[str, datetime], report: CollectReport, where: str, secret: str = "") -> None:
    """Store the matched notebooks of each assignment together, dated by ``when``, else a timestamp.txt beside
    them, else the latest file's mtime; ``secret``: the exchange submission's, kept beside it (feedback is
    released under it)."""
    now = datetime.now(timezone.utc)
    by_assignment: dict[str, dict[str, Notebook]] = {}
    for (assignment, name), notebook in sorted(_match(notebooks, known, report).items()):
        by_assignment.setdefault(assignment, {})[name] = notebook
    for assignment, found in by_assignment.items():
        moment = when.get(assignment)
        stamped = next((nb for nb in found.values() if nb.stamp is not None), None)
        if moment is None and stamped is not None:
            try:
                moment = read_timestamp(stamped.stamp.decode("utf-8", "replace").strip(), now)
            except GraderError as error:
                report.rejected.append(Rejected(stamped.where, f"{stamped.name}: its {TIMESTAMP_FILE} {error}"))
                continue
        moment = moment or datetime.fromtimestamp(max(nb.mtime for nb in found.values()), tz=timezone.utc)
        wheres = ", ".join(nb.where for nb in found.values())
        if _unchanged(root, student, assignment, found):  # keeps its first timestamp (and its grade)
            report.unchanged.append(Imported(student, assignment, CourseDir(root).timestamp(student, assignment),
                                             wheres, by_cells=_by_cells(found)))
            continue
        _store(root, student, assignment, found, moment, report, secret)
        report.imported[-1].by_cells = _by_cells(found)


def _by_cells(found: dict[str, Notebook]) -> list[tuple[str, str]]:
    """(upload path, notebook) of each notebook of ``found`` stored under another name than its own: recognised
    by its cells."""
    return [(nb.where, name) for name, nb in found.items() if Path(nb.name).stem != name]


def _store(root: Path, student: str, assignment: str, found: dict[str, Notebook], when: datetime,
           report: CollectReport, secret: str = "") -> None:
    """Write ``submitted/<student>/<assignment>/`` (``found``: notebook name -> the upload's notebook) in a fresh
    folder, then swap it in: never half-written."""
    parent = CourseDir(root).submission(student, assignment).parent
    parent.mkdir(parents=True, exist_ok=True)
    fresh = Path(tempfile.mkdtemp(prefix=f".{assignment}.incoming-", dir=parent))
    (fresh / TIMESTAMP_FILE).write_text(timestamp_text(when), encoding="utf-8")
    if secret:
        (fresh / SECRET_FILE).write_text(secret, encoding="ascii")
    refused = {}
    for name, notebook in found.items():
        try:
            nbformat.reads(notebook.data.decode("utf-8"), as_version=4)
        except Exception as error:
            refused[f"{name}.ipynb"] = why = (
                f"{notebook.name} is not a readable notebook (damaged or not notebook JSON: "
                f"{type(error).__name__}); it must be submitted again, downloaded from JupyterLab (File > Download)")
            report.rejected.append(Rejected(notebook.where, why))  # refused; rejected.json tells autograde why
        else:
            (fresh / f"{name}.ipynb").write_bytes(notebook.data)
    if refused:
        (fresh / REJECTED_FILE).write_text(json.dumps(refused), encoding="utf-8")
    rejected = " ".join(refused.values())
    fresh.chmod(0o755)
    target = parent / assignment
    replaced = ""
    if target.exists():
        kept = _keep_replaced(root, student, assignment) if any(target.glob("*.ipynb")) else None
        old = Path(tempfile.mkdtemp(prefix=f".{assignment}.replaced-", dir=parent))
        os.replace(target, old / assignment)
        os.replace(fresh, target)
        if kept is not None:
            os.replace(old / assignment, kept)
            replaced = str(kept.relative_to(root))
        shutil.rmtree(old)
    else:
        os.replace(fresh, target)
    report.imported.append(Imported(student, assignment, timestamp_text(when),
                                    ", ".join(nb.where for nb in found.values()), rejected, replaced))


def _unchanged(root: Path, student: str, assignment: str, found: dict[str, Notebook]) -> bool:
    """Whether the collected notebooks of ``student``'s assignment are exactly these, with exactly these bytes."""
    folder = CourseDir(root).submission(student, assignment)
    try:
        return sorted(p.stem for p in folder.glob("*.ipynb")) == sorted(found) and \
            all(CourseDir(root).submitted_notebook(student, assignment, name).read_bytes() == nb.data
                for name, nb in found.items())
    except OSError:
        return False


def _keep_replaced(root: Path, student: str, assignment: str) -> Path:
    """A new path ``replaced/<student>/<assignment>/<its timestamp>`` for a submission about to be replaced."""
    stamp = "".join(c if c.isalnum() or c in "-." else "-" for c in CourseDir(root).timestamp(student, assignment))
    folder = CourseDir(root).replaced(student, assignment)
    folder.mkdir(parents=True, exist_ok=True)
    path, n = folder / stamp, 1
    while path.exists():
        n += 1
        path = folder / f"{stamp}-{n}"
    return path
