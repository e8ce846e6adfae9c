"""Collect: import students' notebooks into nbgrader's ``submitted/<student>/<assignment>/``.

An inbox holds, per student, a folder or a ``.zip`` named by the student id, with the assignment
notebooks anywhere inside; or it is an nbgrader exchange (``<course>/inbound/<student>+<assignment>+
<timestamp>...``). A notebook is matched by its file name (``01_tensors.ipynb``), or, when renamed,
by the nbgrader cell ids it shares with exactly one assignment. Unreadable files are rejected and
reported; the submission folder then records why (``rejected.json``) so autograde can say so.
"""
from __future__ import annotations

import json
import shutil
import tempfile
import unicodedata
import zipfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import nbformat

from .assembly import GraderError, assignments
from .coursedir import CourseDir
from .course import nbgrader_meta

__all__ = ["Imported", "Rejected", "CollectReport", "check_student_id", "collect", "REJECTED_FILE",
           "TIMESTAMP_FILE", "timestamp_text"]

REJECTED_FILE = "rejected.json"
TIMESTAMP_FILE = "timestamp.txt"
FORBIDDEN = set('/\\*?[]:"<>|') | {chr(c) for c in range(32)} | {"\x7f"}


@dataclass
class Imported:
    student: str
    assignment: str
    timestamp: str


@dataclass
class Rejected:
    where: str
    reason: str


@dataclass
class CollectReport:
    imported: list[Imported] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)


def check_student_id(raw: str) -> str:
    """The id, NFC-normalised; raises GraderError for ids that could escape the course directory."""
    student = unicodedata.normalize("NFC", raw).strip()
    if not student or student in (".", "..") or student.startswith(".") or FORBIDDEN & set(student) \
            or ".." in student or len(student) > 200:
        raise GraderError(f"refusing student id {raw!r}: ids may not be empty, start with '.', contain '..', "
                          "path separators, wildcards or control characters; rename the folder or zip")
    return student


def timestamp_text(when: datetime) -> str:
    """nbgrader's timestamp.txt format."""
    return when.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f %Z")


def _mtime(path: Path) -> datetime:
    return datetime.fromtimestamp(path.stat().st_mtime, tz=timezone.utc)


def _safe_extract(archive: Path, target: Path) -> None:
    with zipfile.ZipFile(archive) as zf:
        for member in zf.infolist():
            name = Path(member.filename)
            if name.is_absolute() or ".." in name.parts:
                raise GraderError(f"{archive.name}: refusing archive member {member.filename!r} outside the archive")
        zf.extractall(target)


def _grade_ids(path: Path) -> set[str]:
    try:
        nb = nbformat.read(str(path), as_version=4)
    except Exception:
        return set()
    return {nbgrader_meta(c).get("grade_id") for c in nb.cells if nbgrader_meta(c).get("grade_id")}


def _match(notebooks: list[Path], known: dict[str, set[str]], report: CollectReport, who: str) -> dict[str, Path]:
    """Assignment -> notebook, by file name first, then by shared grade_ids for renamed files."""
    found: dict[str, Path] = {}
    unknown = []
    for path in notebooks:
        if path.stem in known and path.stem not in found:
            found[path.stem] = path
        else:
            unknown.append(path)
    for path in unknown:
        ids = _grade_ids(path)
        candidates = [a for a, a_ids in known.items() if ids & a_ids and a not in found]
        if len(candidates) == 1:
            found[candidates[0]] = path
        else:
            report.rejected.append(Rejected(f"{who}/{path.name}", "not recognised as any assignment notebook "
                                            f"(expected one of: {', '.join(sorted(known))}.ipynb)"))
    return found


