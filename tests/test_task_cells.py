"""nbgrader's task cells (markdown, ``task: true``, points; answered in cells the student adds after them) are
graded by hand: the merged notebook keeps the student's markdown answer after the task for formgrader, and only
there (no kernel runs here; the scores are checked in test_nbcourse_grading.py)."""
from __future__ import annotations

import json
from pathlib import Path

from grader.engine.notebook import cells as nbs
from grader.engine.notebook.merge import merge, read_submission

INTEGRALS = Path(__file__).parent / "fixtures" / "grader" / "nbcourse" / "week1" / "integrals.ipynb"


def test_a_task_cell_is_neither_a_test_nor_an_answer():
    cells = {nbs.nbgrader_meta(c).get("grade_id"): c for c in nbs.read_notebook(INTEGRALS).cells}
    assert nbs.is_task(cells["error_task"]) and nbs.cell_points(cells["error_task"]) == 2
    assert not (nbs.is_test(cells["error_task"]) or nbs.is_solution(cells["error_task"]))
    assert not any(nbs.is_task(c) for gid, c in cells.items() if gid != "error_task")


def test_the_students_markdown_after_a_task_is_kept_and_elsewhere_dropped(tmp_path):
    student = json.loads(INTEGRALS.read_text(encoding="utf-8"))
    task = next(i for i, c in enumerate(student["cells"]) if c["metadata"].get("nbgrader", {}).get("task"))
    student["cells"].insert(task + 1, {"cell_type": "markdown", "metadata": {}, "source": "The slope is -2."})
    student["cells"].insert(task + 2, {"cell_type": "code", "metadata": {}, "execution_count": None,
                                       "outputs": [], "source": "errors = [1.0, 0.25]"})
    student["cells"].insert(1, {"cell_type": "markdown", "metadata": {}, "source": "my own note"})
    path = tmp_path / "integrals.ipynb"
    path.write_text(json.dumps(student), encoding="utf-8")
    cells, why = read_submission(path)
    merged = merge(nbs.read_notebook(INTEGRALS), cells)
    texts = [(c.cell_type, c.source, r.kind) for c, r in zip(merged.notebook.cells, merged.roles)]
    at = next(i for i, c in enumerate(merged.notebook.cells) if nbs.is_task(c))
    assert texts[at + 1:at + 3] == [("markdown", "The slope is -2.", "added"), ("code", "errors = [1.0, 0.25]", "added")]
    assert "my own note" not in [t[1] for t in texts], "added markdown elsewhere is dropped, as before"
