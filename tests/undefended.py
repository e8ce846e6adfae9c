"""Graders without a defence: the positive controls of the attack tests.

An attack test shows that a submission earns nothing; that only proves something if the same
submission WOULD earn points where the defence it targets is missing. :func:`stock_points` is
stock nbgrader's rule (the kernel decides); each comparator below is the grader's own comparison
(``grader.engine.verdict.compare.check_records``) with exactly one defence removed. Both are applied to what the
kernel really sent during the real, sandboxed grading run of that submission: :func:`grade_watched`
grades as the tests always do (``grader.engine.grade.grade``) and, beside it, keeps every execution the
kernel answered (code, status, outputs, record payloads) by wrapping ``Kernel.run`` in the worker
process; the wrapper only copies what the real method returns.

    results = grade_watched({name: (source, submission, references_file, unsafe)}, tmp)
    result, seen = results[name]             # NotebookResult, Watched
    seen.points(gid, refs_cells[gid], first_record_wins)
"""
from __future__ import annotations

import copy
import json
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from nbgrader.utils import determine_grade

from grader.engine.notebook.cells import split_hidden
from grader.engine.verdict.compare import check_records, collect

__all__ = ["Run", "Watched", "grade_watched", "stock_points", "trusting_kernel_tolerances",
           "first_record_wins", "only_keys_sent", "every_cells_records"]


@dataclass
class Run:
    """One execution the kernel answered: a code cell, or one part of a test cell."""
    code: str
    status: str
    outputs: list
    records: list  # JSON texts of the record payloads, before the grader drops any


@dataclass
class Cell:
    grade_id: str
    kind: str  # "test", "answer" or "other"
    points: float
    runs: list[Run] = field(default_factory=list)


@dataclass
class Watched:
    """The code cells of the graded notebook in order, each with the executions it made."""
    cells: list[Cell]

    def test(self, gid: str) -> Cell:
        return next(c for c in self.cells if c.kind == "test" and c.grade_id == gid)

    def payloads(self, gid: str, *, since_last_test: bool = False) -> list:
        """Record payloads of test ``gid``; with ``since_last_test``, also those of every cell run
        after the previous test cell (its answer cells, cells the student added)."""
        i = self.cells.index(self.test(gid))
        start = i
        while since_last_test and start > 0 and self.cells[start - 1].kind != "test":
            start -= 1
        return [json.loads(text) for c in self.cells[start:i + 1]
                for run in c.runs for text in run.records if text is not None]

    def points(self, gid: str, expected: dict, comparator) -> float:
        """The points of test ``gid`` under ``comparator(watched, gid, expected) -> bool``."""
        return self.test(gid).points if comparator(self, gid, expected) else 0.0


def _ran_cleanly(cell: Cell) -> bool:
    return bool(cell.runs) and all(r.status == "ok" for r in cell.runs)


# -- the undefended verdicts -------------------------------------------------------------------

def stock_points(watched: Watched, gid: str) -> float:
    """Stock nbgrader's rule (``nbgrader.utils.determine_grade``): full points unless the test
    cell's outputs hold an error. The kernel decides: a silenced error is no error there."""
    test = watched.test(gid)
    cell = nbformat.v4.new_code_cell("", metadata={"nbgrader": {"grade": True, "solution": False,
                                                                "grade_id": gid, "points": test.points}})
    cell.outputs = [nbformat.from_dict(o) for run in test.runs for o in run.outputs]
    return float(determine_grade(cell)[0])


def trusting_kernel_tolerances(watched: Watched, gid: str, expected: dict) -> bool:
    """The real comparison, but with the tolerance each record states for itself, not the one
    of the trusted reference run."""
    by_key, _ = collect(watched.payloads(gid))
    loose = {k: {**ref, "rtol": by_key[k][0].get("rtol", 0.0), "atol": by_key[k][0].get("atol", 0.0)}
             if k in by_key else ref for k, ref in expected.items()}
    return _ran_cleanly(watched.test(gid)) and check_records(loose, watched.payloads(gid))[0]


def first_record_wins(watched: Watched, gid: str, expected: dict) -> bool:
    """The real comparison, but a key recorded twice counts with its first value."""
    by_key, _ = collect(watched.payloads(gid))
    firsts = [payloads[0] for payloads in by_key.values()]
    return _ran_cleanly(watched.test(gid)) and check_records(expected, firsts)[0]


def only_keys_sent(watched: Watched, gid: str, expected: dict) -> bool:
    """The real comparison over the keys the kernel sent: a key never recorded is not missed."""
    by_key, _ = collect(watched.payloads(gid))
    sent = {k: ref for k, ref in expected.items() if k in by_key}
    return _ran_cleanly(watched.test(gid)) and check_records(sent, watched.payloads(gid))[0]


def every_cells_records(watched: Watched, gid: str, expected: dict) -> bool:
    """The real comparison, but records made by the answer cells before the test count too."""
    return (_ran_cleanly(watched.test(gid))
            and check_records(expected, watched.payloads(gid, since_last_test=True))[0])


# -- grading while watching the kernel ---------------------------------------------------------

def _grade_job(source: str, sub: str, refs_path: str, workdir: str, limits, unsafe: bool):
    import grader.engine.isolation.kernel
    from grader.engine.grade import References, grade

    seen: list[Run] = []
    real_run = grader.engine.isolation.kernel.Kernel.run

    def watching_run(self, code, *args, **kwargs):
        result = real_run(self, code, *args, **kwargs)
        seen.append(Run(code, result.status, copy.deepcopy(result.outputs), list(result.records)))
        return result

    grader.engine.isolation.kernel.Kernel.run = watching_run
    try:
        result = grade(Path(source), Path(sub), References.load(Path(refs_path)),
                       workdir=Path(workdir), limits=limits, unsafe=unsafe)
    finally:
        grader.engine.isolation.kernel.Kernel.run = real_run
    return result, Watched(_cells(result.notebook, seen))


def _cells(nb, seen: list[Run]) -> list[Cell]:
    """Attribute the executions, in order, to the code cells of the graded notebook."""
    cells, j = [], 0
    for nb_cell in nb.cells:
        if nb_cell.cell_type != "code":
            continue
        meta = nb_cell.metadata.get("nbgrader", {})
        kind = "test" if meta.get("grade") else "answer" if meta.get("solution") else "other"
        cell = Cell(meta.get("grade_id", ""), kind, float(meta.get("points", 0) or 0))
        codes = [code for code, _ in split_hidden(nb_cell.source)] if kind == "test" else [nb_cell.source]
        for code in codes:
            if j < len(seen) and seen[j].code == code:
                cell.runs.append(seen[j])
                j += 1
        cells.append(cell)
    if j != len(seen):
        raise AssertionError(f"{len(seen) - j} kernel executions matched no cell of the graded "
                             "notebook; the watcher cannot attribute records")
    return cells


def grade_watched(jobs: dict[str, tuple[Path, Path, Path, bool]], tmp: Path, limits=None,
                  workers: int = 3) -> dict[str, tuple]:
    """Grade every job (name -> (trusted source, submission, references file, unsafe?)) in worker
    processes. Returns name -> (NotebookResult, Watched)."""
    from grader.engine.grade import Limits

    limits = limits or Limits(cell_timeout_s=30)
    with ProcessPoolExecutor(workers) as pool:
        futures = {name: pool.submit(_grade_job, str(src), str(sub), str(refs),
                                     str(tmp / "work" / name), limits, unsafe)
                   for name, (src, sub, refs, unsafe) in jobs.items()}
        return {name: future.result() for name, future in futures.items()}
