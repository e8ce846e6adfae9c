"""The nbgrader course directory: every path in it, the marker file, and submission timestamps.

    ROOT/nbgrader_config.py                        written by `build` (grader.authoring.config)
    ROOT/gradebook.db                              nbgrader's gradebook
    ROOT/semester.toml                             due dates, late rule, extensions (the instructor's; grader.authoring.semester)
    ROOT/source/<assignment>/<assignment>.ipynb    the instructor's notebook, with support files; an
                                                   nbgrader-layout assignment: several <notebook>.ipynb
    ROOT/release/<assignment>/                     what students get (nbgrader generate_assignment)
    ROOT-exchange/  (beside ROOT, not in it)       nbgrader's exchange (release_assignment, submit): students
                                                   reach it; ROOT itself is the owner's only (0700, `build`)
    ROOT/references/<assignment>.json              what the solution recorded (grader.engine.verdict.references);
    ROOT/references/<assignment>/<notebook>.json   that of a notebook not named as its assignment
    ROOT/submitted/<student>/<assignment>/         a collected notebook, timestamp.txt, rejected.json,
                                                   submission_secret.txt (collected from an exchange)
    ROOT/replaced/<student>/<assignment>/<time>/   a submission that a later collect replaced
    ROOT/autograded/<student>/<assignment>/        the graded notebook, then the marker, written last
    ROOT/feedback/<student>/<assignment>/          HTML feedback

No other module joins these names by hand.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..engine.verdict.result import Outcome

__all__ = ["CourseDir", "MARKER", "TIMESTAMP_FILE", "REJECTED_FILE", "SECRET_FILE", "timestamp_text"]

MARKER = "course-grader.json"       # in autograded/<student>/<assignment>/: graded, against which source
TIMESTAMP_FILE = "timestamp.txt"    # nbgrader's name: when the submission was made
REJECTED_FILE = "rejected.json"     # in submitted/<student>/<assignment>/: {file: why collect refused it}
SECRET_FILE = "submission_secret.txt"  # nbgrader's name: names the feedback released for this submission


def timestamp_text(when: datetime) -> str:
    """The timestamp format nbgrader writes into timestamp.txt (UTC)."""
    return when.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f %Z")


@dataclass(frozen=True)
class CourseDir:
    """Paths of one course directory (``root`` as given; call :meth:`resolved` for absolute)."""

    root: Path

    def resolved(self) -> "CourseDir":
        return CourseDir(Path(self.root).resolve())

    # -- instructor side --------------------------------------------------------------------
    @property
    def gradebook(self) -> Path:
        return self.root / "gradebook.db"

    @property
    def exchange(self) -> Path:
        """The course's local nbgrader exchange (``c.Exchange.root`` in its nbgrader_config.py): beside the
        course directory, ``<root>-exchange``, since students must reach it and must not reach the course."""
        root = Path(self.root).resolve()
        return root.parent / f"{root.name}-exchange"

    def source(self, assignment: str) -> Path:
        return self.root / "source" / assignment

    def notebooks(self, assignment: str) -> list[str]:
        """The names (without .ipynb) of the assignment's source notebooks, sorted: ``[assignment]`` for a
        course built from ``course/*.ipynb``, several for an nbgrader-layout assignment folder."""
        return sorted(p.stem for p in self.source(assignment).glob("*.ipynb") if p.is_file())

    def source_notebook(self, assignment: str, notebook: str | None = None) -> Path:
        return self.source(assignment) / f"{notebook or assignment}.ipynb"

    def source_files(self, assignment: str) -> list[Path]:
        """The assignment's source notebooks (what a grade names by their hash)."""
        return [self.source_notebook(assignment, name) for name in self.notebooks(assignment)]

    def reference_files(self, assignment: str) -> list[Path]:
        """The references file of each of the assignment's notebooks, in :meth:`notebooks` order."""
        return [self.references(assignment, name) for name in self.notebooks(assignment)]

    def release(self, assignment: str) -> Path:
        return self.root / "release" / assignment

    def released_notebook(self, assignment: str, notebook: str | None = None) -> Path:
        return self.release(assignment) / f"{notebook or assignment}.ipynb"

    @property
    def key(self) -> Path:
        """The course's secret key (grader.engine.verdict.seal)."""
        return self.root / ".course-grader-key"

    def references(self, assignment: str, notebook: str | None = None) -> Path:
        """``references/<assignment>.json`` for the notebook named as its assignment (a course built from
        ``course/*.ipynb``); ``references/<assignment>/<notebook>.json`` for any other notebook."""
        if notebook in (None, assignment):
            return self.root / "references" / f"{assignment}.json"
        return self.root / "references" / assignment / f"{notebook}.json"

    def assignments(self) -> list[str]:
        """Assignment ids with a source notebook, in order ([] before `build`)."""
        source = self.root / "source"
        return sorted(p.name for p in source.iterdir() if p.is_dir() and any(p.glob("*.ipynb"))) \
            if source.is_dir() else []

    # -- students' side ---------------------------------------------------------------------
    def submission(self, student: str, assignment: str) -> Path:
        return self.root / "submitted" / student / assignment

    def replaced(self, student: str, assignment: str) -> Path:
        """Where collect keeps the earlier submissions it replaced, one folder each, named by its timestamp."""
        return self.root / "replaced" / student / assignment

    def submitted_notebook(self, student: str, assignment: str, notebook: str | None = None) -> Path:
        return self.submission(student, assignment) / f"{notebook or assignment}.ipynb"

    def students(self) -> list[str]:
        """Students with a folder in submitted/, sorted."""
        submitted = self.root / "submitted"
        return sorted(p.name for p in submitted.iterdir() if p.is_dir()) if submitted.is_dir() else []

    def timestamp(self, student: str, assignment: str) -> str:
        """The submission's timestamp.txt, or its folder's modification time when there is none."""
        folder = self.submission(student, assignment)
        try:
            return (folder / TIMESTAMP_FILE).read_text(encoding="utf-8").strip()
        except OSError:
            return timestamp_text(datetime.fromtimestamp(folder.stat().st_mtime, tz=timezone.utc))

    def rejections(self, student: str, assignment: str, notebook: str | None = None) -> list[str]:
        """Why collect refused this student's upload(s) of the assignment (of its ``notebook`` only), if it did."""
        try:
            data = json.loads((self.submission(student, assignment) / REJECTED_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return []
        if not isinstance(data, dict):
            return []
        return [f"at collect: {why}" for name, why in data.items()
                if isinstance(why, str) and (notebook is None or name == f"{notebook}.ipynb")]

    def autograded(self, student: str, assignment: str) -> Path:
        return self.root / "autograded" / student / assignment

    def marker(self, student: str, assignment: str) -> Path:
        return self.autograded(student, assignment) / MARKER

    def graded_students(self) -> list[str]:
        graded = self.root / "autograded"
        return sorted(p.name for p in graded.iterdir() if p.is_dir()) if graded.is_dir() else []

    def graded_assignments(self, student: str) -> list[str]:
        folder = self.root / "autograded" / student
        return sorted(p.name for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []

    def read_marker(self, student: str, assignment: str) -> dict | None:
        """The marker's content, or None when there is none (or it is damaged: not graded)."""
        try:
            data = json.loads(self.marker(student, assignment).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def outcome(self, student: str, assignment: str) -> Outcome | None:
        """The marker as an :class:`grader.engine.verdict.result.Outcome`, or None where :meth:`read_marker` is None (or
        the marker is empty); a marker that misses a required key raises (TypeError, KeyError)."""
        from ..engine.verdict.result import Outcome

        marker = self.read_marker(student, assignment)
        return Outcome.from_json(marker) if marker else None

    def feedback(self, student: str, assignment: str) -> Path:
        return self.root / "feedback" / student / assignment
