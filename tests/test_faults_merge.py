"""Merging a damaged submission into the trusted source (grader.engine.notebook.merge), without running anything."""
from __future__ import annotations

import sys
from pathlib import Path

import nbformat
import pytest

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "engine"))
from submissions import PLAIN, cell_with_id, submission, write  # noqa: E402

from grader.engine.notebook.merge import merge, read_submission, stub  # noqa: E402

ANSWERS = {"add": "def add(a, b):\n    return a + b  # mine",
           "mean": "def mean(xs):\n    return sum(xs) / len(xs)  # mine",
           "shout": "def shout(s):\n    return s.upper() + '!'  # mine"}


def merged(tmp_path, mutate=None, answers=ANSWERS):
    path = write(submission(PLAIN, answers, mutate=mutate), tmp_path / "s.ipynb")
    cells, why = read_submission(path)
    assert cells is not None, why
    return merge(nbformat.read(str(PLAIN), as_version=4), cells)


def answer_text(result, gid):
    return [c.source for c, r in zip(result.notebook.cells, result.roles)
            if r.kind == "answer" and r.grade_id == gid]


def test_intact_submission_takes_answers_and_keeps_trusted_tests(tmp_path):
    result = merged(tmp_path)
    assert [answer_text(result, g) for g in ANSWERS] == [[a] for a in ANSWERS.values()]
    trusted = nbformat.read(str(PLAIN), as_version=4)
    assert cell_with_id(result.notebook, "add_test").source == cell_with_id(trusted, "add_test").source
    assert len(result.notebook.cells) == len(trusted.cells) and result.problems == []


def test_stripped_metadata_answers_found_by_position(tmp_path):
    def strip(nb):
        for cell in nb.cells:
            cell.metadata = {}
    result = merged(tmp_path, strip)
    assert [answer_text(result, g) for g in ANSWERS] == [[a] for a in ANSWERS.values()]
    assert len(result.problems) == 3 and all("found by its position" in p for p in result.problems)


def test_reordered_answers_go_back_to_their_exercises(tmp_path):
    def reorder(nb):
        answers = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution")]
        nb.cells = answers[::-1] + [c for c in nb.cells if c not in answers]
    result = merged(tmp_path, reorder)
    order = [r.grade_id for r in result.roles if r.kind in ("answer", "test")]
    assert order == ["add", "add_test", "mean", "mean_test", "shout", "shout_test"]


def test_added_cells_run_after_the_cell_they_followed(tmp_path):
    def add_helper(nb):
        at = nb.cells.index(cell_with_id(nb, "mean"))
        nb.cells.insert(at + 1, nbformat.v4.new_code_cell("HELPER = 1"))
        nb.cells.insert(at + 2, nbformat.v4.new_markdown_cell("my notes"))
    result = merged(tmp_path, add_helper)
    kinds = [(r.kind, r.grade_id) for r in result.roles if r.kind != "trusted"]
    assert kinds[2:5] == [("answer", "mean"), ("added", ""), ("test", "mean_test")]
    assert "my notes" not in [c.source for c in result.notebook.cells]


def test_answer_turned_into_markdown_is_run_as_code(tmp_path):
    def to_markdown(nb):
        cell = cell_with_id(nb, "shout")
        nb.cells[nb.cells.index(cell)] = nbformat.v4.new_markdown_cell(
            cell.source, metadata=cell.metadata)
    result = merged(tmp_path, to_markdown)
    cell = cell_with_id(result.notebook, "shout")
    assert cell.cell_type == "code" and cell.source == ANSWERS["shout"]


def test_deleted_answer_becomes_the_stub_and_is_reported(tmp_path):
    result = merged(tmp_path, lambda nb: nb.cells.remove(cell_with_id(nb, "mean")))
    assert answer_text(result, "mean") == ["def mean(xs):\n    raise NotImplementedError()"]
    assert result.problems == ["answer cell 'mean' was not found in the submission; it was graded "
                               "as left unanswered"]


def test_duplicated_answer_runs_every_copy_with_unique_ids(tmp_path):
    def duplicate(nb):
        cell = cell_with_id(nb, "add")
        twin = nbformat.from_dict(dict(cell, source="def add(a, b):\n    return 0"))
        twin.id = "twin"
        nb.cells.insert(nb.cells.index(cell), twin)
    result = merged(tmp_path, duplicate)
    assert answer_text(result, "add") == ["def add(a, b):\n    return 0", ANSWERS["add"]]
    ids = [c.id for c in result.notebook.cells]
    assert len(ids) == len(set(ids))
    nbformat.validate(result.notebook)


@pytest.mark.parametrize("content, words", [
    (b"", "not valid JSON"), (b'{"cells": 3}', "not a Jupyter notebook"),
    (b"\xff\xfe{]", "not valid JSON"), (b'"just a string"', "not a Jupyter notebook")])
def test_unreadable_files_give_a_reason(tmp_path, content, words):
    (tmp_path / "x.ipynb").write_bytes(content)
    cells, why = read_submission(tmp_path / "x.ipynb")
    assert cells is None and words in why


def test_nbformat_3_and_odd_cells_are_read_leniently(tmp_path):
    v3 = {"nbformat": 3, "worksheets": [{"cells": [
        {"cell_type": "code", "input": ["x = ", "1"], "metadata": {}}, "junk",
        {"source": 5, "metadata": {"nbgrader": {"grade_id": 7}}}]}]}
    (tmp_path / "old.ipynb").write_text(__import__("json").dumps(v3))
    cells, _ = read_submission(tmp_path / "old.ipynb")
    assert [(c.cell_type, c.source, c.grade_id) for c in cells] == [
        ("code", "x = 1", ""), ("code", "", "")]


def test_stub_replaces_each_solution_region():
    source = "def f(x):\n    ### BEGIN SOLUTION\n    return x\n    ### END SOLUTION\n\nY = 2"
    assert stub(source) == "def f(x):\n    raise NotImplementedError()\n\nY = 2"
