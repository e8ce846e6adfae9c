"""The class report: one offline HTML page per course, ``ROOT/report/index.html``, with its figures
as PNG files in ``ROOT/report/figures/`` (relative links: the folder can be copied or zipped whole).

It reads only the gradebook and the stored results (:mod:`grader.results.report_data`), so a course graded
locally and one graded on a Dask cluster give the same page. Every student-provided string (ids,
reasons that quote nothing but are still shown as text) is HTML-escaped; the page loads no script,
font or style from anywhere.

    path = write_report(CourseDir(root))                  # the class
    path = write_report(CourseDir(root), student="ada")   # ROOT/report/student-<hash>.html
"""
from __future__ import annotations

import hashlib
from html import escape
from pathlib import Path

from ..authoring.coursedir import CourseDir
from .manual import AWAITING, UNDER_REVIEW
from .report_data import AssignmentData, ClassData, attempted, failed_keys, load_class
from .report_figures import Figure, score_histogram, share_bars, time_boxes

__all__ = ["report_folder", "write_report", "student_page_name"]

STYLE = """body{font-family:sans-serif;max-width:1100px;margin:1em auto;padding:0 1em;color:#111}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #999;padding:2px 6px;text-align:left;
vertical-align:top}th{background:#eee}img{max-width:100%;border:1px solid #ccc}.num{text-align:right}
.note{color:#444}pre{background:#f6f6f6;padding:4px;overflow-x:auto}mark{background:#ffe08a;font-weight:bold}"""
LISTED = 40  # rows of a long list shown before "and N more"


def report_folder(course: CourseDir) -> Path:
    return course.root / "report"


def student_page_name(student: str) -> str:
    """A file name that no id can steer (ids are untrusted text)."""
    return f"student-{hashlib.sha256(student.encode('utf-8')).hexdigest()[:12]}.html"


def _page(title: str, body: list[str]) -> str:
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{escape(title)}</title><style>{STYLE}</style></head><body>\n"
            + "\n".join(body) + "\n</body></html>\n")


def _img(figure: Figure, folder: Path) -> str:
    return f'<p><img src="{escape(figure.path.relative_to(folder).as_posix())}" alt="{escape(figure.alt)}"></p>'


def _table(header: list[str], rows: list[list[str]]) -> str:
    """Cells are HTML already (escape text before)."""
    head = "".join(f"<th>{h}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _more(items: list[str]) -> list[str]:
    return items[:LISTED] + ([f"... and {len(items) - LISTED} more"] if len(items) > LISTED else [])


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f} %" if whole else "-"


def _summary(a: AssignmentData, students: list[str]) -> list[str]:
    subs = list(a.submissions.values())
    graded = [s for s in subs if not s.missing]
    missing = len(students) - len(graded)
    if a.due is None:
        late = "no due date set"
    else:
        late = f"{sum(1 for s in graded if s.late_seconds)} (due {a.due:%Y-%m-%d %H:%M} UTC)"
    attention = [s for s in subs if s.attention]
    times = sorted(s.seconds for s in graded if s.seconds)
    timing = (f"median {times[len(times) // 2]:.1f} s, longest {times[-1]:.1f} s, total {sum(times) / 60:.1f} min"
              if times else "no submission graded yet" if not graded
              else "not recorded (graded before grading times were stored)")
    waiting = sum(1 for s in graded if s.awaiting)
    reviewing = sum(1 for s in graded if s.review)
    rows = [["submissions graded", str(len(graded))], ["missing (none, or unreadable)", str(missing)],
            ["awaiting manual grading", f"{waiting} (left out of the scores below until graded)" if waiting else "0"],
            [UNDER_REVIEW, f"{reviewing} (scores include the points kept until you decide in formgrader)"
                           if reviewing else "0"],
            ["late", escape(late)], ["needing attention", str(len(attention))],
            ["grading time per submission", escape(timing)],
            ["reference run (the solution)", f"{a.reference_seconds:.1f} s" if a.reference_seconds else "-"]]
    return [_table(["", a.name and escape(a.name)], rows)]


def _exercises(a: AssignmentData, folder: Path) -> list[str]:
    graded = [s for s in a.submissions.values() if not s.missing]
    out, shares = [], []
    for test in a.tests:
        results = [t for s in graded for t in s.tests if t.grade_id == test.grade_id]
        shares.append((sum(t.status == "passed" for t in results) / len(results) if results else 0.0, test))
    shares.sort(key=lambda pair: pair[0])
    if shares:
        out.append(_img(share_bars([t.grade_id for _, t in shares], [s for s, _ in shares], f"{a.name}: exercises",
                                   "earned the points", folder / "figures" / f"{a.name}-exercises.png"), folder))
    rows = []
    for share, test in shares:
        results = [t for s in graded for t in s.tests if t.grade_id == test.grade_id]
        tried = [t for t in results if attempted(t)]
        checks = []
        for check in test.checks:
            failed = sum(check.key in failed_keys(t, test.checks) for t in tried)
            unreached = sum(check.key in (t.unchecked_keys or []) for t in tried)  # not failures
            unsaid = f" ({_pct(unreached, len(tried))} not checked: their test stopped before it)" if unreached else ""
            checks.append((failed, unreached, f"{_pct(failed, len(tried))} failed {escape(check.what or '(no description)')} "
                                              f"<code>{escape(check.key)}</code>{unsaid}"))
        checks.sort(key=lambda c: (-c[0], -c[1]))
        passed = sum(1 for failed, unreached, _ in checks if not failed and not unreached)
        texts = [text for failed, unreached, text in checks if failed or unreached] \
            + ([f"{passed} check(s) nobody failed"] if passed else [])
        rows.append([f"<code>{escape(test.grade_id)}</code><br><span class=note>{escape(test.description)}</span>",
                     f"{100 * share:.0f} %", _pct(len(tried), len(results)), "<br>".join(texts) or "-"])
    out.append("<p class=note>Hardest first. A hidden check's share counts the students who attempted the "
               "exercise (its stub no longer raises NotImplementedError).</p>")
    out.append(_table(["test", "earned", "attempted", "hidden checks: who failed each, and what it checks"], rows))
    return out


