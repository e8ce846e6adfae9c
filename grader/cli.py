"""``course-grader``: the instructor's and the student's command line (printing happens here)."""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from .authoring.assembly import DEFAULT_ROOT, assignments
from .authoring.coursedir import CourseDir
from .authoring.invocation import command
from .errors import GraderError

__all__ = ["main"]

ASSIGNMENT_HELP = "only this assignment (repeat for several; default: all)"
COURSE_HELP = "the folder of source notebooks (default: ./course, else the course/ folder of this checkout)"


def _limits(args, course: bool = True):
    """The limits of a run: the course's nbgrader_config.py and ``--cell-timeout``."""
    from .authoring.config import load_limits
    from .engine.isolation.sandbox import Limits

    timeout = getattr(args, "cell_timeout", None)
    if course:
        return load_limits(args.root, timeout)
    return Limits(cell_timeout_s=timeout) if timeout else Limits()


def _named(args, names: list[str]) -> list[str] | None:
    """The assignments named on the command line, None for all; GraderError naming the known ones."""
    if not names:
        return None
    known = assignments(args.root)
    unknown = [name for name in names if name not in known]
    if unknown:
        raise GraderError(f"no assignment {', '.join(map(repr, unknown))} in {args.root}; its assignments are "
                          f"{', '.join(known)} (a new notebook of the course folder is added by "
                          f"`{command('build', args.root)}`)")
    return list(dict.fromkeys(names))


def cmd_build(args) -> int:
    from .authoring.assembly import build

    ids = build(args.root, args.course, args.course_id)
    from .authoring.config import configured_course_id

    print(f"built {args.root} (course id {configured_course_id(args.root)!r}) with {len(ids)} assignment(s): "
          f"{', '.join(ids)}")
    return 0


def cmd_release(args) -> int:
    from .authoring.assembly import build, release

    if args.build:  # a course that exists: main() refused a folder that is none
        build(args.root, args.course)
    from .results.gradebook import sync_semester

    names = _named(args, args.assignment)
    for path in release(args.root, names):
        print(f"released {path}")
    sync_semester(CourseDir(args.root))  # the semester file's due dates into the gradebook, where formgrader reads them
    if args.references:
        _release_references(args, names)
    return 0


def _release_references(args, names: list[str] | None) -> None:
    """The reference values of the released solutions, computed now (autograde reuses them until a source
    changes); said when they cannot be: no sandbox here (autograde computes them), a failing solution (an error)."""
    from .engine.isolation.sandbox import SandboxUnavailable
    from .running.batch import compute_references

    if not args.quiet:
        print("running each released solution whose reference values are not up to date (--no-references: "
              "leave it to autograde) ...", flush=True)
    try:
        sealed, failed = compute_references(args.root, assignments=names, workers=args.workers,
                                            limits=_limits(args), unsafe=args.unsafe)
    except SandboxUnavailable as why:
        print(f"reference values not computed ({why}); autograde computes them before it grades, once it can "
              "isolate kernels (or with --unsafe, for solutions you trust)", file=sys.stderr)
        return
    for name, seconds in sealed.items():
        print(f"reference values of {name}: " + ("up to date" if seconds is None else
                                                 f"computed in {seconds:.0f} s of kernel time, sealed"))
    if failed:  # released all the same: nothing done is undone
        raise GraderError("; ".join(f"the reference run of {name} failed: {why}" for name, why in failed.items())
                          + ". The student versions were released, but autograde grades no submission of "
                          f"{', '.join(failed)} until the solution passes its own tests (stock nbgrader would score "
                          "the failing test 0 for every student). Fix the solution where you write the course, "
                          f"then release again: `{command('release --build', args.root)}` rebuilds from course/ "
                          "first (--course DIR for another folder); plain `release` runs what is in "
                          f"{CourseDir(args.root).root / 'source'} again")


