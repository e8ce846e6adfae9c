"""The grader's layout: one package per pipeline stage, and imports that run one way.

Each stage may import only the stages below it (``ALLOWED``); every stage may import ``record`` and
``values``, the modules that run inside a student's kernel, and the shared ``errors`` and ``terminal``;
no stage imports the ways in on top (``cli``, ``demo``, ``lab``, ``stock``, ``validate``). Inside the
engine, its four parts import one way too (``ENGINE_PARTS``), and only ``engine/grade.py`` imports them all. Imports are read with ``ast`` from the source, function-level
ones included, so a late import cannot hide an arrow that points up.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

import grader

PACKAGE = Path(grader.__file__).parent
KERNEL_SIDE = {"record", "values"}  # run inside the student's kernel; import nothing but each other
SHARED = {"errors", "terminal"}  # every stage may import them; they import nothing of the grader
ALLOWED = {  # stage -> the stages it may import (besides itself and KERNEL_SIDE)
    "engine": set(),
    "authoring": {"engine"},
    "intake": {"authoring", "engine"},
    "results": {"authoring", "engine"},
    "running": {"results", "authoring", "engine"},
}
ENGINE_PARTS = {  # part of grader/engine/ -> the parts it may import (besides itself); none imports grade.py
    "notebook": set(),  # notebook text: starts no process
    "isolation": {"notebook"},  # the sandboxed kernel
    "reading": set(),  # an answer's source read as evidence for a person
    "verdict": set(),  # recorded values compared with the solution's; the typed results
}


def grader_imports(path: Path) -> set[str]:
    """The first component under ``grader`` of every module ``path`` imports ("engine", "record", ...)."""
    return {parts[0] for parts in imported_modules(path)}


def imported_modules(path: Path) -> set[tuple[str, ...]]:
    """Every module of the grader that ``path`` imports, as its components under ``grader``."""
    own = path.relative_to(PACKAGE).parts[:-1]  # () for a top-level module, ("engine", "notebook") in a part
    return modules_in(path.read_text(encoding="utf-8"), own, path)


def imports_in(source: str, own: tuple[str, ...], path: Path | str = "<source>") -> set[str]:
    """:func:`grader_imports` of ``source``, a module of the package ``grader.<own...>``."""
    return {parts[0] for parts in modules_in(source, own, path)}


def modules_in(source: str, own: tuple[str, ...], path: Path | str = "<source>") -> set[tuple[str, ...]]:
    """:func:`imported_modules` of ``source``; ``from X import a`` counts as ``X.a`` (``a`` may be a module)."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            dotted = [alias.name.split(".") for alias in node.names]
            found |= {tuple(parts[1:]) for parts in dotted if parts[0] == "grader" and len(parts) > 1}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(own[: len(own) - (node.level - 1)]) if node.level - 1 <= len(own) else None
                assert base is not None, f"{path}: a relative import above the grader package"
            elif (node.module or "").split(".")[0] == "grader":
                base = []
                node = ast.ImportFrom(module=node.module.partition(".")[2] or None, names=node.names, level=1)
            else:
                continue
            parts = base + (node.module.split(".") if node.module else [])
            found |= {tuple(parts + [alias.name]) for alias in node.names}
    return found


def engine_parts_imported(path: Path) -> set[str]:
    """The parts of the engine (``notebook``, ``isolation``, ..., or ``grade``) that ``path`` imports."""
    return {parts[1] for parts in imported_modules(path) if parts[0] == "engine" and len(parts) > 1}


def modules_of(stage: str) -> list[Path]:
    return sorted((PACKAGE / stage).rglob("*.py"))


def test_every_stage_is_a_package_that_says_what_it_does():
    stages = sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists())
    assert stages == sorted(ALLOWED), f"stage packages {stages}; the layering rule knows {sorted(ALLOWED)}"
    for stage in stages:
        doc = ast.get_docstring(ast.parse((PACKAGE / stage / "__init__.py").read_text(encoding="utf-8")))
        assert doc and "In:" in doc and "Out:" in doc, f"grader/{stage}/__init__.py should say what comes in and goes out"