def _problems(a: AssignmentData) -> list[str]:
    lines = [f"<li>{escape(s.student)}: {escape('; '.join(s.attention))}</li>"
             for s in sorted(a.submissions.values(), key=lambda s: s.student) if s.attention]
    timeouts = [f"<li>{escape(s.student)}: <code>{escape(t.grade_id)}</code></li>"
                for s in a.submissions.values() for t in s.tests if t.status == "timeout"]
    out = ["<h3>Needs attention</h3>", f"<ul>{''.join(_more(lines))}</ul>" if lines else "<p>nothing</p>",
           "<h3>Timed out</h3>", f"<ul>{''.join(_more(timeouts))}</ul>" if timeouts else "<p>nothing timed out</p>"]
    return out


def _class_page(data: ClassData, course: CourseDir, folder: Path) -> str:
    body = [f"<h1>Class report: {escape(course.root.name)}</h1>",
            f"<p>{len(data.students)} students, {len(data.assignments)} assignments. Read from the gradebook and "
            "the stored grading results; grades are not changed here.</p>"]
    links = [f'<li><a href="{escape(p.name)}">answers too alike: {escape(p.stem.removeprefix("similarity-"))}</a></li>'
             for p in sorted(folder.glob("similarity-*.html"))]
    body.append(f"<ul>{''.join(links)}</ul>" if links else
                "<p class=note>No similarity check yet: <code>course-grader similarity ASSIGNMENT</code>.</p>")
    body.append("<ul>" + "".join(f'<li><a href="#a-{i}">{escape(a.name)}</a></li>'
                                 for i, a in enumerate(data.assignments)) + '<li><a href="#time">grading time</a></li></ul>')
    for i, a in enumerate(data.assignments):
        body.append(f'<h2 id="a-{i}">{escape(a.name)}</h2>')
        body += _summary(a, data.students)
        scores = [s.score for s in a.submissions.values() if not s.missing and not s.awaiting]
        top = max((s.max_score for s in a.submissions.values()), default=0.0)  # hand-graded points included
        body.append(_img(score_histogram(scores, top or a.max_score or max(scores, default=1), a.name,
                                         folder / "figures" / f"{a.name}-scores.png"), folder))
        body += _exercises(a, folder) + _problems(a)
    body.append('<h2 id="time">Grading time</h2>')
    body.append(_img(time_boxes([a.name for a in data.assignments],
                                [[s.seconds for s in a.submissions.values() if s.seconds] for a in data.assignments],
                                folder / "figures" / "grading-time.png"), folder))
    slow = sorted(((s.seconds, a.name, s.student) for a in data.assignments for s in a.submissions.values()),
                  reverse=True)[:10]
    body.append(_table(["seconds", "notebook", "student"],
                       [[f"{sec:.1f}", escape(n), escape(st)] for sec, n, st in slow if sec]))
    return _page(f"Class report: {course.root.name}", body)


def _student_page(data: ClassData, student: str) -> str:
    body = [f"<h1>Progress of {escape(student)}</h1>"]
    rows = []
    for a in data.assignments:
        s = a.submissions.get(student)
        if s is None:
            rows.append([escape(a.name), "-", "nothing submitted", ""])
            continue
        late = "" if s.late_seconds is None else (f"late by {s.late_seconds / 3600:.1f} h" if s.late_seconds else "on time")
        tests = "<br>".join(f"<code>{escape(t.grade_id)}</code> {escape(t.status)}: {escape(t.reason)}"
                            for t in s.tests)
        score = f"{s.score:g}/{s.max_score:g}" + (f" ({AWAITING}: {', '.join(s.awaiting)})" if s.awaiting else "")
        score += f" ({UNDER_REVIEW}: {', '.join(s.review)})" if s.review else ""
        rows.append([escape(a.name), escape(score), escape("; ".join(filter(None, [late, *s.attention]))),
                     tests])
    body.append(_table(["assignment", "score", "notes", "tests"], rows))
    return _page(f"Progress of {student}", body)


def write_report(course: CourseDir, student: str | None = None) -> Path:
    """Write the class page (and figures), or with ``student`` that student's page; return its path.

    Raises KeyError (with what to pass) for a student the course does not know, SemesterError for a semester
    file that autograde and export would refuse."""
    from .late import semester_of

    semester_of(course)  # the same checks as autograde's: a broken file is said here too, not read past
    folder = report_folder(course)
    data = load_class(course)
    if student is not None and student not in data.students:
        known = ", ".join(repr(s) for s in data.students[:5])
        raise KeyError(f"no student {student!r} in this course; known ids include {known or 'none'}")
    folder.mkdir(parents=True, exist_ok=True)  # only once there is a page to write: a refusal leaves nothing
    if student is not None:
        path = folder / student_page_name(student)
        path.write_text(_student_page(data, student), encoding="utf-8")
        return path
    path = folder / "index.html"
    path.write_text(_class_page(data, course, folder), encoding="utf-8")
    return path
