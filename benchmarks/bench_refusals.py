"""How fast the grader refuses or digests what a hostile submission or a wrong address costs it.

The tests check what happens (tests/test_attacks_kernel.py, tests/test_cluster.py); the time it
takes is measured here, on this machine, with no threshold in a test:

- a submission of 20,000 cells sharing one grade_id, refused from its file before any kernel starts
  (``read_submission``; goal: seconds, < 30 s);
- merging 4,000 and 40,000 student cells into the trusted notebook: the ratio shows whether merging
  is linear in the number of cells (goal: about 10x for 10x the cells; 40,000 in < 20 s);
- ``autograde --scheduler`` at an address where nothing listens: refused after the connect timeout
  (goal: < 30 s);
- cleaning 30,000 nested ``<div>``s, displayed as HTML or written in a markdown answer (bleach took
  55 s and 25 s; goal: < 1 s), and the slowest HTML under the limits (300,000 characters, 100 deep);
- reading a notebook's answers (``bounded_readings``, a child process per notebook): an honest course
  notebook, a cell of 400 ``!`` lines (1,050 s before the caps; refused by them), and the slowest cell
  found under the caps (a function nested 38 deep around a 17 KB list; the 60 s limit bounds ten of them).

Medians of ``BENCH_REPEATS`` runs (default 3); nothing here starts a kernel.
"""
from __future__ import annotations

import os
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "fixtures" / "engine"))
sys.path.insert(0, str(ROOT))
REPEATS = int(os.environ.get("BENCH_REPEATS", "3"))


def _median_seconds(run) -> float:
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _crowded_submission(folder: Path, count: int) -> Path:
    """The fixture's release with ``count`` copies of the add answer cell, all with its grade_id."""
    from submissions import PLAIN, many_cells, release, write

    nb = release(PLAIN)
    many_cells(nb, count)
    return write(nb, folder / f"crowd-{count}.ipynb")


def _merge_seconds(count: int) -> float:
    import nbformat
    from submissions import PLAIN, release

    from grader.engine.notebook.merge import _Cell, merge

    trusted = nbformat.read(str(PLAIN), as_version=4)
    cells = [_Cell(c.cell_type, c.source, c.metadata.get("nbgrader", {}).get("grade_id", ""))
             for c in release(PLAIN).cells]
    at = next(i for i, c in enumerate(cells) if c.grade_id == "add")
    crowd = [_Cell("code", f"x = {n}", "add" if n % 2 else "") for n in range(count)]
    student = cells[:at + 1] + crowd + cells[at + 1:]
    return _median_seconds(lambda: merge(trusted, student))


def _unreachable_seconds() -> tuple[float, str]:
    from grader.errors import GraderError
    from grader.running.cluster import DaskRunner

    with socket.socket() as taken:  # bound, never listening: connections to it are refused
        taken.bind(("127.0.0.1", 0))
        address = "tcp://127.0.0.1:%d" % taken.getsockname()[1]
        start = time.perf_counter()
        try:
            DaskRunner(address).close()
            said = "connected (unexpected)"
        except GraderError as error:
            said = str(error).split(";")[0]
        return time.perf_counter() - start, said


def _sanitize_seconds() -> dict[str, float]:
    from grader.engine.notebook.allowlist import MAX_HTML_CHARS, MAX_HTML_DEPTH, clean_html, markdown_cell

    nested = "<div>" * 30_000 + "x" + "</div>" * 15_000  # under the size limit: refused by its depth
    block = "<div>" * MAX_HTML_DEPTH + "x" + "</div>" * MAX_HTML_DEPTH
    deep_and_large = block * (MAX_HTML_CHARS // len(block))
    return {"30,000 nested divs as an HTML output": _median_seconds(lambda: clean_html(nested)),
            "30,000 nested divs in a markdown answer": _median_seconds(lambda: markdown_cell(nested)),
            f"{MAX_HTML_CHARS:,} characters of divs {MAX_HTML_DEPTH} deep (the most that is parsed)": _median_seconds(
                lambda: clean_html(deep_and_large))}


def _reading_seconds() -> dict[str, float]:
    import nbformat

    from grader.engine.reading.bounds import bounded_readings
    from grader.engine.reading.limits import MAX_CELL_CHARS

    def roles(cell) -> str:
        meta = cell.metadata.get("nbgrader", {})
        return ("answer" if meta.get("solution") else "test" if meta.get("grade") and cell.cell_type == "code"
                else "trusted" if cell.cell_type == "code" else "markdown")

    honest = [(roles(c), c.source) for c in nbformat.read(str(ROOT / "course" / "01_tensors.ipynb"), as_version=4).cells]
    test = ("test", "from grader.record import record\nrecord('f', f(1))")
    shell = "def f(x):\n    return x\n" + "".join(f"!echo {'a' * 280} {i}\n" for i in range(400))
    nested = ("".join("    " * i + f"def g{i}():\n" for i in range(38)) + "    " * 38 + "return ["
              + ",".join(str(i) for i in range(3000))[:MAX_CELL_CHARS - 4000] + "]\ndef f(x):\n    return x\n")
    return {"an honest notebook (01_tensors)": _median_seconds(lambda: bounded_readings(honest)),
            "400 `!` lines in one cell, 10 tests (refused by the caps)": _median_seconds(
                lambda: bounded_readings([("answer", shell)] + [test] * 10)),
            "a function nested 38 deep around a 17 KB list, 10 tests (under the caps)": _median_seconds(
                lambda: bounded_readings([("answer", nested)] + [test] * 10))}


def main() -> str:
    from grader.engine.notebook.merge import MAX_CELLS, read_submission

    with tempfile.TemporaryDirectory(prefix="bench-refusals-") as tmp:
        crowded = _crowded_submission(Path(tmp), 20_000)
        cells, why = read_submission(crowded)
        refused = _median_seconds(lambda: read_submission(crowded))
    small, large = _merge_seconds(4_000), _merge_seconds(40_000)
    unreachable, said = _unreachable_seconds()
    cleaning = _sanitize_seconds()
    reading = _reading_seconds()
    return "\n".join([
        "## Refusals and merging (moved here from the tests' wall-clock thresholds)",
        "",
        f"<!-- headline: refuse a 20,000-cell submission before any kernel | {refused:.2f} s | < 30 s -->",
        f"<!-- headline: merge 40,000 student cells | {large:.2f} s | < 20 s, linear -->",
        f"<!-- headline: refuse an unreachable Dask scheduler | {unreachable:.1f} s | < 30 s -->",
        f"<!-- headline: clean 30,000 nested divs (bleach: 55 s) | {max(list(cleaning.values())[:2]):.4f} s | < 1 s -->",
        f"<!-- headline: read the slowest answer under the caps (before: 1,050 s) | {max(reading.values()):.1f} s | < 60 s -->",
        "| measure | seconds |",
        "| --- | ---: |",
        f"| read and refuse a submission of 20,000 cells (limit {MAX_CELLS}) | {refused:.3f} |",
        f"| merge 4,000 student cells | {small:.3f} |",
        f"| merge 40,000 student cells | {large:.3f} |",
        f"| `autograde --scheduler` where nothing listens | {unreachable:.1f} |",
        *(f"| clean {what} | {seconds:.4f} |" for what, seconds in cleaning.items()),
        *(f"| read {what} | {seconds:.2f} |" for what, seconds in reading.items()),
        "",
        f"Merging 10x the cells took {large / small:.1f}x the time (linear: about 10x). The 20,000-cell "
        f"file was {'refused: ' + why if cells is None else 'NOT refused'}. The scheduler: {said}.",
    ])


if __name__ == "__main__":
    print(main())
