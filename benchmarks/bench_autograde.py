"""Autograde throughput: `course-grader autograde --workers 2` against stock `nbgrader autograde`.

A class of ten students (``BENCH_AUTOGRADE_STUDENTS``, default 10), each submitting every course
notebook (50 submissions), generated from the source notebooks by grade_id in a temporary course
directory (:data:`STUDENTS` says how each student's notebooks are made). The first five are the
original small class (full, release, two halves, mistakes); the other five solve other mixes of
exercises, so the class is not the same five notebooks twice.

The class is built, released and collected once with course-grader's command line, then copied,
so both graders see the same course directory. Each repeat grades a fresh copy with each grader:

- ours: ``course-grader autograde --workers 2`` (sandboxed kernels). ``course-grader release`` ran
  each solution notebook once for its reference values (sealed in the course, copied with it), so
  autograde starts grading at once;
- ours without them: the same on a copy without ``references/`` (as released with
  ``--no-references``): autograde runs each solution first, each assignment's submissions starting
  as soon as its own reference run is done. Reported beside the headline, with the release's wall
  time with and without its reference runs;
- stock: ``nbgrader autograde <assignment>`` for each notebook, one after the other, with the
  course's ``nbgrader_config.py`` (600 s per cell; nbgrader sets ``NBGRADER_EXECUTION`` itself).

Both get ``D2LITE_DATASET=mnist5k``. We report median wall seconds, the ratio, submissions per
minute, and compare every per-student, per-notebook score (and every test cell's score) read
from the two gradebooks with ``nbgrader.api.Gradebook``; each difference names both verdicts.

The class is graded whole, and again with only its first five students (the same course with the
other students' submissions removed): course-grader's one-time reference runs weigh more in a
smaller class, so both sizes are measured side by side and reported.

Environment: ``BENCH_AUTOGRADE_STUDENTS`` (class sizes, comma-separated, default ``10,5``: the first N
of :data:`STUDENTS`; at least 4 for the benchmark's minimum of 20 submissions), ``BENCH_AUTOGRADE_REPEATS`` (default 1: one repeat takes many minutes on 2 cores),
``BENCH_AUTOGRADE_NOTEBOOKS`` (comma-separated assignment ids, default every notebook; for a
quicker development run), ``BENCH_AUTOGRADE_WARM=1`` (also time ``autograde --force`` on the graded
copy, whose reference values are cached: the steady-state throughput; off by default for time),
``BENCH_AUTOGRADE_KEEP=DIR`` (work in DIR and leave the graded courses there).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat

from grader.engine.notebook.cells import exercises, nbgrader_meta
from grader.engine.verdict.references import References
from grader.engine.isolation.sandbox import sandbox_status

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
REPEATS = int(os.environ.get("BENCH_AUTOGRADE_REPEATS", "1"))
WARM = os.environ.get("BENCH_AUTOGRADE_WARM", "0") == "1"
ONLY = [a for a in os.environ.get("BENCH_AUTOGRADE_NOTEBOOKS", "").split(",") if a]
WORKERS = 2
GOAL = 3.0  # issue 32: at least 3x stock nbgrader on 2 cores

# assignment -> grade_id of a solution cell -> (correct text, mistaken text)
MISTAKES = {
    "01_tensors": {"pairwise_distances": ("X[:, None, :] - Y[None, :, :]", "Y[:, None, :] - X[None, :, :]")},
    "02_autograd": {"sgd_step": ("            p.grad.zero_()\n", "")},
    "03_modules": {"count_solution": ("param.numel() for param", "1 for param")},
    "04_gpu": {"count_correct": ("(logits.argmax(dim=1) == y).sum()", "(logits.argmax(dim=1) == y).float().sum()")},
    "05_multigpu": {"allreduce": ("data[i].copy_(data[0].to(data[i].device))", "pass")},
}
# student -> how each of their notebooks is made (exercises are counted from 1)
STUDENTS = {
    "full": "every exercise solved (the instructor's solutions)",
    "release": "the untouched student version",
    "first_half": "only the first half of the exercises solved",
    "second_half": "only the second half of the exercises solved",
    "mistakes": "every exercise solved, with one typical mistake per notebook (MISTAKES)",
    "odd": "exercises 1, 3, 5, ... solved",
    "even": "exercises 2, 4, 6, ... solved",
    "all_but_first": "every exercise but the first solved",
    "all_but_last": "every exercise but the last solved",
    "mistakes_first_half": "the first half solved, with the notebook's typical mistake if it falls there",
}
SIZES = sorted({int(n) for n in os.environ.get("BENCH_AUTOGRADE_STUDENTS", "10,5").split(",") if n}, reverse=True)
CLASS = list(STUDENTS)[: SIZES[0]]


# -- the class ----------------------------------------------------------------------------------

def _mix(source, released, unsolved: set[str]):
    """The source notebook with the solution cells in ``unsolved`` taken from the release."""
    stubs = {nbgrader_meta(c).get("grade_id"): c for c in released.cells if nbgrader_meta(c).get("solution")}
    nb = nbformat.from_dict(json.loads(json.dumps(source)))
    nb.cells = [stubs[nbgrader_meta(c)["grade_id"]] if nbgrader_meta(c).get("grade_id") in unsolved else c for c in nb.cells]
    return nb


def _mistaken(source, assignment: str) -> tuple[object, list[str]]:
    nb = nbformat.from_dict(json.loads(json.dumps(source)))
    applied = []
    for cell in nb.cells:
        old, new = MISTAKES.get(assignment, {}).get(nbgrader_meta(cell).get("grade_id"), (None, None))
        if old and old in cell.source:
            cell.source = cell.source.replace(old, new)
            applied.append(nbgrader_meta(cell)["grade_id"])
    return nb, applied


def _notebook(student: str, source, released, mistaken, groups: list[list[str]]):
    """One student's notebook (see STUDENTS)."""
    n = len(groups)
    unsolved = {"full": [], "mistakes": [], "first_half": range(n // 2, n), "second_half": range(n // 2),
                "odd": range(1, n, 2), "even": range(0, n, 2), "all_but_first": [0], "all_but_last": [n - 1],
                "mistakes_first_half": range(n // 2, n)}
    if student == "release":
        return released
    base = mistaken if student.startswith("mistakes") else source
    return _mix(base, released, {gid for i in unsolved[student] for gid in groups[i]})


def write_class(course: Path, inbox: Path, assignments: list[str]) -> list[str]:
    """One folder per student in ``inbox``; returns the mistakes actually applied."""
    applied_all = []
    for assignment in assignments:
        source = nbformat.read(course / "source" / assignment / f"{assignment}.ipynb", as_version=4)
        released = nbformat.read(course / "release" / assignment / f"{assignment}.ipynb", as_version=4)
        groups = [list(exercise.solution_ids) for exercise in exercises(source)]
        mistaken, applied = _mistaken(source, assignment)
        applied_all += [f"{assignment}/{gid}" for gid in applied]
        notebooks = {student: _notebook(student, source, released, mistaken, groups) for student in CLASS}
        for student, nb in notebooks.items():
            path = inbox / student / f"{assignment}.ipynb"
            path.parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(nb, str(path))
    return applied_all


# -- running the graders ------------------------------------------------------------------------

def _env(**extra: str) -> dict[str, str]:
    return dict(os.environ, D2LITE_DATASET="mnist5k", PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
                **extra)


def _run(args: list, cwd: Path, **extra: str) -> str:
    done = subprocess.run([str(a) for a in args], cwd=cwd, env=_env(**extra), capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(map(str, args))} failed ({done.returncode}):\n"
                         f"{(done.stdout + done.stderr)[-3000:]}")
    return done.stdout + done.stderr


def course_grader(root: Path, *args) -> str:
    return _run([sys.executable, "-m", "grader", "--root", root, *args], cwd=ROOT)


def prepare(tmp: Path, flags: list[str]) -> tuple[Path, list[str], list[str], dict[str, float]]:
    """Build, release and collect the class; returns the course directory, assignments, mistakes and
    the release's wall seconds: ``plain`` (nbgrader's generate and release alone) and ``references``
    (the same with the reference runs, as `course-grader release` does by default)."""
    course = tmp / "prepared"
    course_grader(course, "build", "--course", ROOT / "course")
    names = sorted(p.name for p in (course / "source").iterdir() if not ONLY or p.name in ONLY)
    if not names:
        raise SystemExit(f"BENCH_AUTOGRADE_NOTEBOOKS={','.join(ONLY)} matches no course notebook")
    release = {}
    course_grader(course, "release", *names, "--no-references", "--quiet")  # the gradebook and exchange made
    for kind, extra in (("plain", ["--no-references"]), ("references", [])):  # then the same work, +/- the runs
        start = time.perf_counter()
        course_grader(course, "release", *names, "--workers", WORKERS, "--quiet", *extra, *flags)
        release[kind] = time.perf_counter() - start
    applied = write_class(course, tmp / "inbox", names)
    course_grader(course, "collect", tmp / "inbox")
    return course, names, applied, release


def sandbox_flag() -> list[str]:
    """``--unsafe`` only where this machine cannot isolate kernels (then the table says so)."""
    return [] if sandbox_status()[0] else ["--unsafe"]


def time_ours(course: Path, flags: list[str]) -> float:
    start = time.perf_counter()
    course_grader(course, "autograde", "--workers", WORKERS, "--quiet", *flags)
    return time.perf_counter() - start


def time_ours_warm(course: Path, flags: list[str]) -> float:
    """Regrade everything (``--force``) where the reference values are already cached."""
    start = time.perf_counter()
    course_grader(course, "autograde", "--workers", WORKERS, "--quiet", "--force", *flags)
    return time.perf_counter() - start


def installed_d2lite(tmp: Path) -> Path:
    """A copy of the d2lite package alone, as a non-editable install would have it.

    With the editable install of this checkout, stock nbgrader's kernels could reach files of the
    checkout's ``course/`` folder (05_multigpu looks there for ``ddp_lenet.py``) that our sandboxed
    kernels cannot see. Putting this copy first on PYTHONPATH gives both graders' kernels only what
    the course ships with each assignment, so both do the same work.
    """
    target = tmp / "site" / "d2lite"
    if not target.exists():
        shutil.copytree(ROOT / "d2lite", target, ignore=shutil.ignore_patterns("__pycache__"))
    return target.parent


def time_stock(course: Path, names: list[str], site: Path) -> float:
    start = time.perf_counter()
    for assignment in names:
        _run([BIN / "nbgrader", "autograde", assignment], cwd=course, PYTHONPATH=str(site),
             COURSE_GRADER_ALLOW_UNSANDBOXED="1")  # the course refuses stock autograde without it
    return time.perf_counter() - start


# -- comparing the gradebooks -------------------------------------------------------------------

def reference_seconds(course: Path, names: list[str]) -> dict[str, float]:
    """How long each trusted reference run took, as course-grader recorded it."""
    return {name: References.load(course / "references" / f"{name}.json").seconds for name in names}


def _course_id(course: Path) -> str:
    match = re.search(r"course_id\s*=\s*['\"]([^'\"]+)", (course / "nbgrader_config.py").read_text())
    return match.group(1) if match else "default_course"


def cell_scores(course: Path, names: list[str]) -> dict[tuple[str, str, str], float | None]:
    """(student, assignment, grade_id) -> score in the gradebook (None: no graded submission)."""
    from nbgrader.api import Gradebook, MissingEntry

    scores = {}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", _course_id(course)) as gb:
        for assignment in names:
            for student in CLASS:
                try:
                    notebook = gb.find_submission_notebook(assignment, assignment, student)
                except MissingEntry:
                    cells = [c.name for c in gb.find_notebook(assignment, assignment).grade_cells]
                    scores.update({(student, assignment, gid): None for gid in cells})
                    continue
                scores.update({(student, assignment, g.name): g.score for g in notebook.grades})
    return scores


def _ours_reason(course: Path, student: str, assignment: str, gid: str) -> str:
    from grader.authoring.coursedir import CourseDir

    try:
        outcome = CourseDir(course).outcome(student, assignment)
    except (KeyError, TypeError):  # a damaged marker
        outcome = None
    test = next((t for t in outcome.tests if t.grade_id == gid), None) if outcome is not None else None
    return f"{test.status}: {test.reason}" if test is not None else "no verdict recorded"


def _stock_reason(course: Path, student: str, assignment: str, gid: str) -> str:
    try:
        nb = nbformat.read(course / "autograded" / student / assignment / f"{assignment}.ipynb", as_version=4)
    except OSError:
        return "not autograded (see nbgrader's log)"
    cell = next((c for c in nb.cells if nbgrader_meta(c).get("grade_id") == gid), None)
    for out in (cell.outputs if cell is not None else []):
        if out.output_type == "error":
            return f"raised {out.ename}: {out.evalue.splitlines()[0] if out.evalue else ''}"[:160]
        if out.output_type == "execute_result":
            shown = out.get("data", {}).get("text/plain", "")
            try:
                float(shown)
            except ValueError:
                continue
            return (f"its last expression showed {shown}, which nbgrader takes as the cell's score "
                    "(partial credit)")
        if out.output_type == "stream" and out.name == "stderr":
            return f"printed to stderr: {out.text.strip().splitlines()[0] if out.text.strip() else ''}"[:160]
    return "ran without an error"


def differences(ours: Path, stock: Path, names: list[str]) -> list[str]:
    a, b = cell_scores(ours, names), cell_scores(stock, names)
    lines = []
    for key in sorted(set(a) | set(b)):
        if a.get(key) != b.get(key):
            student, assignment, gid = key
            lines.append(f"`{student}` / `{assignment}` / `{gid}`: ours {a.get(key)} "
                         f"({_ours_reason(ours, *key)}), stock {b.get(key)} ({_stock_reason(stock, *key)})")
    return lines


def totals(course: Path, names: list[str]) -> dict[tuple[str, str], float | None]:
    out: dict[tuple[str, str], float | None] = {}
    for (student, assignment, _), score in cell_scores(course, names).items():
        prev = out.get((student, assignment), 0.0)
        out[(student, assignment)] = None if score is None or prev is None else prev + score
    return out


# -- the section --------------------------------------------------------------------------------

def with_first_students(prepared: Path, target: Path, count: int, references: bool = True) -> Path:
    """A copy of the collected course that holds only the first ``count`` students' submissions (without
    the release's reference values unless ``references``)."""
    shutil.copytree(prepared, target)
    for student in CLASS[count:]:
        shutil.rmtree(target / "submitted" / student, ignore_errors=True)
    if not references:
        shutil.rmtree(target / "references")
    return target


def measure(tmp: Path, prepared: Path, names: list[str], size: int, flags: list[str], site: Path) -> dict:
    """Time both graders on the first ``size`` students, alternating which goes first."""
    walls: dict[str, list[float]] = {"ours": [], "stock": [], "cold": [], "warm": []}
    for repeat in range(REPEATS):
        order = ("ours", "stock", "cold") if repeat % 2 == 0 else ("cold", "stock", "ours")
        for who in order:  # alternate which goes first, so drift in the machine's load evens out
            course = tmp / f"{size}-{who}-{repeat}"
            if course.exists():
                shutil.rmtree(course)
            with_first_students(prepared, course, size, references=who != "cold")
            wall = time_stock(course, names, site) if who == "stock" else time_ours(course, flags)
            walls[who].append(wall)
            print(f"  {size} students, repeat {repeat + 1}/{REPEATS}: {who} {wall:.0f} s", file=sys.stderr, flush=True)
            if who == "ours" and WARM:
                walls["warm"].append(time_ours_warm(course, flags))
                print(f"  {size} students, repeat {repeat + 1}/{REPEATS}: warm {walls['warm'][-1]:.0f} s",
                      file=sys.stderr, flush=True)
    last = REPEATS - 1
    ours_course, stock_course = tmp / f"{size}-ours-{last}", tmp / f"{size}-stock-{last}"
    ours, stock, cold = (statistics.median(walls[who]) for who in ("ours", "stock", "cold"))
    return {"size": size, "n": size * len(names), "walls": walls, "ours": ours, "stock": stock, "cold": cold,
            "ratio": stock / ours, "counted": stock / cold,
            "diffs": differences(ours_course, stock_course, names) + [  # the same verdicts, whoever ran the solutions
                f"(without the release's reference values) {line}"
                for line in differences(tmp / f"{size}-cold-{last}", stock_course, names)],
            "ours_totals": totals(ours_course, names), "stock_totals": totals(stock_course, names),
            "reference_s": reference_seconds(ours_course, names)}


def main() -> str:
    flags = sandbox_flag()
    keep = os.environ.get("BENCH_AUTOGRADE_KEEP")  # a folder to keep the graded courses in, for inspection
    with tempfile.TemporaryDirectory(prefix="bench-autograde-") as tmp_name:
        tmp = Path(keep) if keep else Path(tmp_name)
        prepared, names, applied, release = prepare(tmp, flags)
        shipped = sorted(f"`{p.parent.name}/{p.name}`" for p in (prepared / "source").glob("*/*")
                         if p.is_file() and p.suffix != ".ipynb")
        site = installed_d2lite(tmp)
        runs = [measure(tmp, prepared, names, size, flags, site) for size in SIZES]
    load = os.getloadavg()[0]
    big = runs[0]
    diffs = [line for run in runs for line in run["diffs"]]

    def fmt(score):
        return "-" if score is None else f"{score:g}"

    score_rows = []
    for student in CLASS:
        cells = []
        for assignment in names:
            o, s = big["ours_totals"].get((student, assignment)), big["stock_totals"].get((student, assignment))
            cells.append(fmt(o) if o == s else f"**{fmt(o)} / {fmt(s)}**")
        score_rows.append(f"| `{student}` | " + " | ".join(cells) + " |")
    mode = "sandboxed (bubblewrap)" if not flags else "**--unsafe** (no isolation available on this machine)"
    verdict = ("every per-student, per-notebook score and every test cell's score is identical in the two "
               "gradebooks" if not diffs else
               f"{len(diffs)} test cell score(s) differ between the gradebooks (listed below)")
    others = "".join(f" ({run['n']} submissions: {run['ratio']:.2f}x)" for run in runs[1:])
    rows = []
    for run in runs:
        walls, n = run["walls"], run["n"]
        rows += [
            f"| {run['size']} students, {n} submissions | stock `nbgrader autograde <assignment>`, one notebook after "
            f"the other | {run['stock']:.0f} s | {', '.join(f'{w:.0f}' for w in walls['stock'])} s | "
            f"{n / run['stock'] * 60:.1f} | 1.00x |",
            f"| {run['size']} students, {n} submissions | `course-grader autograde --workers {WORKERS}`, {mode}, "
            f"reference values from the release | {run['ours']:.0f} s | {', '.join(f'{w:.0f}' for w in walls['ours'])} s | "
            f"{n / run['ours'] * 60:.1f} | **{run['ratio']:.2f}x** |",
            f"| {run['size']} students, {n} submissions | the same without the release's reference values "
            f"(`--no-references`): autograde runs the {len(names)} solution{'s' if len(names) > 1 else ''} first | "
            f"{run['cold']:.0f} s | {', '.join(f'{w:.0f}' for w in walls['cold'])} s | {n / run['cold'] * 60:.1f} | "
            f"{run['counted']:.2f}x |",
            *([f"| {run['size']} students, {n} submissions | the same, `--force` regrade with the reference values "
               f"cached | {statistics.median(walls['warm']):.0f} s | {', '.join(f'{w:.0f}' for w in walls['warm'])} s | "
               f"{n / statistics.median(walls['warm']) * 60:.1f} | {run['stock'] / statistics.median(walls['warm']):.2f}x |"]
              if walls["warm"] else []),
        ]
    reference_s = big["reference_s"]
    return "\n".join([
        f"## Autograde throughput: course-grader --workers {WORKERS} vs stock nbgrader (goal: >= {GOAL}x)",
        f"<!-- headline: autograde {big['n']} submissions, course-grader --workers {WORKERS} vs stock nbgrader | "
        f"{big['ratio']:.2f}x faster ({big['counted']:.2f}x when autograde runs the solutions too){others}, "
        f"{len(diffs)} score difference(s) | >= {GOAL}x, identical scores -->",
        "",
        f"A class of {len(CLASS)} students x {len(names)} notebooks = {big['n']} submissions "
        f"({', '.join(names)}), each grader on a fresh copy of the same collected course"
        + "".join(f"; then the same with only the first {run['size']} students ({run['n']} submissions)"
                  for run in runs[1:]) +
        f"; median of {REPEATS} repeat(s) (`BENCH_AUTOGRADE_REPEATS`, default 1). Load average at the end: "
        f"{load:.1f} on {os.cpu_count()} cores. Stock nbgrader runs with the course's `nbgrader_config.py` "
        "(600 s per cell); its kernels import d2lite from a plain copy of the package (as from a "
        "non-editable install), so neither grader's kernels reach into this checkout. Files shipped with "
        f"the assignments ({', '.join(shipped) or 'none'}) are copied next to every graded notebook by both.",
        "",
        "| class | grader | wall (median) | runs | submissions / min | speed-up |",
        "| --- | --- | ---: | --- | ---: | ---: |",
        *rows,
        "",
        f"Scores (points per student and notebook; **ours / stock** where they differ): {verdict}.",
        "",
        "| student | " + " | ".join(f"`{a}`" for a in names) + " |",
        "| --- | " + " | ".join("---:" for _ in names) + " |",
        *score_rows,
        "",
        *([f"- {line}" for line in diffs] + [""] if diffs else []),
        "How each student's notebooks are made: " + "; ".join(f"`{k}`: {STUDENTS[k]}" for k in CLASS) + ". "
        f"Mistakes planted: {', '.join(applied) or 'none found'}.",
        "",
        f"course-grader grades the {big['n']} submissions {big['ratio']:.2f}x as fast as stock nbgrader on this "
        f"machine ({'meets' if big['ratio'] >= GOAL else 'misses'} the {GOAL}x goal)"
        + "".join(f"; {run['n']} submissions {run['ratio']:.2f}x ({'meets' if run['ratio'] >= GOAL else 'misses'} it)"
                  for run in runs[1:]) +
        f"; {big['counted']:.2f}x ({'meets' if big['counted'] >= GOAL else 'misses'} it) on a course released "
        "with `--no-references`, where autograde runs each solution first. Both execute each submission "
        "once, in a fresh kernel; course-grader runs two sandboxed kernels at a time where nbgrader runs one. "
        "Each solution notebook runs once in a trusted kernel for its reference values "
        f"({' + '.join(f'{v:.0f}' for v in reference_s.values())} = {sum(reference_s.values()):.0f} s of kernel "
        f"time here): `course-grader release` does it (the release took {release['references']:.0f} s with them, "
        f"{release['plain']:.0f} s with `--no-references`), before students hand anything in, and autograde "
        "reuses the sealed values until a source changes (a course released with `--no-references` has "
        "autograde run them first). The longest notebooks are graded first, and the two kernels get one "
        "core's worth of torch threads each.",
    ])


if __name__ == "__main__":
    print(main())
