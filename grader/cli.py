"""``course-grader``: the instructor's and the student's command line (printing happens here)."""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from .authoring.assembly import DEFAULT_ROOT, GraderError
from .authoring.coursedir import CourseDir

__all__ = ["main"]

COURSE_HELP = "the folder of source notebooks (default: ./course, else the course/ folder of this checkout)"


def _limits(args, course: bool = True):
    """The limits of a run: the course's nbgrader_config.py and ``--cell-timeout``."""
    from .authoring.config import load_limits
    from .engine.sandbox import Limits

    timeout = getattr(args, "cell_timeout", None)
    if course:
        return load_limits(args.root, timeout)
    return Limits(cell_timeout_s=timeout) if timeout else Limits()


def cmd_build(args) -> int:
    from .authoring.assembly import build

    ids = build(args.root, args.course)
    print(f"built {args.root} with {len(ids)} assignment(s): {', '.join(ids)}")
    return 0


def cmd_release(args) -> int:
    from .authoring.assembly import build, release

    if args.build or not CourseDir(args.root).assignments():
        build(args.root, args.course)
    for path in release(args.root, args.assignment or None):
        print(f"released {path}")
    return 0


def cmd_collect(args) -> int:
    from .engine.outputs import printable
    from .intake.collect import collect

    report = collect(args.root, args.inbox, args.assignment or None, check_owner=args.check_owner)
    for item in report.imported:  # student ids and file names are the students' text: no escapes
        print(printable(f"collected {item.student} / {item.assignment} ({item.timestamp})"))
    for item in report.rejected:
        print(printable(f"REJECTED {item.where}: {item.reason}"))
    print(f"{len(report.imported)} submission(s) collected, {len(report.rejected)} file(s) rejected")
    return 0


def cmd_autograde(args) -> int:
    from .engine.cgroups import cgroup_support
    from .results.table import grade_table
    from .running.batch import ReferenceFailed, autograde

    grouped, why = cgroup_support()
    if not (grouped or args.unsafe or args.scheduler):
        print(f"warning: kernels get no control group ({why}): memory is bounded per process only, CPU by "
              "CPU seconds only, and kernels compete for this machine's CPU and memory "
              "(see grader/THREAT_MODEL.md, section 2)", file=sys.stderr)
    try:
        outcomes = autograde(args.root, assignments=args.assignment or None, students=args.student or None,
                             workers=args.workers, force=args.force, limits=_limits(args), unsafe=args.unsafe,
                             progress=not args.quiet, scheduler=args.scheduler)
    except ReferenceFailed as failure:  # show what was graded, then the error (and a failing exit status)
        print(grade_table(args.root, failure.outcomes, args.student or None))
        raise
    print(grade_table(args.root, outcomes, args.student or None))
    return 0


def cmd_feedback(args) -> int:
    from .results.feedback import feedback

    for path in feedback(args.root, args.assignment or None, args.student or None):
        print(f"feedback {path}")
    return 0


def cmd_export(args) -> int:
    from .results.export import export_csv

    path = export_csv(args.root, args.to)
    print(f"grades written to {path}")
    return 0


def cmd_validate(args) -> int:
    from .authoring.invocation import command
    from .engine.execute import validate

    if args.path.is_dir():
        inside = sorted(p.name for p in args.path.glob("*.ipynb"))
        example = f"{args.path / inside[0]}" if inside else f"{args.path}/NOTEBOOK.ipynb"
        print(f"{args.path} is a folder; validate one notebook in it"
              + (f" ({', '.join(inside)})" if inside else " (it holds no .ipynb file)")
              + f": `{command('validate ' + _quoted(example))}`")
        return 2
    if not args.path.is_file():
        print(f"{args.path} does not exist; pass the path of your notebook, e.g. "
              f"`{command('validate build/student/01_tensors/01_tensors.ipynb')}`")
        return 2
    from .engine.cleanup import scratch_folder

    failed = 0
    with scratch_folder("validate-") as workdir:  # removed whatever the notebook left there
        try:
            results = validate(args.path, workdir=Path(workdir), limits=_limits(args, course=False))
        except ValueError as error:
            print(error)
            return 2
    for result in results:
        ok = result.status == "passed"
        failed += not ok
        print(f"{'PASS' if ok else 'FAIL'}  {result.grade_id}: {result.reason}")
    if not results:
        print("no graded test cells found in this notebook: the locked test cells under each exercise "
              "(they carry nbgrader's metadata) were deleted, or the answers were pasted into a new "
              "notebook. Get a fresh copy of the released notebook, copy your answers into its "
              "answer cells, and validate that copy.")
        return 2
    print(f"{len(results) - failed}/{len(results)} visible checks pass"
          + ("" if not failed else "; fix the failing exercises and validate again"))
    return 1 if failed else 0


def _quoted(path: str) -> str:
    import shlex

    return shlex.quote(path)