def cmd_collect(args) -> int:
    from .intake.collect import collect
    from .intake.summary import collect_lines
    from .terminal import printable

    inbox = args.inbox
    if inbox is None:  # the course's own exchange, where `nbgrader submit` puts what students hand in
        from .authoring.config import configured_course_id

        inbox = CourseDir(args.root).exchange
        inbound = inbox / configured_course_id(args.root) / "inbound"
        if not inbound.is_dir():  # never read the exchange's other folders (outbound: the release) as students
            raise GraderError(f"nothing can have been submitted to the course's exchange yet ({inbound} does not "
                              f"exist): run `{command('release', args.root)}` first; students then submit in "
                              "JupyterLab (Nbgrader > Assignment List, Submit). To collect uploads, name their "
                              "folder: `" + command("collect INBOX", args.root) + "`")
        print(f"collecting from the course's exchange {inbox} (students' Submit in JupyterLab); "
              "name a folder to collect uploads from it instead")
    report = collect(args.root, inbox, _named(args, args.assignment), check_owner=args.check_owner)
    for line in collect_lines(report, str(inbox)):  # student ids and file names are the students' text
        print(printable(line))
    if not (report.accepted or report.unchanged):  # a script or a tired instructor must not read this as done
        print(f"course-grader collect: nothing collected from {inbox}", file=sys.stderr)
        return 2
    return 0


def cmd_autograde(args) -> int:
    from .engine.isolation.cgroups import cgroup_gaps, cgroup_support
    from .results.table import grade_table
    from .running.batch import ReferenceFailed, autograde

    grouped, why = cgroup_support()
    if not (grouped or args.unsafe or args.scheduler):
        print(f"warning: kernels get no control group ({why}): memory is bounded per process only, CPU by "
              "CPU seconds only, and kernels compete for this machine's CPU and memory "
              "(see grader/THREAT_MODEL.md, section 2)", file=sys.stderr)
    elif grouped and not (args.unsafe or args.scheduler):
        for gap in cgroup_gaps():
            print(f"warning: each kernel's control group bounds its memory, but this machine's cgroup has {gap} "
                  "(see grader/THREAT_MODEL.md, section 2)", file=sys.stderr)
    try:
        outcomes = autograde(args.root, assignments=_named(args, args.names + args.assignment),
                             students=args.student or None,
                             workers=args.workers, force=args.force, limits=_limits(args), unsafe=args.unsafe,
                             progress=not args.quiet, scheduler=args.scheduler)
    except ReferenceFailed as failure:  # show what was graded, then the error (and a failing exit status)
        print(grade_table(args.root, failure.outcomes, args.student or None))
        raise
    print(grade_table(args.root, outcomes, args.student or None))
    if not outcomes.pending:
        print(f"nothing new to grade; --force to regrade (`{command('autograde --force', args.root)}`)",
              file=sys.stderr)  # a notice, like the warnings: stdout holds the table only
    return 0


def cmd_feedback(args) -> int:
    from .results.feedback import feedback

    for path in feedback(args.root, _named(args, args.names + args.assignment), args.student or None):
        print(f"feedback {path}")
    return 0


def cmd_release_feedback(args) -> int:
    from .results.feedback_release import release_feedback, release_notes
    from .terminal import printable

    results = release_feedback(args.root, _named(args, args.names + args.assignment), args.student or None)
    for r in results:  # student ids are the students' text: no escape sequence reaches the terminal
        print(printable(f"{r.student} / {r.assignment}: {r.status}" + (f": {r.detail}" if r.detail else "")))
    for note in release_notes(args.root, results):  # what the lines share, once
        print(note)
    released = sum(r.status == "released" for r in results)
    left = [r for r in results if not r.ok]
    print(f"{released} released, {len(results) - released - len(left)} collected outside the exchange, "
          f"{len(left)} to do again")
    return 2 if left else 0


def cmd_export(args) -> int:
    from .results.export import export_csv

    path = export_csv(args.root, args.to)
    print(f"grades written to {path}")
    return 0


def cmd_validate(args) -> int:
    from .validate import cmd_validate as validate

    return validate(args, _limits(args, course=False))