@pytest.mark.parametrize("stage", sorted(ALLOWED))
def test_a_stage_imports_only_the_stages_below_it(stage):
    allowed = ALLOWED[stage] | {stage} | KERNEL_SIDE | SHARED
    wrong = {f"{path.relative_to(PACKAGE.parent)} imports grader.{name}"
             for path in modules_of(stage) for name in grader_imports(path) - allowed}
    assert not wrong, (f"grader/{stage}/ may import only {sorted(allowed)}: " + "; ".join(sorted(wrong))
                       + ". Move the shared code down a stage, or the importing module up.")


def test_the_shared_modules_import_nothing_of_the_grader():
    for name in sorted(SHARED):
        imported = grader_imports(PACKAGE / f"{name}.py")
        assert not imported, f"grader/{name}.py is shared by every stage; it imports {sorted(imported)}"


def test_the_engine_has_four_parts_that_say_what_they_hold():
    parts = sorted(p.name for p in (PACKAGE / "engine").iterdir() if p.is_dir() and p.name != "__pycache__")
    assert parts == sorted(ENGINE_PARTS), f"engine parts {parts}; the rule knows {sorted(ENGINE_PARTS)}"
    for part in parts:
        init = PACKAGE / "engine" / part / "__init__.py"
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) if init.exists() else None
        assert doc and "In:" in doc and "Out:" in doc, f"grader/engine/{part}/__init__.py should say what comes in and goes out"
    top = sorted(p.name for p in (PACKAGE / "engine").glob("*.py"))
    assert top == ["__init__.py", "grade.py"], f"grader/engine/ holds {top}: a module belongs in one of its parts"


@pytest.mark.parametrize("part", sorted(ENGINE_PARTS))
def test_an_engine_part_imports_only_the_parts_below_it(part):
    allowed = ENGINE_PARTS[part] | {part}
    wrong = {f"{path.relative_to(PACKAGE.parent)} imports grader.engine.{name}"
             for path in sorted((PACKAGE / "engine" / part).rglob("*.py"))
             for name in engine_parts_imported(path) - allowed}
    assert not wrong, (f"grader/engine/{part}/ may import only {sorted(allowed)} of the engine (never grade.py): "
                       + "; ".join(sorted(wrong)))


def test_the_kernel_side_imports_nothing_else_of_the_grader():
    for name in sorted(KERNEL_SIDE):
        imported = grader_imports(PACKAGE / f"{name}.py") - KERNEL_SIDE
        assert not imported, f"grader/{name}.py runs in the student's kernel; it imports {sorted(imported)}"


def test_the_rule_reads_relative_and_absolute_imports():
    """The checker itself: an upward import is seen however it is written, in an engine module."""
    for source, expected in (("from ..cli import main", {"cli"}), ("from ..running.jobs import x", {"running"}),
                             ("import grader.results.table", {"results"}), ("from grader import stock", {"stock"}),
                             ("def f():\n    from .kernel import Kernel", {"engine"}),
                             ("from .. import record", {"record"}), ("import os\nfrom nbgrader import api", set())):
        assert imports_in(source, ("engine",)) == expected, source
    isolation = {parts[1] for parts in modules_in("from ..isolation.kernel import Kernel", ("engine", "notebook"))}
    assert isolation == {"isolation"}, "an engine part that imports a part above it is seen"
    assert {parts[1] for parts in modules_in("from .. import grade", ("engine", "verdict"))} == {"grade"}


def lines_with(needles: tuple[str, ...], allowed: str) -> list[str]:
    """``file:line`` of every line of grader/**/*.py, except the module ``allowed``, that holds one of ``needles``."""
    return [f"{path.relative_to(PACKAGE.parent)}:{number}" for path in sorted(PACKAGE.rglob("*.py"))
            if path.relative_to(PACKAGE).as_posix() != allowed
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
            if any(needle in line for needle in needles)]


def test_only_results_gradebook_changes_gradebook_rows():
    """Grades, comments, review flags, due dates and penalties: one module commits them (or rolls them back)."""
    found = lines_with(("db.commit(", "db.rollback("), "results/gradebook.py")
    assert not found, f"only grader/results/gradebook.py commits or rolls back the gradebook; also: {found}"


def test_only_release_runs_nbgrader_generate_assignment():
    """The assignment, notebook and cell rows are nbgrader's own, written by authoring.assembly.release only."""
    found = lines_with(("generate_assignment(",), "authoring/assembly.py")
    assert not found, f"only grader/authoring/assembly.py calls nbgrader's generate_assignment; also: {found}"
