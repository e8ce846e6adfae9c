"""Every course cell that starts DataLoader workers runs under the forkserver start method.

Python 3.14 made forkserver Linux's default (it was fork): a worker is then a fresh interpreter
that unpickles the Dataset, its worker_init_fn and collate_fn, so anything defined in a notebook's
__main__ breaks. This test catches that on today's Python: it executes each notebook that has such
cells, in a real Jupyter kernel whose default start method is set to forkserver before the first
cell, up to its last worker cell, and checks after every worker cell that forkserver was still the
start method. It uses the notebooks' quick mode (the bundled digits).
"""
import os
import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

ROOT = Path(__file__).resolve().parents[1]
COURSE = ROOT / "course"
# num_workers=<anything but a literal 0>: num_workers=2, num_workers=k, num_workers = n_workers ...
STARTS_WORKERS = re.compile(r"\bnum_workers\s*=\s*(?!0\b)\S")

FORKSERVER_FIRST = """\
import multiprocessing
multiprocessing.set_start_method("forkserver", force=True)   # Python 3.14's default on Linux
import torch.multiprocessing
assert torch.multiprocessing.get_start_method() == "forkserver", torch.multiprocessing.get_start_method()"""

STILL_FORKSERVER = """\
import torch.multiprocessing as _mp
assert _mp.get_start_method() == "forkserver", (
    "a cell changed the start method to " + _mp.get_start_method() + ": this test no longer runs the "
    "worker cells under forkserver")"""


def worker_cells(nb) -> list[int]:
    """Indices of the code cells of ``nb`` that pass a non-zero ``num_workers``."""
    return [i for i, cell in enumerate(nb.cells) if cell.cell_type == "code" and STARTS_WORKERS.search(cell.source)]


def notebooks_with_workers() -> list[Path]:
    return [path for path in sorted(COURSE.glob("*.ipynb")) if worker_cells(nbformat.read(path, as_version=4))]


def forkserver_copy(nb):
    """``nb`` cut after its last worker cell, with the start method set first and checked after each
    worker cell."""
    marked = set(worker_cells(nb))
    cells = [nbformat.v4.new_code_cell(FORKSERVER_FIRST)]
    for i, cell in enumerate(nb.cells[: max(marked) + 1]):
        cells.append(cell)
        if i in marked:
            cells.append(nbformat.v4.new_code_cell(STILL_FORKSERVER))
    copy = nbformat.v4.new_notebook(metadata=nb.metadata)
    copy.cells = cells
    return copy


def run_under_forkserver(path: Path, workdir: Path) -> None:
    """Execute ``path``'s worker cells (and every cell before them) under forkserver; pytest.fail
    naming the cell that failed."""
    nb = forkserver_copy(nbformat.read(path, as_version=4))
    client = NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(workdir)}})
    try:
        client.execute()
    except CellExecutionError as err:
        pytest.fail(f"{path.name} fails when DataLoader workers start with forkserver (Python 3.14's default "
                    f"on Linux). Define what workers receive (Dataset, worker_init_fn, collate_fn) in an "
                    f"importable module such as d2lite, not in the notebook.\n{str(err)[-3000:]}")


def test_the_course_starts_workers_somewhere():
    """Without any worker cell the test below would check nothing: 06b teaches workers, 06c seeds them."""
    found = [p.name for p in notebooks_with_workers()]
    for name in ("06b_input_pipeline.ipynb", "06c_profiling.ipynb"):
        assert name in found, f"expected worker cells (num_workers > 0) in {name}; found them in {found}"


def test_worker_cells_are_found():
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src) for src in
                ("DataLoader(d, num_workers=2)", "DataLoader(d, num_workers=0)", "DataLoader(d, num_workers = k)",
                 "DataLoader(d)")]
    assert worker_cells(nb) == [0, 2]


@pytest.mark.parametrize("path", notebooks_with_workers(), ids=lambda p: p.stem)
def test_worker_cells_run_under_forkserver(path, tmp_path, monkeypatch):
    monkeypatch.setenv("D2LITE_DATASET", "mnist5k")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    run_under_forkserver(path, tmp_path)
