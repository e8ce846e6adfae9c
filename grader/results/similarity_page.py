"""The similarity check's page, ``ROOT/report/similarity-<assignment>.html``: each flagged pair side by
side, the shared regions marked, every answer HTML-escaped (it is the students' text). The class
report (:mod:`grader.results.report`) links to it. Offline: no script, no external resource.

    path = write_similarity_page(CourseDir(root), check_assignment(CourseDir(root), "01_tensors"))
"""
from __future__ import annotations

from html import escape
from pathlib import Path

from ..authoring.coursedir import CourseDir
from .report import STYLE, report_folder
from .similarity_check import MIN_SIMILARITY, MIN_TOKENS, Z_FLAG, Pair, SimilarityResult

__all__ = ["write_similarity_page", "page_name"]

SHOWN = 30  # unflagged pairs listed below the flagged ones, for context


def page_name(assignment: str) -> str:
    return f"similarity-{assignment}.html"


def _code(source: str, regions: list[tuple[int, int]]) -> str:
    """The answer, one line per row, lines inside a shared region marked."""
    marked = {n for first, last in regions for n in range(first, last + 1)}
    rows = []
    for n, line in enumerate(source.splitlines(), 1):
        text = escape(line) or " "
        rows.append(f"<mark>{text}</mark>" if n in marked else text)
    return "<pre>" + "\n".join(rows) + "</pre>"


def _pair(p: Pair, answers: dict[str, dict[str, str]]) -> str:
    a, b = answers[p.exercise][p.a], answers[p.exercise][p.b]
    return (f"<h3>{escape(p.a)} and {escape(p.b)}: <code>{escape(p.exercise)}</code></h3>"
            f"<p>similarity {p.similarity:.2f}, {p.z:.1f} standard deviations above this exercise's pairs "
            f"(more alike than {p.percentile:.1f} % of them); shorter answer {p.tokens} tokens.</p>"
            "<table><tr><th>" + escape(p.a) + "</th><th>" + escape(p.b) + "</th></tr>"
            f"<tr><td>{_code(a, p.lines_a)}</td><td>{_code(b, p.lines_b)}</td></tr></table>")


def _row(p: Pair) -> list[str]:
    return [escape(p.exercise), escape(p.a), escape(p.b), f"{p.similarity:.2f}", f"{p.z:.1f}",
            f"{p.percentile:.1f}", str(p.tokens), "yes" if p.flagged else ""]


def write_similarity_page(course: CourseDir, result: SimilarityResult) -> Path:
    folder = report_folder(course)
    folder.mkdir(parents=True, exist_ok=True)
    flagged = result.flagged
    body = [f"<h1>Answers too alike: {escape(result.assignment)}</h1>",
            f"<p>{sum(len(v) for v in result.answers.values())} answers in {len(result.answers)} answer cells "
            f"compared. A pair is flagged when its similarity is at least {MIN_SIMILARITY}, {Z_FLAG} standard "
            f"deviations above the mean of that exercise's pairs, and the shorter answer has at least "
            f"{MIN_TOKENS} tokens. A flag is a reason to look, not a verdict; no grade was changed.</p>",
            '<p><a href="index.html">back to the class report</a></p>',
            f"<h2>{len(flagged)} flagged pair(s)</h2>"]
    body += [_pair(p, result.answers) for p in flagged]
    rows = [_row(p) for p in result.pairs[:len(flagged) + SHOWN]]
    body.append("<h2>Most unusual pairs (ranked by z-score weighted by length)</h2>")
    head = ["exercise", "student", "student", "similarity", "z", "percentile", "tokens", "flagged"]
    body.append("<table><tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr>"
                + "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows) + "</table>")
    body.append("<h2>Answers that match the instructor's solution or d2lite</h2>")
    short = [m for m in result.sources if not m.flagged]
    if short:
        body.append(f"<p class=note>{len(short)} answer(s) under {MIN_TOKENS} tokens match one too (not flagged: "
                    "a short answer has few ways to be right).</p>")
    flagged_sources = [m for m in result.sources if m.flagged]
    if flagged_sources:
        body.append("<table><tr><th>exercise</th><th>student</th><th>matches</th><th>share</th><th>tokens</th>"
                    "<th>flagged</th></tr>" + "".join(
                        f"<tr><td>{escape(m.exercise)}</td><td>{escape(m.student)}</td><td>{escape(m.source)}</td>"
                        f"<td>{100 * m.share:.0f} %</td><td>{m.tokens}</td><td>{'yes' if m.flagged else ''}</td></tr>"
                        for m in flagged_sources) + "</table>")
    else:
        body.append("<p>none</p>")
    path = folder / page_name(result.assignment)
    path.write_text("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                    f"<title>Similarity: {escape(result.assignment)}</title><style>{STYLE}</style></head><body>\n"
                    + "\n".join(body) + "\n</body></html>\n", encoding="utf-8")
    return path