def cmd_check(args) -> int:
    import tempfile

    from .authoring.assembly import course_folder, gated_notebooks
    from .running.gate import check_notebooks

    start = time.monotonic()
    say = (lambda msg: print(f"  ... {msg}", flush=True)) if not args.quiet else None
    with tempfile.TemporaryDirectory(prefix="course-check-") as scratch:  # a course's own markers, as build
        gated = {copy: original for n, p in enumerate(args.paths or [course_folder()])
                 for copy, original in gated_notebooks(p, Path(scratch) / str(n)).items()}
        reports = check_notebooks(list(gated), workers=args.workers, limits=_limits(args, course=False),
                                  unsafe=args.unsafe, progress=say, scheduler=args.scheduler,
                                  thorough=args.thorough, allow_asserts=args.allow_asserts)
    for report in reports:
        print(f"{'PASS' if report.ok else 'FAIL'}  {gated[report.notebook]}")
        for check in report.checks:
            print(f"  {'ok  ' if check.ok else 'FAIL'} ({check.name}) {check.detail}")
    bad = [r for r in reports if not r.ok]
    print(f"course gate: {len(reports) - len(bad)}/{len(reports)} notebook(s) pass "
          f"in {time.monotonic() - start:.0f} s")
    return 1 if bad else 0


def cmd_demo(args) -> int:
    from .demo import run_demo

    root = Path("build/demo") if args.root == DEFAULT_ROOT else args.root
    return run_demo(root, workers=args.workers, unsafe=args.unsafe, limits=_limits(args, course=False),
                    everything=args.all, only=args.assignment, course=args.course)


def cmd_report(args) -> int:
    from .results.report import write_report
    from .terminal import printable

    try:
        path = write_report(CourseDir(args.root), args.student)
    except (FileNotFoundError, KeyError) as error:  # names student ids: no escape sequence reaches the terminal
        print(printable(f"course-grader report: {error.args[0]}"), file=sys.stderr)
        return 2
    print(f"report written to {path}")
    return 0


def cmd_similarity(args) -> int:
    from .results.similarity_check import check_assignment
    from .results.similarity_page import write_similarity_page
    from .terminal import printable

    try:
        result = check_assignment(CourseDir(args.root), _named(args, [args.assignment])[0])
    except FileNotFoundError as error:
        print(f"course-grader similarity: {error}", file=sys.stderr)
        return 2
    handed_in = result.students()
    if len(handed_in) < 2:  # no pair to compare: not "0 pair(s) flagged", which reads as a class checked
        print(f"course-grader similarity: {len(handed_in) or 'no'} submission(s) of {result.assignment} with "
              f"answers, so no pair to compare; collect the class's notebooks first "
              f"(`{command('collect INBOX', args.root)}`)", file=sys.stderr)
        return 2
    for p in result.flagged:  # student ids are untrusted text: no escape sequence reaches the terminal
        print(printable(f"FLAGGED {p.exercise}: {p.a} and {p.b} (similarity {p.similarity:.2f}, z {p.z:.1f})"))
    for m in result.sources:
        if m.flagged:
            print(printable(f"MATCHES {m.source}: {m.student} / {m.exercise} ({100 * m.share:.0f} % of the answer)"))
    print(f"{len(result.flagged)} pair(s) flagged; side by side in {write_similarity_page(CourseDir(args.root), result)}")
    return 0


def cmd_lab(args) -> int:
    from .lab import run_lab

    return run_lab(args.root, instructor=args.instructor, course=args.course)


