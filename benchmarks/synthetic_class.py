"""A generated, already graded class: no kernel runs. For the report and similarity benchmarks and tests.

    info = synthetic_class(root, students=1000, notebooks=6, seed=0)

writes what grading leaves in a course directory: source and release notebooks (nbgrader cell
metadata), a real nbgrader gradebook (assignments with due dates except the last, grade cells,
students, submissions with timestamps and auto scores), the reference values file (each key's
``what``), a marker per submission (tests, failing keys, problems, seconds) and the submitted
notebooks, whose answers are generated programs: independent students write different code.
``plants`` add known cases: {"copy": (original, copier)} copies with renamed variables,
reordered functions and changed comments; {"d2lite": student} answers with a d2lite function.
"""
from __future__ import annotations

import inspect
import json
import random
from datetime import datetime, timedelta
from pathlib import Path

import nbformat

from grader.engine.verdict.result import Outcome, TestResult

EXERCISES = 8          # per notebook; exercise 0 is short (few ways to be right)
KEYS = 3               # hidden checks per test
FUNCS = ["sum", "mean", "exp", "log", "clamp", "matmul", "cat", "stack", "view", "reshape", "softmax",
         "relu", "max", "min", "abs", "sqrt", "cumsum", "flip", "roll", "where", "gather", "norm"]
SHORT = ["return x.sum(dim=0)", "return torch.sum(x, dim=0)", "return x.sum(0)"]


def _statement(rng: random.Random, n_vars: int) -> str:
    v = [f"{{v{rng.randrange(n_vars)}}}" for _ in range(3)]
    f, g = rng.sample(FUNCS, 2)
    forms = [f"{v[0]} = torch.{f}({v[1]}, dim={rng.randrange(3)})", f"{v[0]} = {v[1]}.{f}() {rng.choice('+-*')} {v[2]}",
             f"{v[0]} = torch.{f}({v[1]}.{g}(), {rng.randint(1, 9)})",
             f"for {{i}} in range({v[1]}.shape[{rng.randrange(2)}]):\n    {v[0]} = {v[0]} + {v[2]}.{f}()",
             f"if {v[1]}.{f}() > {rng.randint(0, 5)}:\n    {v[0]} = {v[2]}.{g}()"]
    return rng.choice(forms)


def program(rng: random.Random, functions: int = 2, statements: int = 5) -> list[list[str]]:
    """An answer's structure: functions, each a list of statements with {v0}.. placeholders."""
    return [[_statement(rng, 3) for _ in range(statements)] for _ in range(functions)]


def render(structure: list[list[str]], names: list[str], comment: str, order: list[int] | None = None) -> str:
    """The structure as Python source, with the given variable names and comment."""
    out = []
    for index in order or range(len(structure)):
        mapping = {f"v{k}": names[k] for k in range(3)} | {"i": names[3]}
        body = ["    " + line.format(**mapping).replace("\n", "\n    ") for line in structure[index]]
        out.append(f"def helper_{index}({names[0]}, {names[1]}, {names[2]}):\n    # {comment}\n"
                   + "\n".join(body) + f"\n    return {names[0]}\n")
    return "\n\n".join(out)


def _cells(notebook: str, answers: dict[str, str]) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.cells.append(nbformat.v4.new_markdown_cell(f"# {notebook}"))
    for e in range(EXERCISES):
        meta = {"nbgrader": {"grade": False, "grade_id": f"ex{e}", "locked": False, "schema_version": 3,
                             "solution": True}}
        nb.cells.append(nbformat.v4.new_code_cell(answers.get(f"ex{e}", ""), metadata=meta))
        test = {"nbgrader": {"grade": True, "grade_id": f"test_ex{e}", "locked": True, "points": 2,
                             "schema_version": 3, "solution": False}}
        nb.cells.append(nbformat.v4.new_code_cell(f'"""exercise {e} returns the right tensor."""\nrecord("k", 1)',
                                                  metadata=test))
    return nb


def d2lite_answer() -> str:
    """The source of a d2lite function long enough to flag: what a student copying it hands in."""
    import d2lite

    return inspect.getsource(d2lite.train_ch6)


