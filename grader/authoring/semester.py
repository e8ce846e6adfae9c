"""The semester file: due dates, the late rule and per-student extensions, written by the
instructor in ``ROOT/semester.toml`` (``build`` never writes it), and the penalty they give.

    [assignments.01_tensors]
    due = "2026-10-01T23:59:00+02:00"       # ISO 8601 with its zone (+02:00, Z); a TOML date-time too

    [late]
    penalty_per_day = 0.1    # share of the assignment's max score taken per started day late
    max_penalty = 0.5        # at most this share in all (default 1)
    # method = "zero"        # instead: a late submission scores 0 (nbgrader's penalty_method 'zero')

    [extensions.alice]
    01_tensors = "2026-10-03T23:59:00+02:00"  # alice's own due date for 01_tensors

The penalty depends only on the submission's timestamp, its student's due date (the extension
when there is one) and the rule, never on a kernel run: changing this file changes penalties the
next time they are computed (the grade table, autograde, export), and regrades nothing. As in
nbgrader, the penalty is kept apart from the score (``raw - penalty`` is the final score) and is
never more than the raw score, so no score is negative. No file: no due date from here (the
gradebook's, set by ``nbgrader db assignment add --duedate``, still counts) and no penalty.
"""
from __future__ import annotations

import math
import re
import tomllib
from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from pathlib import Path

from ..errors import GraderError

__all__ = ["SEMESTER_FILE", "SemesterError", "Semester", "load_semester", "late_penalty", "parse_stamp"]

SEMESTER_FILE = "semester.toml"
DAY = 86400.0
EXAMPLE_DATE = '"2026-10-01T23:59:00+02:00"'
README_SECTION = "Due dates, late penalties, extensions"  # where README.md describes this file
DATE_ONLY = re.compile(r"\s*\d{4}-\d{2}-\d{2}\s*")  # "2026-10-01": a day, no time of it


class SemesterError(GraderError):
    """The semester file is wrong: the message names the file, the line, what is wrong and what to write."""


@dataclass(frozen=True)
class Semester:
    due: dict[str, datetime] = field(default_factory=dict)                    # assignment -> due (UTC)
    extensions: dict[tuple[str, str], datetime] = field(default_factory=dict)  # (student, assignment) -> due
    method: str = "none"            # "none", "per_day" or "zero"
    penalty_per_day: float = 0.0    # share of the max score per started day late ("per_day")
    max_penalty: float = 1.0        # share of the max score at most ("per_day")

    def due_for(self, student: str, assignment: str, default: datetime | None = None) -> datetime | None:
        """The student's own due date: the extension when there is one, else the assignment's (or ``default``)."""
        return self.extensions.get((student, assignment)) or self.due.get(assignment) or default


def parse_stamp(text: str) -> datetime | None:
    """A timestamp.txt text (``2026-10-02 11:59:00.000000 UTC``, nbgrader's format) as an aware UTC
    datetime; None when it cannot be read."""
    from nbgrader.utils import parse_utc

    try:
        return parse_utc(text).replace(tzinfo=timezone.utc)
    except (ValueError, OverflowError, TypeError):
        return None


def late_penalty(semester: Semester, raw: float, max_score: float, seconds_late: float) -> float:
    """Points taken from a submission ``seconds_late`` after its student's due date (0 when on time),
    never more than ``raw``: 'per_day' takes ``penalty_per_day * max_score`` per started day (1.5 days:
    2 days), at most ``max_penalty * max_score``; 'zero' takes the whole raw score."""
    if seconds_late <= 0 or semester.method == "none":
        return 0.0
    if semester.method == "zero":
        return max(0.0, raw)
    days = math.ceil(seconds_late / DAY)
    share = min(semester.penalty_per_day * days, semester.max_penalty)
    return round(max(0.0, min(raw, share * max_score)), 6)


def load_semester(root: Path, assignments: list[str] | None = None) -> Semester:
    """``ROOT/semester.toml`` read and checked (an empty Semester when there is none).

    assignments: the course's assignment ids; a name not among them is refused (None: not checked)."""
    path = Path(root) / SEMESTER_FILE
    if not path.is_file():
        return Semester()
    text = path.read_text(encoding="utf-8")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise SemesterError(f"{path}: not valid TOML ({error}); compare it with the example in README.md, section "
                            f"\"{README_SECTION}\" (dates in quotes: due = {EXAMPLE_DATE})") from None
    return _Reader(path, text, assignments).semester(data)