def parser() -> argparse.ArgumentParser:
    root_help = f"the nbgrader course directory (default: {DEFAULT_ROOT}); before or after the command"
    top = argparse.ArgumentParser(prog="course-grader", description=__doc__)
    top.add_argument("--root", type=Path, default=DEFAULT_ROOT, help=root_help)
    after = argparse.ArgumentParser(add_help=False)  # `collect INBOX --root DIR` too; unset unless given
    after.add_argument("--root", type=Path, default=argparse.SUPPRESS, help=root_help)
    sub = top.add_subparsers(dest="command", required=True)

    def subcommand(name, func, help):
        p = sub.add_parser(name, help=help, description=help, parents=[after])
        p.set_defaults(func=func)
        return p

    def grading_options(p, workers=1, cluster=True):
        p.add_argument("--workers", type=int, default=workers, help=f"parallel kernels (default {workers})")
        p.add_argument("--unsafe", action="store_true",
                       help="run student code WITHOUT the sandbox (only where no isolation is available "
                            "and you trust the code)")
        p.add_argument("--cell-timeout", type=float, default=None,
                       help="seconds per cell (default: c.Execute.timeout in the course's nbgrader_config.py, else 300)")
        p.add_argument("--quiet", action="store_true", help="no progress output")
        if cluster:
            p.add_argument("--scheduler", default=None, metavar="tcp://HOST:8786",
                           help="run the kernels on the workers of this Dask scheduler instead of --workers "
                                "local processes (see README, 'Several machines')")

    p = subcommand("build", cmd_build, "assemble the nbgrader course directory from course/*.ipynb")
    p.add_argument("--course", type=Path, default=None, help=COURSE_HELP)
    p.add_argument("--course-id", default=None, metavar="ID",
                   help="nbgrader's course id, written into nbgrader_config.py (default: the course's current one; "
                        "d2lite for a new course)")
    p = subcommand("release", cmd_release, "generate the student versions (nbgrader generate_assignment) and run each solution once for its reference values")
    p.add_argument("assignment", nargs="*", help="only these assignments (default: all)")
    p.add_argument("--course", type=Path, default=None, help=COURSE_HELP)
    p.add_argument("--build", action="store_true", help="rebuild from the course notebooks first")
    p.add_argument("--no-references", dest="references", action="store_false",
                   help="do not run the solutions for their reference values now (autograde then runs each one "
                        "before grading its first submission)")
    grading_options(p, workers=max(1, min(4, os.cpu_count() or 1)), cluster=False)
    p = subcommand("collect", cmd_collect, "import submissions: one folder or zip per student, or an nbgrader exchange")
    p.add_argument("inbox", type=Path, nargs="?", default=None,
                   help="the folder of uploads (INBOX/<student>/ or INBOX/<student>.zip), or an nbgrader exchange "
                        "(default: the course's own exchange, ROOT-exchange, beside ROOT)")
    p.add_argument("--assignment", action="append", default=[], metavar="NAME", help=ASSIGNMENT_HELP)
    p.add_argument("--no-check-owner", dest="check_owner", action="store_false",
                   help="exchange only: accept submission folders not owned by the student they name "
                        "(for an exchange copied without its owners)")
    p = subcommand("autograde", cmd_autograde, "grade submissions (sandboxed, resumable, idempotent)")
    p.add_argument("names", nargs="*", metavar="assignment", help="only these assignments (default: all)")
    p.add_argument("--assignment", action="append", default=[], metavar="NAME", help=ASSIGNMENT_HELP)
    p.add_argument("--student", action="append", default=[], metavar="ID",
                   help="only this student (repeat for several); the table shows only them")
    p.add_argument("--force", action="store_true", help="regrade submissions already graded")
    grading_options(p, workers=max(1, min(4, os.cpu_count() or 1)))
    p = subcommand("feedback", cmd_feedback, "write HTML feedback per student (hidden tests not shown)")
    p.add_argument("names", nargs="*", metavar="assignment", help="only these assignments (default: all)")
    p.add_argument("--assignment", action="append", default=[], metavar="NAME", help=ASSIGNMENT_HELP)
    p.add_argument("--student", action="append", default=[], metavar="ID",
                   help="only this student (repeat for several)")
    p = subcommand("release-feedback", cmd_release_feedback,
                   "put the feedback into the nbgrader exchange: students fetch it from their Assignments tab")
    p.add_argument("names", nargs="*", metavar="assignment", help="only these assignments (default: all)")
    p.add_argument("--assignment", action="append", default=[], metavar="NAME", help=ASSIGNMENT_HELP)
    p.add_argument("--student", action="append", default=[], metavar="ID",
                   help="only this student (repeat for several)")
    p = subcommand("export", cmd_export, "write grades as CSV (nbgrader's exporter columns)")
    p.add_argument("--to", type=Path, default=None, help="CSV path (default: ROOT/grades.csv)")
    p = subcommand("validate", cmd_validate, "student self-check: run the visible tests of one notebook")
    p.add_argument("path", type=Path, help="the notebook to check, e.g. build/student/01_tensors/01_tensors.ipynb")
    p.add_argument("--cell-timeout", type=float, default=None, help="seconds per cell (default 300)")
    p = subcommand("check", cmd_check, "course quality gate on source notebooks (default: course/)")
    p.add_argument("paths", type=Path, nargs="*", help="source notebooks or course folders (default: course/)")
    p.add_argument("--thorough", action="store_true",
                   help="(c) with one kernel per exercise on a copy cut after it (default: one kernel per notebook)")
    p.add_argument("--allow-asserts", action="store_true",
                   help="accept assert-only test cells (stock nbgrader's kind, no record()): they score full marks "
                        "when they raise nothing, so their points rest on the kernel's word (default: they fail (f))")
    grading_options(p, workers=max(1, min(4, os.cpu_count() or 1)))
    p = subcommand("demo", cmd_demo, "build, release, grade the bundled example class, write feedback and CSV")
    p.add_argument("--all", action="store_true", help="every notebook (default: the first two, a few minutes)")
    p.add_argument("--assignment", action="append", default=None, metavar="NAME",
                   help="only this notebook of the example class (repeatable), e.g. 04_gpu on a GPU machine")
    p.add_argument("--course", type=Path, default=None, help=COURSE_HELP)
    grading_options(p, workers=max(1, min(4, os.cpu_count() or 1)), cluster=False)
    p = subcommand("report", cmd_report, "the class report: HTML page and figures in ROOT/report/ (grades unchanged)")
    p.add_argument("--student", default=None, help="one student's progress across the course")
    p = subcommand("similarity", cmd_similarity, "pairs of students whose answers are too alike (grades unchanged)")
    p.add_argument("assignment", help="the assignment whose submissions are compared")
    p = subcommand("lab", cmd_lab, "JupyterLab on the released student notebooks (--instructor: sources + formgrader)")
    p.add_argument("--instructor", action="store_true",
                   help="the instructor's lab: the course sources and formgrader on the course directory "
                        "(default: the student's lab on build/student/)")
    p.add_argument("--course", type=Path, default=None, help=COURSE_HELP)
    return top