def synthetic_class(root: Path, students: int = 1000, notebooks: int = 6, seed: int = 0,
                    plants: dict | None = None, submitted: bool = True) -> dict:
    """Write the class; return {"students": ids, "assignments": names}. ``submitted``: also write the
    submitted notebooks (the similarity check needs them, the report does not)."""
    from uuid import uuid4

    from nbgrader.api import Comment, Grade, Gradebook, Student, SubmittedAssignment, SubmittedNotebook

    rng, plants = random.Random(seed), plants or {}
    root = Path(root)
    ids = [f"s{n:04d}" for n in range(students)]
    names = [f"{n + 1:02d}_nb" for n in range(notebooks)]
    start = datetime(2026, 9, 1)
    copies = {copier: original for original, copier in plants.get("copy", [])}
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        gb.db.bulk_insert_mappings(Student, [{"id": sid} for sid in ids])  # nbgrader's tables, in bulk
        rows = {SubmittedAssignment: [], SubmittedNotebook: [], Grade: [], Comment: []}
        for a, name in enumerate(names):
            due = None if a == notebooks - 1 else start + timedelta(weeks=a + 1)
            solution = {f"ex{e}": "### BEGIN SOLUTION\n" + (SHORT[0] if e == 0 else render(program(rng), ["x", "y", "z", "i"], "solution"))
                        + "\n### END SOLUTION" for e in range(EXERCISES)}
            for folder, answers in (("source", solution), ("release", {g: "raise NotImplementedError()" for g in solution})):
                (root / folder / name).mkdir(parents=True, exist_ok=True)
                nbformat.write(_cells(name, answers), root / folder / name / f"{name}.ipynb")
            assignment_id = gb.add_assignment(name, duedate=due).id
            notebook_id = gb.add_notebook(name, name).id
            solution_ids = [gb.add_solution_cell(f"ex{e}", name, name).id for e in range(EXERCISES)]
            grade_ids = [gb.add_grade_cell(f"test_ex{e}", name, name, max_score=2, cell_type="code").id
                         for e in range(EXERCISES)]
            refs = {f"test_ex{e}": {f"ex{e}_k{k}": {"value": None, "what": f"exercise {e}: check {k} of {KEYS}",
                                                   "rtol": 0, "atol": 0} for k in range(KEYS)} for e in range(EXERCISES)}
            (root / "references").mkdir(exist_ok=True)
            (root / "references" / f"{name}.json").write_text(json.dumps({"format": 1, "seconds": 12.5, "cells": refs}))
            structures = {}
            for sid in ids:
                if rng.random() < 0.02:
                    continue  # nothing submitted
                stamp = (due or start + timedelta(weeks=a + 1)) - timedelta(hours=rng.uniform(-12, 96))
                sub_id, nb_id = uuid4().hex, uuid4().hex
                rows[SubmittedAssignment].append({"id": sub_id, "assignment_id": assignment_id, "student_id": sid,
                                                  "timestamp": stamp})
                rows[SubmittedNotebook].append({"id": nb_id, "assignment_id": sub_id, "notebook_id": notebook_id,
                                                "flagged": False})
                rows[Comment] += [{"id": uuid4().hex, "cell_id": c, "notebook_id": nb_id} for c in solution_ids]
                tests, score = [], 0.0
                for e in range(EXERCISES):
                    roll = rng.random()
                    status = "passed" if roll < 0.9 - 0.08 * e else "timeout" if roll > 0.995 else "failed"
                    reason = "All checks passed." if status == "passed" else "Wrong result."
                    if status == "failed" and rng.random() < 0.2:
                        reason = "Not answered yet: the code still raises NotImplementedError."
                    keys = [] if status == "passed" else [f"ex{e}_k{k}" for k in range(KEYS) if rng.random() < 0.3 * (k + 1)]
                    points = 2.0 if status == "passed" else 0.0
                    score += points
                    tests.append(TestResult(f"test_ex{e}", 2.0, points, status, reason, keys))
                    rows[Grade].append({"id": uuid4().hex, "cell_id": grade_ids[e], "notebook_id": nb_id,
                                        "auto_score": points, "needs_manual_grade": False})
                marker = Outcome(sid, name, score, 2.0 * EXERCISES, tests,
                                 ["the kernel used over 90 % of its memory"] if rng.random() < 0.01 else [],
                                 seconds=round(rng.lognormvariate(2.5, 0.4), 2))
                folder = root / "autograded" / sid / name
                folder.mkdir(parents=True, exist_ok=True)
                (folder / "course-grader.json").write_text(marker.to_json())
                if submitted:
                    structures[sid] = _answers(rng, sid, structures, copies, plants)
                    path = root / "submitted" / sid / name / f"{name}.ipynb"
                    path.parent.mkdir(parents=True, exist_ok=True)
                    nbformat.write(_cells(name, structures[sid]["text"]), path)
        for table, mappings in rows.items():
            gb.db.bulk_insert_mappings(table, mappings)
        gb.db.commit()
    return {"students": ids, "assignments": names}


def _answers(rng: random.Random, sid: str, done: dict, copies: dict, plants: dict) -> dict:
    """One student's answers: generated, or a disguised copy of an earlier student's."""
    original = done.get(copies.get(sid, ""))
    text, structure = {}, {}
    for e in range(EXERCISES):
        if e == 0:
            text["ex0"] = rng.choice(SHORT)  # few ways to be right: many identical short answers
            continue
        if original:
            structure[e] = original["structure"][e]
            order = list(range(len(structure[e])))[::-1]
            text[f"ex{e}"] = render(structure[e], ["alpha", "beta", "gamma", "idx"], "my own work", order)
        else:
            structure[e] = program(rng)
            text[f"ex{e}"] = render(structure[e], rng.sample(["a", "b", "c", "t", "u", "w", "p", "q"], 3) + ["j"],
                                    "compute it")
    if plants.get("d2lite") == sid:
        text["ex1"] = d2lite_answer()
    return {"text": text, "structure": structure}
