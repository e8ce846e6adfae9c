"""Old home of :mod:`grader.results.export`: ``nbgrader_config.py`` files written by ``course-grader
build`` before the stages had packages import ``SafeCsvExport`` from here (``build`` rewrites it)."""
from .results.export import SafeCsvExport  # noqa: F401