# The commands that act on a course that `build` made: on any other folder (a mistyped --root, `release` before
# `build`) they stop before writing anything there. `lab` builds only the default course (`make lab` on a fresh
# clone); `demo`, `check` and `validate` need no course directory.
NEEDS_COURSE = {"release", "collect", "autograde", "feedback", "release-feedback", "export", "report", "similarity"}


def needs_course(args) -> bool:
    """Whether ``args`` names a command that must find a built course at ``--root``."""
    if args.command == "lab":
        return Path(args.root).resolve() != DEFAULT_ROOT.resolve()
    return args.command in NEEDS_COURSE


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    from .engine.isolation.sandbox import SandboxUnavailable

    try:
        if needs_course(args):
            assignments(args.root)  # GraderError: not a course, run build first
        return args.func(args)
    except (GraderError, SandboxUnavailable) as error:
        print(f"course-grader {args.command}: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted; run the same command again to continue where it stopped", file=sys.stderr)
        return 130
    finally:
        _note_cgroup_changes()


def _note_cgroup_changes() -> None:
    """Say what this command changed in a control group outside the grader's own (release, autograde, check
    and demo look when they make kernel groups): its other groups get those controllers too."""
    from .engine.isolation.cgroups import cgroup_changes

    if cgroup_changes():
        print(f"note: {cgroup_changes()}", file=sys.stderr)
