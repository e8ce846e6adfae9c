"""Grade one assignment of any nbgrader course with stock nbgrader and with course-grader; compare the gradebooks.

    python scripts/compare_with_stock.py COURSE ASSIGNMENT [--keep DIR]

COURSE is a course in nbgrader's layout, as ``course-grader build --course`` reads it (a folder of assignment
folders with an optional header.ipynb, or an nbgrader course root: nbgrader_config.py beside source/). Each
student of tests/conformance_corpus.py's VARIANTS (solution, release unchanged, partly right, an answer cell
deleted, ...) hands in every notebook of ASSIGNMENT, made from stock nbgrader's release of it. Stock nbgrader
(``nbgrader autograde``) and course-grader (build, release, collect, autograde: its command line, as an
instructor runs it) grade the same notebooks in a temporary folder. Printed: rows compared (every grade cell of
every submission: auto score, manual score, max score, needs manual grading), the rows that differ, lines of
either grader's output that hold a Python warning, and each grader's autograde wall time.

Only the course's id and header are taken from COURSE/nbgrader_config.py (course-grader build does not run
it; nor does this script), and the course's ClearSolutions / ClearHiddenTests literal settings, given to both.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests")]

import nbformat  # noqa: E402

from conformance_corpus import VARIANTS, submission  # noqa: E402
from grader.authoring.nbcourse import SKIPPED, config_literals, read_layout  # noqa: E402

SECRET = "c0ffee" * 10 + "beef"
WHEN = "2026-11-20 10:00:00.000000 UTC"
NBGRADER = "import sys; from nbgrader.apps.nbgraderapp import main; sys.exit(main())"
WARNING = re.compile(r"\w*Warning\b")
# what the students' change does to a test row, where course-grader differs on purpose (README, THREAT_MODEL.md)
DELIBERATE = {"notest": "deleted test cell: course-grader runs the instructor's (THREAT_MODEL.md 1)",
              "reordered": "moved answer cell: course-grader puts it back by grade_id (THREAT_MODEL.md)"}


def run(args: list[str], cwd: Path, env: dict | None = None) -> tuple[float, str]:
    """Run a command; fail with its output on an error; return (seconds, stdout + stderr)."""
    start = time.perf_counter()
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=3600)
    took = time.perf_counter() - start
    if done.returncode:
        sys.exit(f"{' '.join(args)} failed ({done.returncode}):\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    return took, done.stdout + done.stderr


def clean_env() -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COURSE_GRADER", "NBGRADER"))}
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    return env


def course_config(course_id: str, header: bool, settings: dict[str, str]) -> str:
    lines = ["c = get_config()  # noqa: F821", f"c.CourseDirectory.course_id = {course_id!r}"]
    if header:
        lines.append("c.IncludeHeaderFooter.header = 'source/header.ipynb'")
    lines += [f"c.{key} = {value!r}" for key, value in settings.items()]
    return "\n".join(lines) + "\n"


def delimiter_settings(course: Path) -> dict:
    """The course's literal ClearSolutions / ClearHiddenTests settings (delimiters, stubs), read without running
    its nbgrader_config.py."""
    from grader.authoring.nbcourse import DELIMITER_KEYS

    config = course / "nbgrader_config.py"
    return {key: value for key, value in config_literals(config)[0].items() if key in DELIMITER_KEYS}


def prepare(course: Path, assignment: str, base: Path) -> tuple[Path, Path, Path]:
    """(stock's course root, released; the course folder course-grader builds from; an exchange)."""
    layout = read_layout(course)
    if layout is None or assignment not in layout.assignments:
        sys.exit(f"{course} has no assignment folder {assignment!r} in nbgrader's layout")
    course_id = layout.course_id or "conform"
    settings = delimiter_settings(course)
    ignore = shutil.ignore_patterns(".*", *SKIPPED)
    stock, ours = base / "stock", base / "course-source"
    for folder in (stock / "source", ours):
        shutil.copytree(layout.assignments[assignment], folder / assignment, ignore=ignore)
        if layout.header:
            shutil.copyfile(layout.header, folder / "header.ipynb")
    (stock / "nbgrader_config.py").write_text(course_config(course_id, bool(layout.header), settings))
    (ours / "nbgrader_config.py").write_text(course_config(course_id, False, settings))  # header.ipynb beside
    run([sys.executable, "-c", NBGRADER, "generate_assignment", assignment, "--force"], stock, clean_env())
    return stock, ours, base / "exchange"


def write_submissions(source: Path, release: Path, submitted: Path, exchange: Path, assignment: str,
                      variants: tuple[str, ...] = VARIANTS) -> None:
    """Each of ``variants``' students' notebooks (default: every kind of VARIANTS), made from stock's release, into stock's submitted/ and an exchange.
    (Stock's IncludeHeaderFooter releases a notebook older than nbformat 4.5 under a 4.5 header as 4.5 with
    cells without ids; nbformat warns when it is written here: a warning of neither grader, not shown.)"""
    import warnings

    warnings.filterwarnings("ignore", message="Cell is missing an id field")
    for student in variants:
        folders = [submitted / student / assignment, exchange / "inbound" / f"{student}+{assignment}+{WHEN}"]
        for folder in folders:
            folder.mkdir(parents=True)
            (folder / "timestamp.txt").write_text(WHEN)
        (folders[1] / "submission_secret.txt").write_text(SECRET)
        for path in sorted(release.glob("*.ipynb")):
            released = nbformat.read(path, as_version=nbformat.NO_CONVERT)
            handed_in = submission(student, released, nbformat.read(source / path.name, as_version=4))
            for folder in folders:
                nbformat.write(handed_in, folder / path.name, version=4)


def gradebook(root: Path, assignment: str) -> dict[tuple, tuple]:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        return {(s.student.id, nb.name, g.name): (g.auto_score, g.manual_score, g.max_score,
                                                  bool(g.needs_manual_grade))
                for s in gb.assignment_submissions(assignment) for nb in s.notebooks for g in nb.grades}


def why(stock: Path, assignment: str, key: tuple) -> str:
    """The listed deliberate difference a differing row is, by what the student did or by stock's graded cell
    (a test that printed on stderr and raised nothing); else 'NOT a listed deliberate difference'."""
    student, notebook, grade_id = key
    if student in DELIBERATE:
        return DELIBERATE[student]
    graded = stock / "autograded" / student / assignment / f"{notebook}.ipynb"
    cell = next((c for c in nbformat.read(graded, as_version=4).cells
                 if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id), None) if graded.exists() else None
    kinds = {(o.output_type, o.get("name")) for o in cell.get("outputs", [])} if cell else set()
    if ("stream", "stderr") in kinds and not any(kind == "error" for kind, _ in kinds):
        return "the test printed on stderr and raised nothing: stock scores it 0, course-grader keeps the points (README)"
    return "NOT a listed deliberate difference"


def warnings_in(output: str) -> list[str]:
    return sorted({line.strip() for line in output.splitlines() if WARNING.search(line)})


def compare(course: Path, assignment: str, base: Path, workers: int = 2,
            variants: tuple[str, ...] = VARIANTS) -> dict:
    """Grade ``assignment`` of ``course`` both ways under ``base``, one student per kind of submission in
    ``variants``; return the figures (see :func:`main`)."""
    stock, ours, exchange = prepare(course, assignment, base)
    write_submissions(stock / "source" / assignment, stock / "release" / assignment, stock / "submitted",
                      exchange, assignment, variants)
    stock_s, stock_out = run([sys.executable, "-c", NBGRADER, "autograde", assignment, "--create"], stock,
                             clean_env())
    env = {**clean_env(), "PYTHONPATH": str(REPO)}
    cg = [sys.executable, "-m", "grader"]
    root = base / "course"
    _, build_out = run([*cg, "build", "--root", str(root), "--course", str(ours)], base, env)
    _, release_out = run([*cg, "release", "--root", str(root)], base, env)
    _, collect_out = run([*cg, "collect", str(exchange), "--no-check-owner", "--root", str(root)], base, env)
    ours_s, ours_out = run([*cg, "autograde", "--root", str(root), "--workers", str(workers)], base, env)
    theirs, mine = gradebook(stock, assignment), gradebook(root, assignment)
    keys = sorted(set(theirs) | set(mine))
    differing = {key: (theirs.get(key), mine.get(key), why(stock, assignment, key))
                 for key in keys if theirs.get(key) != mine.get(key)}
    return {"rows": len(keys), "differing": differing, "stock_s": stock_s, "ours_s": ours_s,
            "stock_warnings": warnings_in(stock_out),
            "our_warnings": warnings_in(build_out + release_out + collect_out + ours_out)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("course", type=Path)
    parser.add_argument("assignment")
    parser.add_argument("--keep", type=Path, help="grade in this (new) folder and keep it (default: a temporary one)")
    parser.add_argument("--workers", type=int, default=2, help="course-grader's kernels (default 2; stock: 1)")
    args = parser.parse_args(argv)
    base = args.keep or Path(tempfile.mkdtemp(prefix="compare-with-stock-"))
    base.mkdir(parents=True, exist_ok=True)
    try:
        found = compare(args.course.resolve(), args.assignment, base.resolve(), args.workers)
    finally:
        if args.keep is None:
            shutil.rmtree(base, ignore_errors=True)
    print(f"{args.course} {args.assignment}: {found['rows']} rows compared, {len(found['differing'])} differ")
    for key, (theirs, mine, reason) in found["differing"].items():
        print(f"  {'/'.join(key)}: stock {theirs}, course-grader {mine}  [{reason}]")
    for who in ("stock", "our"):
        for line in found[f"{who}_warnings"]:
            print(f"  warning in {'stock nbgrader' if who == 'stock' else 'course-grader'}'s output: {line}")
    print(f"autograde wall time: stock nbgrader {found['stock_s']:.1f} s (one kernel), "
          f"course-grader {found['ours_s']:.1f} s ({args.workers} workers)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
