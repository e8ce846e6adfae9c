"""``course-grader similarity ASSIGNMENT``: pairs of students whose answers are too alike.

Only the answer cells are compared (nbgrader solution cells, by grade_id), each exercise on its
own, after removing what the released template already holds. Fingerprints: :mod:`grader.results.similarity`.

How unusual a pair is, per exercise: its IDF-weighted Jaccard similarity (a fingerprint that half
the class shares weighs little) as a z-score against the similarities of all pairs of that
exercise (a random sample of 2,000 pairs when there are more). A short exercise has few ways to be
right, so its pairs are alike on average and only an outlier stands out; and no pair is flagged
whose shorter answer has fewer than ``min_tokens`` tokens. Candidates come from an inverted
index (fingerprint -> students): each answer proposes the students who share one of its 10 rarest
fingerprints (held by at most a tenth of the class, or 5 students); pairs that share two of them
are scored in full. The work grows with the class, not with the square of it. (A copy of only a small part of
an answer can be missed when its rarest fingerprints lie elsewhere.)

Each answer is also compared with the instructor's solution (source notebook) and with the
functions of ``d2lite``. Nothing here reads or writes a grade.

    result = check_assignment(CourseDir(root), "01_tensors")
    result.pairs[0].a, result.pairs[0].b, result.pairs[0].z, result.pairs[0].flagged
"""
from __future__ import annotations

import math
import random
from bisect import bisect_left
from collections import Counter
from functools import lru_cache
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path

from ..authoring.coursedir import CourseDir
from .similarity import Fingerprint, containment, fingerprint, weighted_jaccard

__all__ = ["Pair", "SourceMatch", "SimilarityResult", "check_assignment", "answers_of", "d2lite_index"]

Z_FLAG = 4.0          # flag a pair this many standard deviations above the exercise's mean
MIN_SIMILARITY = 0.5  # ... and at least this alike
MIN_TOKENS = 40       # ... and whose shorter answer has at least this many normalised tokens
SAMPLE = 2000         # pairs sampled per exercise for the mean and spread
RARE = 0.1            # a fingerprint held by at most this share of the class (or 5 students) is rare
RAREST = 10           # each answer proposes partners through its this many rarest fingerprints
SHARED = 4            # ... and a pair proposed this many times (from both sides: 2 shared) is scored in full
SOURCE_FLAG = 0.7     # share of an answer's fingerprints found in one solution / d2lite function


@dataclass
class Pair:
    exercise: str
    a: str
    b: str
    similarity: float
    z: float
    percentile: float            # share of the exercise's sampled pairs less alike (0..100)
    tokens: int                  # normalised tokens of the shorter answer
    flagged: bool
    lines_a: list[tuple[int, int]] = field(default_factory=list)  # shared regions, 1-based lines
    lines_b: list[tuple[int, int]] = field(default_factory=list)

    @property
    def rank(self) -> float:
        """z weighted by length: a pair of short answers ranks below a long pair as unusual."""
        return self.z * min(1.0, self.tokens / (2 * MIN_TOKENS))


@dataclass
class SourceMatch:
    exercise: str
    student: str
    source: str                  # "the instructor's solution" or "d2lite: module.function"
    share: float                 # of the answer's fingerprints found there
    tokens: int
    flagged: bool


@dataclass
class SimilarityResult:
    assignment: str
    answers: dict[str, dict[str, str]]   # exercise -> student -> answer source
    pairs: list[Pair]                     # candidates, highest rank first
    sources: list[SourceMatch]

    @property
    def flagged(self) -> list[Pair]:
        return [p for p in self.pairs if p.flagged]

    def students(self) -> set[str]:
        """The students whose submission holds at least one answer cell."""
        return {student for by_student in self.answers.values() for student in by_student}


def _exercise(assignment: str, notebook: str, grade_id: str) -> str:
    """An answer cell's name: its grade_id; ``notebook/grade_id`` in an assignment of several notebooks."""
    return grade_id if notebook == assignment else f"{notebook}/{grade_id}"


def _solution_cells(course: CourseDir, assignment: str) -> tuple[dict[str, str], dict[str, str]]:
    """(exercise -> the instructor's solution, exercise -> the released template) of each answer cell, of every
    notebook of the assignment (:func:`_exercise` names them)."""
    from ..engine.notebook import cells as nbs

    def answers(path: Path, notebook: str) -> dict[str, str]:
        nb = nbs.read_notebook(path)
        return {_exercise(assignment, notebook, nbs.nbgrader_meta(c)["grade_id"]): c.source for c in nb.cells
                if nbs.is_solution(c) and not nbs.is_test(c) and c.cell_type == "code"}

    solutions, templates = {}, {}
    for notebook in course.notebooks(assignment):
        mine = answers(course.source_notebook(assignment, notebook), notebook)
        release = course.released_notebook(assignment, notebook)
        solutions |= mine
        templates |= answers(release, notebook) if release.is_file() else \
            {g: nbs.stub_source(s) for g, s in mine.items()}
    return solutions, templates


