"""Old home of :mod:`grader.results.feedback`: ``nbgrader_config.py`` files written by ``course-grader
build`` before the stages had packages import ``feedback_preprocessors`` from here (``build`` rewrites it)."""
from .results.feedback import feedback_preprocessors  # noqa: F401
