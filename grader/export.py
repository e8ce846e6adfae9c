"""Export: the gradebook as CSV, written by nbgrader's own CSV exporter (same columns)."""
from __future__ import annotations

from pathlib import Path

__all__ = ["export_csv"]


def export_csv(root: Path, to: Path | None = None) -> Path:
    """Write ``assignment,duedate,timestamp,student_id,...,score,max_score`` rows; return the path."""
    from nbgrader.api import Gradebook
    from nbgrader.plugins import CsvExportPlugin

    from .config import load_config, nbgrader_api

    root = root.resolve()
    target = (to or root / "grades.csv").resolve()
    target.parent.mkdir(parents=True, exist_ok=True)
    api = nbgrader_api(root)
    with Gradebook(api.coursedir.db_url, load_config(root).CourseDirectory.course_id) as gb:
        CsvExportPlugin(to=str(target)).export(gb)
    return target