def _store(root: Path, student: str, assignment: str, notebook: Path, when: datetime,
           report: CollectReport, who: str) -> None:
    target = root / "submitted" / student / assignment
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    (target / TIMESTAMP_FILE).write_text(timestamp_text(when), encoding="utf-8")
    try:
        nbformat.read(str(notebook), as_version=4)
    except Exception as error:
        reason = (f"{notebook.name} is not a readable notebook (damaged or not notebook JSON: "
                  f"{type(error).__name__}); ask for it again, downloaded from JupyterLab "
                  "(File > Download)")
        report.rejected.append(Rejected(f"{who}/{notebook.name}", reason))
        (target / REJECTED_FILE).write_text(json.dumps({f"{assignment}.ipynb": reason}), encoding="utf-8")
    else:
        shutil.copyfile(notebook, target / f"{assignment}.ipynb")
    report.imported.append(Imported(student, assignment, timestamp_text(when)))


def _notebooks(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)


def _collect_exchange(root: Path, inbound: Path, known, report: CollectReport) -> None:
    latest: dict[tuple[str, str], tuple[datetime, Path]] = {}
    for folder in sorted(p for p in inbound.iterdir() if p.is_dir()):
        parts = folder.name.split("+")
        if len(parts) < 3:
            report.rejected.append(Rejected(folder.name, "not an nbgrader exchange submission folder"))
            continue
        try:
            student = check_student_id(parts[0])
        except GraderError as error:
            report.rejected.append(Rejected(folder.name, str(error)))
            continue
        stamp = folder / TIMESTAMP_FILE
        from nbgrader.utils import parse_utc

        when = parse_utc(stamp.read_text().strip()) if stamp.exists() else _mtime(folder)
        when = when if when.tzinfo else when.replace(tzinfo=timezone.utc)
        key = (student, parts[1])
        if parts[1] in known and (key not in latest or when > latest[key][0]):
            latest[key] = (when, folder)
    for (student, assignment), (when, folder) in sorted(latest.items()):
        matched = _match(_notebooks(folder), {assignment: known[assignment]}, report, folder.name)
        if assignment in matched:
            _store(root, student, assignment, matched[assignment], when, report, folder.name)


def collect(root: Path, inbox: Path, selected: list[str] | None = None) -> CollectReport:
    """Import every student's notebooks from ``inbox``; return what was imported and rejected."""
    if not inbox.is_dir():
        raise GraderError(f"inbox {inbox} is not a folder; expected one folder or .zip per student")
    ids = selected or assignments(root)
    known = {a: _grade_ids(CourseDir(root).source_notebook(a)) for a in ids}
    report = CollectReport()
    inbound = next((p for p in [inbox / "inbound", *inbox.glob("*/inbound")] if p.is_dir()), None)
    if inbound is not None:
        _collect_exchange(root, inbound, known, report)
        return report
    with tempfile.TemporaryDirectory(prefix="collect-") as scratch:
        for entry in sorted(inbox.iterdir()):
            if entry.name.startswith("."):
                continue
            try:
                student = check_student_id(entry.stem if entry.suffix == ".zip" else entry.name)
            except GraderError as error:
                report.rejected.append(Rejected(entry.name, str(error)))
                continue
            if entry.is_file() and entry.suffix == ".zip":
                folder = Path(scratch) / f"{len(report.imported)}-{entry.stem}"
                try:
                    _safe_extract(entry, folder)
                except (zipfile.BadZipFile, GraderError, OSError) as error:
                    report.rejected.append(Rejected(entry.name, f"unreadable zip: {error}"))
                    continue
                when = _mtime(entry)
            elif entry.is_dir():
                folder, when = entry, None
            else:
                report.rejected.append(Rejected(entry.name, "neither a student folder nor a .zip"))
                continue
            for assignment, notebook in sorted(_match(_notebooks(folder), known, report, entry.name).items()):
                stamp = notebook.parent / TIMESTAMP_FILE
                from nbgrader.utils import parse_utc

                moment = when or (parse_utc(stamp.read_text().strip()) if stamp.exists() else _mtime(notebook))
                _store(root, student, assignment, notebook, moment, report, entry.name)
    return report