def answers_of(course: CourseDir, assignment: str, solution_ids: list[str]) -> dict[str, dict[str, str]]:
    """exercise (answer cell grade_id, :func:`_exercise`) -> student -> that cell's source in the submitted notebook."""
    from ..engine.notebook.merge import read_submission

    found: dict[str, dict[str, str]] = {gid: {} for gid in solution_ids}
    for student in course.students():
        for notebook in course.notebooks(assignment):
            cells, _ = read_submission(course.submitted_notebook(student, assignment, notebook))
            for cell in cells or []:
                name = _exercise(assignment, notebook, cell.grade_id)
                if name in found and cell.cell_type == "code" and isinstance(cell.source, str):
                    found[name].setdefault(student, cell.source)
    return found


@lru_cache(maxsize=1)
def d2lite_index() -> dict[str, Fingerprint]:
    """'d2lite: module.function' -> its fingerprint, for every top-level function of the package
    (read as text: the package, and torch, are not imported)."""
    import ast
    from importlib.util import find_spec

    index = {}
    for path in sorted(Path(find_spec("d2lite").origin).parent.glob("*.py")):
        text = path.read_text(encoding="utf-8")
        for node in ast.parse(text).body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                code = "\n".join(text.splitlines()[node.lineno - 1:node.end_lineno])
                index[f"d2lite: {path.stem}.{node.name}"] = fingerprint(code)
    return index


def _regions(hashes: dict[int, list[tuple[int, int]]], shared: set[int]) -> list[tuple[int, int]]:
    return sorted({span for h in shared for span in hashes[h]})


def _exercise_pairs(exercise: str, fps: dict[str, Fingerprint], seed: int) -> list[Pair]:
    students = sorted(s for s, fp in fps.items() if fp.hashes)
    n = len(students)
    if n < 2:
        return []
    postings: dict[int, list[str]] = {}
    for s in students:
        for h in fps[s].hashes:
            postings.setdefault(h, []).append(s)
    weight = {h: math.log(1 + n / len(holders)) for h, holders in postings.items()}
    everyone = list(combinations(students, 2))
    sample = everyone if len(everyone) <= SAMPLE else None
    if sample is None:
        rng = random.Random(seed)
        sample = [tuple(rng.sample(students, 2)) for _ in range(SAMPLE)]
    null = [weighted_jaccard(fps[a].hashes, fps[b].hashes, weight) for a, b in sample]
    mean = sum(null) / len(null)
    spread = max(0.05, math.sqrt(sum((x - mean) ** 2 for x in null) / len(null)))
    rare = max(5, int(RARE * n))  # small classes: a fingerprint of 5 students is still rare
    votes: Counter = Counter()  # at most n * RAREST * rare proposals, whatever the class size
    for s in students:
        for h in sorted(fps[s].hashes, key=lambda h: (len(postings[h]), h))[:RAREST]:
            if len(postings[h]) > rare:
                break
            votes.update((min(s, t), max(s, t)) for t in postings[h] if t != s)
    candidates = [pair for pair, count in votes.items() if count >= SHARED]
    ordered = sorted(null)
    pairs = []
    for a, b in candidates:
        fa, fb = fps[a], fps[b]
        sim = weighted_jaccard(fa.hashes, fb.hashes, weight)
        z = (sim - mean) / spread
        shared = fa.hashes.keys() & fb.hashes.keys()
        tokens = min(fa.tokens, fb.tokens)
        below = bisect_left(ordered, sim)
        pairs.append(Pair(exercise, a, b, sim, z, 100 * below / len(ordered), tokens,
                          z >= Z_FLAG and sim >= MIN_SIMILARITY and tokens >= MIN_TOKENS,
                          _regions(fa.hashes, shared), _regions(fb.hashes, shared)))
    return pairs


def _minus(fp: Fingerprint, template: Fingerprint) -> Fingerprint:
    return Fingerprint({h: v for h, v in fp.hashes.items() if h not in template.hashes}, fp.tokens)


def check_assignment(course: CourseDir, assignment: str) -> SimilarityResult:
    """Compare every pair of submissions of ``assignment``, exercise by exercise (nothing is written)."""
    if not course.notebooks(assignment):
        raise FileNotFoundError(f"no source notebook in {course.source(assignment)}; the assignments "
                                f"of this course are: {', '.join(course.assignments()) or 'none (run build)'}")
    solutions, templates = _solution_cells(course, assignment)
    answers = answers_of(course, assignment, list(solutions))
    library = d2lite_index()
    pairs, sources = [], []
    for seed, (exercise, by_student) in enumerate(answers.items()):
        template = fingerprint(templates.get(exercise, ""))
        solution = _minus(fingerprint(solutions[exercise]), template)
        fps = {s: _minus(fingerprint(code), template) for s, code in by_student.items()}
        pairs += _exercise_pairs(exercise, fps, seed)
        for student, fp in fps.items():
            if not fp.hashes:
                continue
            best = [("the instructor's solution", containment(fp.hashes, solution.hashes))]
            best += [(name, containment(fp.hashes, lib.hashes)) for name, lib in library.items()
                     if lib.hashes.keys() & fp.hashes.keys()]
            name, share = max(best, key=lambda x: x[1])
            if share >= SOURCE_FLAG:
                sources.append(SourceMatch(exercise, student, name, share, fp.tokens, fp.tokens >= MIN_TOKENS))
    pairs.sort(key=lambda p: (-p.rank, p.exercise, p.a, p.b))
    sources.sort(key=lambda m: (not m.flagged, -m.share, m.exercise, m.student))
    return SimilarityResult(assignment, answers, pairs, sources)
