"""scripts/run_checked_cells.py: the first run that nbval's checked cells are compared with stops at the last one."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import nbformat

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "run_checked_cells.py"


def _script():
    spec = importlib.util.spec_from_file_location("run_checked_cells", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _notebook(path: Path, *sources: str, tagged: int | None = None) -> Path:
    cells = [nbformat.v4.new_code_cell(source) for source in sources]
    if tagged is not None:
        cells[tagged].metadata["tags"] = ["nbval-check-output"]
    nbformat.write(nbformat.v4.new_notebook(cells=cells), str(path))
    return path


def test_a_notebook_runs_up_to_its_last_checked_cell_and_no_further(tmp_path):
    path = _notebook(tmp_path / "checked.ipynb",
                     "x = 6 * 7\nopen('ran-before-the-last-checked-cell', 'w').close()  # in the notebook's folder",
                     "undefined_name  # raises: recorded, and the run goes on",
                     "# NBVAL_CHECK_OUTPUT\nprint(x)",
                     "open('ran-after-the-last-checked-cell', 'w').close()")
    assert _script().main([str(path)]) == 0
    cells = nbformat.read(str(path), as_version=4).cells
    assert cells[1].outputs[0].output_type == "error" and cells[1].outputs[0].ename == "NameError"
    assert [o.get("text") for o in cells[2].outputs] == ["42\n"]
    assert cells[3].outputs == [] and cells[3].execution_count is None
    assert (tmp_path / "ran-before-the-last-checked-cell").exists()
    assert not (tmp_path / "ran-after-the-last-checked-cell").exists()


def test_a_tag_marks_a_cell_as_the_marker_does_and_a_notebook_without_either_is_left_alone(tmp_path):
    tagged = _notebook(tmp_path / "tagged.ipynb", "print('checked')", "print('not run')", tagged=0)
    plain = _notebook(tmp_path / "plain.ipynb", "print('never run here')")
    before = plain.read_bytes()
    assert _script().main([str(tagged), str(plain)]) == 0
    cells = nbformat.read(str(tagged), as_version=4).cells
    assert [o.get("text") for o in cells[0].outputs] == ["checked\n"] and cells[1].outputs == []
    assert plain.read_bytes() == before