class _Reader:
    """Checks one file's tables, each error located by the line of its key."""

    def __init__(self, path: Path, text: str, assignments: list[str] | None):
        self.path, self.lines, self.known = path, text.splitlines(), assignments

    def fail(self, section: str, key: str | None, what: str) -> SemesterError:
        line = self._line(section, key)
        where = f"{self.path}, line {line}" if line else str(self.path)
        return SemesterError(f"{where}: {what}")

    def semester(self, data: dict) -> Semester:
        for key in data:
            if key not in ("assignments", "late", "extensions"):
                raise self.fail(key, None, f"unknown table [{key}]; expected [assignments.NAME], [late] or "
                                           "[extensions.STUDENT]")
        due = {}
        for name, table in self._table(data, "assignments").items():
            self._assignment(f"assignments.{name}", None, name)
            if not isinstance(table, dict) or set(table) != {"due"}:
                raise self.fail(f"assignments.{name}", None, f"[assignments.{name}] must hold one key, due = "
                                                             f"{EXAMPLE_DATE}; found {table!r}")
            due[name] = self._date(f"assignments.{name}", "due", table["due"])
        extensions = {}
        for student, table in self._table(data, "extensions").items():
            section = f"extensions.{student}"
            if not isinstance(table, dict):
                raise self.fail(section, None, f"[extensions.{student}] must hold ASSIGNMENT = {EXAMPLE_DATE} lines")
            for name, value in table.items():
                self._assignment(section, name, name)
                when = self._date(section, name, value)
                if name not in due:
                    raise self.fail(section, name, f"an extension of {name}, which has no due date here; "
                                                   f"add [assignments.{name}] with due = {EXAMPLE_DATE}")
                if when <= due[name]:
                    raise self.fail(section, name, f"{student}'s extension of {name} ({when:%Y-%m-%d %H:%M} UTC) "
                                                   f"is not after its due date ({due[name]:%Y-%m-%d %H:%M} UTC); "
                                                   "write a later date or remove the line")
                extensions[(student, name)] = when
        return Semester(due, extensions, **self._late(self._table(data, "late")))

    def _late(self, late: dict) -> dict:
        unknown = set(late) - {"penalty_per_day", "max_penalty", "method"}
        if unknown:
            raise self.fail("late", sorted(unknown)[0], f"unknown key(s) {sorted(unknown)} in [late]; expected "
                                                        "penalty_per_day, max_penalty or method")
        method = late.get("method", "per_day" if "penalty_per_day" in late else "none")
        if method not in ("none", "per_day", "zero"):
            raise self.fail("late", "method", f'method = {method!r}; expected "none", "per_day" or "zero"')
        if method == "per_day" and "penalty_per_day" not in late:
            raise self.fail("late", "method", 'method = "per_day" needs penalty_per_day = 0.1 (a share per day)')
        if method != "per_day" and ("penalty_per_day" in late or "max_penalty" in late):
            raise self.fail("late", "method", f'method = "{method}" takes no penalty_per_day or max_penalty; '
                                              "remove them, or the method line")
        shares = {}
        for key in ("penalty_per_day", "max_penalty"):
            value = late.get(key, 1.0 if key == "max_penalty" else 0.0)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
                raise self.fail("late", key, f"{key} = {value!r}; expected a share of the max score between 0 and 1, "
                                             "e.g. 0.1 for 10%")
            shares[key] = float(value)
        return {"method": method, **shares}

    def _table(self, data: dict, name: str) -> dict:
        table = data.get(name, {})
        if not isinstance(table, dict):
            raise self.fail(name, None, f"{name} must be a table: [{name}] or [{name}.NAME]")
        return table

    def _assignment(self, section: str, key: str | None, name: str) -> None:
        if self.known is not None and name not in self.known:
            raise self.fail(section, key, f"unknown assignment {name!r}; the course has {', '.join(self.known) or 'none'}")

    def _date(self, section: str, key: str, value) -> datetime:
        day = value.strip() if isinstance(value, str) and DATE_ONLY.fullmatch(value) else \
            value.isoformat() if isinstance(value, date) and not isinstance(value, datetime) else None
        if day is not None:  # not echoed as midnight: the time is the user's to choose
            raise self.fail(section, key, f"{key} = {day} is a day without a time, so its moment is unknown; write the "
                                          f"time and zone it is due, e.g. \"{day}T23:59:00+02:00\" (or Z for UTC)")
        written = value if isinstance(value, str) else None
        if isinstance(value, str):
            try:
                value = datetime.fromisoformat(value)
            except ValueError:
                raise self.fail(section, key, f"{key} = {value!r} is not a date; write e.g. {EXAMPLE_DATE}") from None
        if not isinstance(value, datetime):
            raise self.fail(section, key, f"{key} = {value!r} is not a date and time; write e.g. {EXAMPLE_DATE}")
        if value.tzinfo is None:
            shown = (written or value.isoformat()).strip()
            raise self.fail(section, key, f"{key} = {shown} has no time zone, so its moment is unknown; "
                                          f"add it, e.g. {shown}+02:00 or {shown}Z for UTC")
        return value.astimezone(timezone.utc)

    def _line(self, section: str, key: str | None) -> int | None:
        """1-based line of ``key`` inside ``[section]`` (of the header when key is None); None if not found."""
        current, header = None, None
        for number, line in enumerate(self.lines, 1):
            stripped = line.split("#", 1)[0].strip()
            if stripped.startswith("[") and stripped.endswith("]"):
                current = re.sub(r"[\s\"']", "", stripped.strip("[]"))
                if current == section:
                    header = number
                    if key is None:
                        return number
                continue
            if key is not None and current == section and re.match(rf"[\"']?{re.escape(key)}[\"']?\s*=", stripped):
                return number
        return header
