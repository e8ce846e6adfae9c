"""The class report and the similarity check on a generated class of 1,000 students x 6 notebooks.

The class is written by :mod:`synthetic_class` (a real nbgrader gradebook, markers, references and
submitted notebooks; no kernel runs). Goals (issue 18): the report in under 30 s, the similarity
check of all six notebooks in minutes, on this 2-core machine. One run each (they take seconds to
minutes; ``BENCH_REPEATS`` repeats the report and keeps the median).
"""
from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

STUDENTS, NOTEBOOKS = 1000, 6


def main() -> str:
    from synthetic_class import synthetic_class

    from grader.authoring.coursedir import CourseDir
    from grader.results.report import write_report
    from grader.results.similarity_check import check_assignment
    from grader.results.similarity_page import write_similarity_page

    os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"  # nbgrader's alembic
    with tempfile.TemporaryDirectory(prefix="bench-report-") as tmp:
        root = Path(os.environ.get("BENCH_REPORT_CLASS") or tmp)  # a class this bench generated before
        start = time.perf_counter()
        if not (root / "gradebook.db").is_file():
            synthetic_class(root, STUDENTS, NOTEBOOKS, seed=0, plants={"copy": [("s0010", "s0500")], "d2lite": "s0042"})
        info = {"assignments": [f"{n + 1:02d}_nb" for n in range(NOTEBOOKS)]}
        generated = time.perf_counter() - start
        course = CourseDir(root)
        report = []
        for _ in range(int(os.environ.get("BENCH_REPEATS", "1"))):
            start = time.perf_counter()
            write_report(course)
            report.append(time.perf_counter() - start)
        sims, flagged, pairs = [], 0, 0
        for name in info["assignments"]:
            start = time.perf_counter()
            result = check_assignment(course, name)
            write_similarity_page(course, result)
            sims.append(time.perf_counter() - start)
            flagged += len(result.flagged)
            pairs += len(result.pairs)
    report_s, sim_s = statistics.median(report), sum(sims)
    return "\n".join([
        "## Class report and similarity check (issue 18)",
        "",
        f"<!-- headline: class report, {STUDENTS} students x {NOTEBOOKS} notebooks | {report_s:.1f} s | < 30 s -->",
        f"<!-- headline: similarity check, {STUDENTS} students x {NOTEBOOKS} notebooks | {sim_s:.0f} s | minutes -->",
        "| step | seconds |",
        "| --- | ---: |",
        f"| generate the graded class (gradebook, {STUDENTS * NOTEBOOKS} markers and notebooks; not timed by the goal) "
        f"| {generated:.1f} |",
        f"| `course-grader report` (gradebook + markers -> HTML and {2 * NOTEBOOKS + 1} PNG figures) | {report_s:.1f} |",
        f"| `course-grader similarity`, all {NOTEBOOKS} notebooks (8 answer cells each) | {sim_s:.1f} |",
        f"| similarity, slowest notebook | {max(sims):.1f} |",
        "",
        f"{pairs} candidate pairs scored in full (those sharing a rare fingerprint) out of "
        f"{NOTEBOOKS * 8 * STUDENTS * (STUDENTS - 1) // 2:,} pairs of answers; {flagged} flagged "
        "(the class has one planted copier, who copies all 7 long answers of every notebook).",
    ])


if __name__ == "__main__":
    print(main())
