"""Exchange: which submissions in an nbgrader ``inbound`` folder count, and for whom.

``nbgrader submit`` copies a student's notebooks to ``inbound/<student>+<assignment>+<timestamp>
[+<random>]/`` with a ``timestamp.txt``. Both the folder name and the timestamp are written by the
student's own account, so neither proves anything; what the student cannot choose is the owner of
the folder they create. As nbgrader's own ``ExchangeCollect.check_owner`` does, a submission counts
only when its folder belongs to the user it names (``check_owner=False`` turns this off, e.g. for
an exchange copied from a hub without its owners). A timestamp that cannot be read, or that lies in
the future (beyond :data:`CLOCK_SKEW`), is refused; of a student's remaining submissions of an
assignment, the latest counts.

``nbgrader submit`` also writes a random ``submission_secret.txt`` into the submission (and into the
student's own cache): the feedback released for it is named by a hash of that secret, which is how
``nbgrader fetch_feedback`` finds it. It is kept with the submission when it reads as nbgrader writes
it (hex digits); otherwise the submission is still collected, without one.
"""
from __future__ import annotations

import os
import pwd
import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

from ..authoring.coursedir import SECRET_FILE, TIMESTAMP_FILE
from ..errors import GraderError
from .uploads import Rejected, check_student_id, collisions, open_folder, read_regular

__all__ = ["Submission", "submissions", "owner_name", "read_timestamp", "CLOCK_SKEW"]

CLOCK_SKEW = timedelta(minutes=5)  # a student's clock may run this far ahead of the grader's
SECRET = re.compile(r"[0-9a-f]{32,256}")  # nbgrader writes secrets.token_hex(64)


@dataclass
class Submission:
    folder: Path      # inbound/<student>+<assignment>+<timestamp>...
    student: str      # checked and normalised
    assignment: str
    when: datetime    # UTC
    secret: str = ""  # its submission_secret.txt ("" when it has none nbgrader could have written)


def owner_name(uid: int) -> str:
    """The login name of ``uid``, as nbgrader's check_owner reads it (``uid 1234`` if it has none)."""
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def submissions(inbound: Path, assignments: set[str], check_owner: bool = True,
                now: datetime | None = None) -> tuple[list[Submission], list[Rejected]]:
    """The latest valid submission of each (student, assignment) in ``inbound``, and every refusal."""
    now = now or datetime.now(timezone.utc)
    valid: list[tuple[Submission, str]] = []  # with the student id as written in the folder name
    refused: list[Rejected] = []
    for entry in sorted(os.scandir(inbound), key=lambda e: e.name):
        if entry.name.startswith(".") and not entry.is_dir(follow_symlinks=False):
            continue  # e.g. .DS_Store; a hidden folder is reported (``..+a+t`` is an attack)
        try:
            found = _read(Path(entry.path), assignments, check_owner, now)
        except GraderError as error:
            refused.append(Rejected(entry.name, f"{entry.name} {error}"))
            continue
        if found is not None:
            valid.append(found)
    clashes = collisions({raw: raw for _, raw in valid})
    latest: dict[tuple[str, str], Submission] = {}
    for submission, raw in valid:
        if raw in clashes:
            refused.append(Rejected(submission.folder.name, _clash(raw, clashes)))
            continue
        key = (submission.student, submission.assignment)
        if key not in latest or submission.when > latest[key].when:
            latest[key] = submission
    return sorted(latest.values(), key=lambda s: (s.student, s.assignment)), refused


def _clash(raw: str, clashes: dict[str, list[str]]) -> str:
    others = ", ".join(repr(o) for o in clashes[raw])
    return (f"student id {raw!r} names the same student as {others} (ids differing only in spaces, unicode "
            "form or case); no submission of theirs was collected: ask the students which is whose")


def _read(folder: Path, assignments: set[str], check_owner: bool, now: datetime):
    """The submission in ``folder``, None for another assignment's; GraderError says why it is refused."""
    parts = folder.name.split("+")
    if len(parts) < 3:
        raise GraderError("is not an nbgrader exchange submission (expected <student>+<assignment>+<timestamp>)")
    raw, assignment = parts[0], parts[1]
    try:
        student = check_student_id(raw)
    except GraderError as error:
        raise GraderError(f"is not collected: {error}") from None
    if assignment not in assignments:
        return None
    fd = open_folder(folder)
    try:
        owner = owner_name(os.fstat(fd).st_uid)
        if check_owner and owner != raw:
            raise GraderError(f"claims to be submitted by {raw!r} but its folder belongs to user {owner!r}; "
                              "only a student's own account can submit for them. If this exchange was copied "
                              "without its owners, collect with --no-check-owner")
        text = _timestamp_text(fd) or parts[2]  # nbgrader names the folder by the same timestamp
        secret = _secret(fd)
    finally:
        os.close(fd)
    return Submission(folder, student, assignment, read_timestamp(text, now), secret), raw


def _secret(folder_fd: int) -> str:
    """The folder's submission secret, "" if it has none, or none that nbgrader could have written."""
    try:
        text = read_regular(SECRET_FILE, folder_fd, limit=1024)[0].decode("ascii").strip()
    except (GraderError, UnicodeDecodeError):
        return ""
    return text if SECRET.fullmatch(text) else ""


def _timestamp_text(folder_fd: int) -> str | None:
    """The folder's timestamp.txt, None if it has none; GraderError if it is a link or unreadable."""
    try:
        os.stat(TIMESTAMP_FILE, dir_fd=folder_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    try:
        return read_regular(TIMESTAMP_FILE, folder_fd, limit=1024)[0].decode("utf-8", "replace").strip()
    except GraderError as error:
        raise GraderError(f"has a {TIMESTAMP_FILE} that {error}") from None


def read_timestamp(text: str, now: datetime) -> datetime:
    """The UTC time ``text`` names; GraderError if it names none or lies in the future."""
    from nbgrader.utils import parse_utc

    try:
        when = parse_utc(text)
    except (ValueError, OverflowError):
        raise GraderError(f"has a timestamp {text[:60]!r} that is not a date; ask the student to submit "
                          "again with `nbgrader submit`") from None
    when = when.replace(tzinfo=timezone.utc) if when.tzinfo is None else when.astimezone(timezone.utc)
    if when > now + CLOCK_SKEW:
        raise GraderError(f"is dated {when:%Y-%m-%d %H:%M} UTC, in the future (the grader's clock says "
                          f"{now:%Y-%m-%d %H:%M} UTC); a submission cannot be dated after it was made: "
                          "ask the student to submit again")
    return when
