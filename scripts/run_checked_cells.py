"""Give the cells nbval checks the outputs of a first run, running each notebook only as far as it must.

    python scripts/run_checked_cells.py build/nbval/course/*.ipynb

nbval (``--nbval-lax``) compares the outputs of the cells marked ``# NBVAL_CHECK_OUTPUT`` (or tagged
``nbval-check-output``) with the outputs stored in the notebook. The course commits its notebooks without
outputs, so ``make test`` first runs a copy and stores them. Only the cells up to a notebook's last checked
cell decide those outputs, so the first run stops there: later cells keep no outputs and nbval, which runs the
whole notebook, compares nothing of theirs. A notebook without a checked cell is left as it is.

Each notebook is rewritten in place (run it on a copy). A cell that raises is recorded as an error output and
the run goes on, as nbconvert's ``--allow-errors`` does: nbval's run then reports the cell.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import warnings

import nbformat
from nbclient import NotebookClient
from nbval.plugin import find_comment_markers, find_metadata_tags


def is_checked(cell) -> bool:
    """A code cell whose outputs nbval compares in lax mode, read by nbval's own functions (its tags, then its
    comment lines, which win where both speak, as in nbval's collection)."""
    if cell.cell_type != "code":
        return False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # nbval warns of conflicting markers itself, when it collects the cell
        options = {**dict(find_metadata_tags(cell.metadata)), **dict(find_comment_markers(cell.source))}
    return bool(options.get("check"))


def last_checked_cell(nb) -> int | None:
    """The index of the notebook's last checked cell; None when it has none."""
    checked = [i for i, cell in enumerate(nb.cells) if is_checked(cell)]
    return checked[-1] if checked else None


def run_checked_cells(path: Path, timeout: int) -> int | None:
    """Run ``path``'s cells up to its last checked cell in one kernel, store their outputs in the file; return
    that cell's index (None: nothing to check, the file is not touched)."""
    nb = nbformat.read(str(path), as_version=4)
    last = last_checked_cell(nb)
    if last is None:
        return None
    client = NotebookClient(nb, timeout=timeout, allow_errors=True, resources={"metadata": {"path": str(path.parent)}},
                            extra_arguments=["--IPKernelApp.log_level=ERROR"])
    with client.setup_kernel():
        for index, cell in enumerate(nb.cells[: last + 1]):
            client.execute_cell(cell, index)
    nbformat.write(nb, str(path))
    return last


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--timeout", type=int, default=600, help="seconds per cell (default 600, as nbval's)")
    args = parser.parse_args(argv)
    for path in args.notebooks:
        last = run_checked_cells(path, args.timeout)
        print(f"{path}: " + ("no checked cell, not run" if last is None else f"ran cells 1-{last + 1}"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
