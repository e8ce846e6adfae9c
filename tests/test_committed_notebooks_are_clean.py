"""Notebooks are committed without outputs or execution counts (they are the nbgrader source)."""
import json
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def committed_notebooks() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "*.ipynb"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    return [ROOT / name for name in listed if not name.startswith("tests/fixtures/dirty/")]


def dirty_cells(notebook: dict) -> list[str]:
    """Describe every code cell that carries outputs or an execution count."""
    problems = []
    for index, cell in enumerate(notebook.get("cells", [])):
        if cell.get("cell_type") != "code":
            continue
        if cell.get("outputs"):
            problems.append(f"cell {index} has {len(cell['outputs'])} output(s)")
        if cell.get("execution_count") is not None:
            problems.append(f"cell {index} has execution_count {cell['execution_count']}")
    return problems


def test_dirty_cells_are_detected():
    """The check itself notices outputs and execution counts."""
    dirty = {"cells": [{"cell_type": "code", "outputs": [{"output_type": "stream"}], "execution_count": 3}]}
    assert dirty_cells(dirty) == ["cell 0 has 1 output(s)", "cell 0 has execution_count 3"]
    assert dirty_cells({"cells": [{"cell_type": "code", "outputs": [], "execution_count": None}]}) == []


def test_course_notebooks_are_committed():
    """There is something to check: the course notebooks are tracked by git."""
    assert any(path.parent.name == "course" for path in committed_notebooks()), "no course/*.ipynb is tracked"


@pytest.mark.parametrize("path", committed_notebooks(), ids=lambda p: str(p.relative_to(ROOT)))
def test_notebook_has_no_outputs(path):
    """Strip outputs before committing, e.g. `jupyter nbconvert --clear-output --inplace NB`."""
    problems = dirty_cells(json.loads(path.read_text(encoding="utf-8")))
    assert not problems, f"{path.name}: " + "; ".join(problems)
