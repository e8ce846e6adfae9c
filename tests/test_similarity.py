"""The similarity check on a generated class with planted cases (no kernel runs)."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from grader.authoring.coursedir import CourseDir
from grader.results.similarity import fingerprint, weighted_jaccard
from grader.results.similarity_check import check_assignment
from grader.results.similarity_page import write_similarity_page

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from synthetic_class import SHORT, synthetic_class  # noqa: E402

COPIES = [("s0003", "s0017"), ("s0008", "s0025")]


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"  # nbgrader runs alembic
    root = tmp_path_factory.mktemp("class")
    synthetic_class(root, students=40, notebooks=1, seed=5, plants={"copy": COPIES, "d2lite": "s0030"})
    return CourseDir(root), check_assignment(CourseDir(root), "01_nb")


def test_disguised_copy_has_the_same_fingerprints():
    a = "def f(x, y):\n    # add\n    z = x + y\n    return z.sum(dim=0)\n\ndef g(a):\n    return torch.exp(a) / 2\n"
    b = "def g(q):\n    return torch.exp(q)   /   2\n\n\ndef f(p, r):\n    s = p + r  # sum them\n    return s.sum(dim=0)\n"
    fa, fb = fingerprint(a), fingerprint(b)
    assert fa.hashes.keys() == fb.hashes.keys() and fa.hashes
    assert fingerprint("def f(x):\n    return x.mean(dim=1) * 3 + 1\n").hashes.keys() != fa.hashes.keys()
    assert weighted_jaccard(fa.hashes, fb.hashes, {}) == 1.0


def test_planted_copies_rank_above_every_independent_pair(result):
    _, r = result
    planted = {tuple(sorted(c)) for c in COPIES}
    for exercise in {p.exercise for p in r.pairs}:
        pairs = [p for p in r.pairs if p.exercise == exercise]
        copies = [p for p in pairs if (p.a, p.b) in planted]
        others = [p for p in pairs if (p.a, p.b) not in planted]
        if exercise == "ex0":
            continue
        assert len(copies) == 2, f"{exercise}: planted copies not found among {[(p.a, p.b) for p in pairs][:5]}"
        assert min(p.rank for p in copies) > max((p.rank for p in others), default=-1e9)
        assert all(p.flagged for p in copies) and not any(p.flagged for p in others)


def test_short_exercise_answered_alike_by_many_is_not_flagged(result):
    _, r = result
    assert len(r.answers["ex0"]) > 30 and set(r.answers["ex0"].values()) <= set(SHORT)
    assert not [p for p in r.flagged if p.exercise == "ex0"]


def test_answer_copied_from_d2lite_is_flagged(result):
    _, r = result
    hits = [m for m in r.sources if m.student == "s0030" and m.exercise == "ex1"]
    assert hits and hits[0].flagged and hits[0].source == "d2lite: train.train_ch6"
    assert not [m for m in r.sources if m.flagged and m.student != "s0030" and m.source.startswith("d2lite")]


def test_page_shows_flagged_pairs_side_by_side(result):
    course, r = result
    page = write_similarity_page(course, r).read_text(encoding="utf-8")
    assert page.count("<mark>") > 10 and "s0017" in page and "alpha" in page  # the copier's renamed variables


def test_no_submissions_is_said_not_counted_as_no_pair_flagged(tmp_path, capsys):
    """Issue 31 (15): similarity on an assignment nobody handed in said "0 pair(s) flagged"."""
    from grader.cli import main

    os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"  # nbgrader runs alembic
    root = tmp_path / "class"
    root.mkdir()
    synthetic_class(root, students=3, notebooks=1, seed=1, submitted=False)
    assert main(["--root", str(root), "similarity", "01_nb"]) == 2
    said = capsys.readouterr()
    assert "no submission(s) of 01_nb with answers, so no pair to compare" in said.err, said
    assert "collect INBOX" in said.err and "pair(s) flagged" not in said.out + said.err, said
    assert not (root / "report").exists()