def cmd_check(args) -> int:
    from .authoring.assembly import course_folder, course_notebooks
    from .running.gate import check_notebooks

    paths = [nb for p in (args.paths or [course_folder()]) for nb in course_notebooks(p)]
    start = time.monotonic()
    say = (lambda msg: print(f"  ... {msg}", flush=True)) if not args.quiet else None
    reports = check_notebooks(paths, workers=args.workers, limits=_limits(args, course=False), unsafe=args.unsafe,
                              progress=say, scheduler=args.scheduler,
                              thorough=args.thorough)
    for report in reports:
        print(f"{'PASS' if report.ok else 'FAIL'}  {report.notebook}")
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
                    everything=args.all,
                    course=args.course)


def cmd_report(args) -> int:
    from .engine.outputs import printable
    from .results.report import write_report

    try:
        path = write_report(CourseDir(args.root), args.student)
    except (FileNotFoundError, KeyError) as error:  # names student ids: no escape sequence reaches the terminal
        print(printable(f"course-grader report: {error.args[0]}"), file=sys.stderr)
        return 2
    print(f"report written to {path}")
    return 0


def cmd_similarity(args) -> int:
    from .engine.outputs import printable
    from .results.similarity_check import check_assignment
    from .results.similarity_page import write_similarity_page

    try:
        result = check_assignment(CourseDir(args.root), args.assignment)
    except FileNotFoundError as error:
        print(f"course-grader similarity: {error}", file=sys.stderr)
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
    top = argparse.ArgumentParser(prog="course-grader", description=__doc__)
    top.add_argument("--root", type=Path, default=DEFAULT_ROOT,
                     help=f"the nbgrader course directory (default: {DEFAULT_ROOT})")
    sub = top.add_subparsers(dest="command", required=True)

    def command(name, func, help):
        p = sub.add_parser(name, help=help, description=help)
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

    p = command("build", cmd_build, "assemble the nbgrader course directory from course/*.ipynb")
    p.add_argument("--course", type=Path, default=None, help=COURSE_HELP)
    p = command("release", cmd_release, "generate the student versions (nbgrader generate_assignment)")
    p.add_argument("assignment", nargs="*")
    p.add_argument("--course", type=Path, default=None, help=COURSE_HELP)
    p.add_argument("--build", action="store_true", help="rebuild from the course notebooks first")
    p = command("collect", cmd_collect, "import submissions: one folder or zip per student, or an nbgrader exchange")
    p.add_argument("inbox", type=Path)
    p.add_argument("--assignment", action="append", default=[])
    p.add_argument("--no-check-owner", dest="check_owner", action="store_false",
                   help="exchange only: accept submission folders not owned by the student they name "
                        "(for an exchange copied without its owners)")
    p = command("autograde", cmd_autograde, "grade submissions (sandboxed, resumable, idempotent)")
    p.add_argument("--assignment", action="append", default=[])
    p.add_argument("--student", action="append", default=[])
    p.add_argument("--force", action="store_true", help="regrade submissions already graded")
    grading_options(p, workers=max(1, min(4, os.cpu_count() or 1)))
    p = command("feedback", cmd_feedback, "write HTML feedback per student (hidden tests not shown)")
    p.add_argument("--assignment", action="append", default=[])
    p.add_argument("--student", action="append", default=[])
    p = command("export", cmd_export, "write grades as CSV (nbgrader's exporter columns)")
    p.add_argument("--to", type=Path, default=None, help="CSV path (default: ROOT/grades.csv)")
    p = command("validate", cmd_validate, "student self-check: run the visible tests of one notebook")
    p.add_argument("path", type=Path)
    p.add_argument("--cell-timeout", type=float, default=None)
    p = command("check", cmd_check, "course quality gate on source notebooks (default: course/)")
    p.add_argument("paths", type=Path, nargs="*")
    p.add_argument("--thorough", action="store_true",
                   help="(c) with one kernel per exercise on a copy cut after it (default: one kernel per notebook)")
    grading_options(p, workers=max(1, min(4, os.cpu_count() or 1)))
    p = command("demo", cmd_demo, "build, release, grade the bundled example class, write feedback and CSV")
    p.add_argument("--all", action="store_true", help="every notebook (default: the first two, a few minutes)")
    p.add_argument("--course", type=Path, default=None, help=COURSE_HELP)
    grading_options(p, workers=max(1, min(4, os.cpu_count() or 1)), cluster=False)
    p = command("report", cmd_report, "the class report: HTML page and figures in ROOT/report/ (grades unchanged)")
    p.add_argument("--student", default=None, help="one student's progress across the course")
    p = command("similarity", cmd_similarity, "pairs of students whose answers are too alike (grades unchanged)")
    p.add_argument("assignment")
    p = command("lab", cmd_lab, "JupyterLab on the released student notebooks (--instructor: sources + formgrader)")
    p.add_argument("--instructor", action="store_true")
    p.add_argument("--course", type=Path, default=None, help=COURSE_HELP)
    return top


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    from .engine.sandbox import SandboxUnavailable

    try:
        return args.func(args)
    except (GraderError, SandboxUnavailable) as error:
        print(f"course-grader {args.command}: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted; run the same command again to continue where it stopped", file=sys.stderr)
        return 130
