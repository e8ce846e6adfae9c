"""A handed-in notebook that holds none of its assignment's cells: an empty notebook (valid JSON, no
cells) or another file saved under the assignment's name. Graded as it is, each of its tests reads
"not answered"; this module lets the table and the feedback page say once what happened instead.
"""
from __future__ import annotations

from ..authoring.coursedir import CourseDir
from ..engine.notebook.cells import nbgrader_meta, read_notebook
from ..engine.notebook.merge import read_submission

__all__ = ["foreign_notebooks", "INSTRUCTOR_NOTE", "STUDENT_NOTE"]

INSTRUCTOR_NOTE = ("{names} holds none of the assignment's cells (an empty notebook, or another file handed in), so "
                   "every test reads as not answered; ask the student to submit the assignment's own notebook")
STUDENT_NOTE = ("The notebook you handed in holds none of this assignment's cells (it is empty, or it is another "
                "file), so none of your answers could be found and nothing was graded. Open the assignment's own "
                "notebook in JupyterLab, check that your answers are in it, save it and submit that notebook again.")


def foreign_notebooks(course: CourseDir, student: str, assignment: str, notebooks: list[str] | None = None) -> list[str]:
    """The names of ``student``'s submitted notebooks of ``assignment`` (of ``notebooks`` only, when given) that
    are readable but share no nbgrader cell (grade_id) with their source notebook."""
    found = []
    for name in notebooks or course.notebooks(assignment):
        path = course.submitted_notebook(student, assignment, name)
        if not path.is_file():
            continue  # missing or refused at collect: said elsewhere
        cells, _ = read_submission(path)
        if cells is None:
            continue  # unreadable: said elsewhere
        try:
            wanted = {nbgrader_meta(c).get("grade_id") for c in read_notebook(course.source_notebook(assignment, name)).cells}
        except Exception:  # noqa: BLE001 - no source to compare with: nothing to say
            continue
        if not ({c.grade_id for c in cells} & (wanted - {None})):
            found.append(name)
    return found
