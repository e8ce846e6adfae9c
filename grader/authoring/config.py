"""The nbgrader configuration of a course directory: written once as ``nbgrader_config.py``.

The same file serves nbgrader's own CLI and JupyterLab's formgrader, and this package (which
loads it with traitlets), so the course directory behaves the same whichever tool opens it.
"""
from __future__ import annotations

import functools
import os
import re
import sys
from pathlib import Path

from traitlets.config import Config
from traitlets.config.loader import PyFileConfigLoader

from .coursedir import MARKER

__all__ = ["COURSE_ID", "CONFIG_NAME", "write_config", "load_config", "load_limits", "deduct_certain_findings",
           "nbgrader_api", "ask_alembic_once",
           "course_id_problem", "configured_course_id"]

COURSE_ID = "d2lite"  # the default course id (``course-grader build --course-id`` sets another)
# nbgrader itself only strips whitespace; its exchange uses the id as a folder name and in glob
# patterns, so only characters that are safe as both.
COURSE_ID_RULE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
CONFIG_NAME = "nbgrader_config.py"

TEMPLATE = '''\
# nbgrader configuration of this course, written by `course-grader build`.
# nbgrader's CLI and JupyterLab's formgrader read it when started in this folder; so does
# course-grader. Grading itself runs through course-grader (sandboxed, tamper-proof verdicts).
c = get_config()  # noqa: F821

c.CourseDirectory.course_id = {course_id!r}
# Files nbgrader does not copy along (course-grader.json: course-grader's record of a grading run).
c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback", {marker!r}]
# A local exchange folder (nbgrader's default, /usr/local/share/nbgrader/exchange, needs root) beside
# this course folder, not in it: students reach the exchange, and this folder is its owner's only (0700).
# On a JupyterHub point this at the shared exchange instead.
import os  # noqa: E402
c.Exchange.root = os.path.realpath(os.path.dirname(os.path.abspath(__file__))) + "-exchange"
# Training cells take about a minute on a 2-core CPU: a cell gets {timeout} s before it is stopped
# (course-grader reads this value too; `--cell-timeout` overrides it for one run).
c.ExecutePreprocessor.timeout = {timeout}
c.Execute.timeout = {timeout}
# Output limits for notebooks nbgrader itself executes.
c.LimitOutput.max_lines = 1000
c.LimitOutput.max_traceback = 100
# Students see this where their answer goes.
c.ClearSolutions.code_stub = {{"python": "# YOUR CODE HERE\\nraise NotImplementedError()"}}
# This course's graded tests record values that its `grader` package compares, and its feedback
# hides hidden tests with it. Without that package, nbgrader would drop this whole file, score
# every solution 0 and put hidden tests into feedback: refuse instead.
try:
    from grader.results.export import SafeCsvExport  # noqa: E402
    from grader.results.feedback import feedback_preprocessors  # noqa: E402
    from grader.results.offline_page import OfflineFeedbackPage  # noqa: E402
    from grader.stock import GuardedExporter, autograde_preprocessors  # noqa: E402
except ImportError as missing:
    raise SystemExit(
        "nbgrader_config.py of course {course_id!r}: the course's `grader` package is not importable "
        f"here ({{missing}}). Install the course's `d2lite-course` distribution (it provides `grader` "
        "and `d2lite`) into the Python that runs nbgrader: in a clone of the course, "
        "`pip install torch==2.13.0 -e .` (see the README, 'Images'). Refusing to run without it: hidden tests would leak "
        "into feedback and every answer would be misgraded.") from None
# Feedback pages: hidden tests hidden, then whatever HTML or JavaScript the student's code displayed
# sanitized (nbconvert's SanitizeHTML), then nbgrader's grades and CSS.
c.GenerateFeedback.preprocessors = feedback_preprocessors()
# ... and written by an exporter that turns TeX into MathML and loads no MathJax: pages work offline.
c.GenerateFeedback.exporter_class = OfflineFeedbackPage
# `nbgrader export`: nbgrader's CSV columns, with cells a spreadsheet would run as formulas escaped.
c.ExportApp.plugin_class = SafeCsvExport
# Stock `nbgrader autograde` runs students' code UNSANDBOXED, as you, next to gradebook.db and the
# solutions: it refuses unless COURSE_GRADER_ALLOW_UNSANDBOXED=1 is set or the next line says True.
# Use `course-grader autograde` (sandboxed) for any class you do not trust.
c.Autograde.exporter_class = GuardedExporter
c.GuardedExporter.allow_unsandboxed = False
# When allowed, it compares recorded values with the solution's, as course-grader does.
c.Autograde.autograde_preprocessors = autograde_preprocessors()
c.CheckRecords.course_root = os.path.dirname(os.path.abspath(__file__))
# What course-grader reads in an answer's source (a builtin the exercise rules out, a loop, d2lite's own
# version, code it cannot resolve) never takes points by itself: the test keeps what its behaviour earned
# and is flagged for review in formgrader (needs manual grade, the finding in the answer cell's comment).
# True: a test whose answer cell calls a ruled-out function directly (`torch.cdist(X, Y)` in the exercise's
# own answer) scores 0 instead, without review; every other finding still goes to a person.
c.CourseGrader.deduct_certain_findings = False
'''


def course_id_problem(course_id: str) -> str:
    """"" for a usable course id, else a sentence that says what is wrong and what is accepted."""
    if isinstance(course_id, str) and COURSE_ID_RULE.fullmatch(course_id):
        return ""
    return (f"the course id {course_id!r} is not accepted: use 1 to 64 letters, digits, '_', '.' or '-', starting "
            "with a letter or digit (nbgrader's exchange makes a folder of it and matches it in file patterns), "
            f"e.g. {COURSE_ID!r} or 'ml-101'")


def configured_course_id(root: Path) -> str:
    """The course id in ``root/nbgrader_config.py``; :data:`COURSE_ID` when the course has no configuration yet."""
    if not (Path(root) / CONFIG_NAME).is_file():
        return COURSE_ID
    return load_config(Path(root)).CourseDirectory.get("course_id") or COURSE_ID


def write_config(root: Path, course_id: str = COURSE_ID) -> Path:
    """Write ``root/nbgrader_config.py`` and return its path (ValueError for an id :func:`course_id_problem` refuses)."""
    if course_id_problem(course_id):
        raise ValueError(course_id_problem(course_id))
    root.mkdir(parents=True, exist_ok=True)
    path = root / CONFIG_NAME
    from ..engine.isolation.sandbox import Limits

    timeout = int(Limits().cell_timeout_s)
    path.write_text(TEMPLATE.format(course_id=course_id, timeout=timeout, marker=MARKER), encoding="utf-8")
    return path


def load_config(root: Path) -> Config:
    """The course's configuration, rooted at ``root`` (absolute); GraderError when the file is missing."""
    if not (Path(root) / CONFIG_NAME).is_file():
        from ..errors import GraderError
        from .invocation import command

        raise GraderError(f"{Path(root) / CONFIG_NAME} is missing: nbgrader and course-grader read the course's "
                          f"settings there; write it again with `{command('build', root)}` (grades, submissions "
                          "and releases are kept)")
    config = PyFileConfigLoader(CONFIG_NAME, path=str(root)).load_config()
    config.CourseDirectory.root = str(root.resolve())
    return config


def deduct_certain_findings(root: Path) -> bool:
    """The course's opt-in (``c.CourseGrader.deduct_certain_findings = True``) to deduct findings that are certain
    instead of flagging them for review (:func:`grader.engine.grade.reviewed`); False without a configuration."""
    try:
        return load_config(Path(root)).CourseGrader.get("deduct_certain_findings") is True
    except Exception:  # noqa: BLE001 - no config yet (a course being built): flag, never deduct
        return False


def load_limits(root: Path, cell_timeout_s: float | None = None):
    """The kernels' limits for the course at ``root``: the cell timeout its nbgrader_config.py gives
    (``c.Execute.timeout``), else :class:`grader.engine.isolation.sandbox.Limits`' default; ``cell_timeout_s`` wins."""
    from dataclasses import replace

    from ..engine.isolation.sandbox import Limits

    limits = Limits()
    if cell_timeout_s is None:
        try:
            configured = load_config(root).Execute.get("timeout")
        except Exception:  # noqa: BLE001 - no config yet (a course being built): the default
            configured = None
        cell_timeout_s = configured if isinstance(configured, (int, float)) and configured > 0 else None
    return replace(limits, cell_timeout_s=float(cell_timeout_s)) if cell_timeout_s else limits


def _venv_on_path() -> None:
    """nbgrader runs the ``alembic`` command to open a gradebook: find it next to this Python."""
    bindir = str(Path(sys.executable).parent)
    if bindir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "")


def ask_alembic_once() -> None:
    """Let nbgrader ask alembic for its gradebook schema version once per process.

    Each time nbgrader creates a gradebook it runs ``alembic heads`` (``nbgrader.api.get_alembic_version``),
    a subprocess that costs about 2 s of CPU; the answer depends only on the installed nbgrader, so the
    first answer is kept and nbgrader's own function is still what gives it. Idempotent."""
    import nbgrader.api

    _venv_on_path()
    if not hasattr(nbgrader.api.get_alembic_version, "cache_info"):
        nbgrader.api.get_alembic_version = functools.cache(nbgrader.api.get_alembic_version)


def nbgrader_api(root: Path, imposed: Config | None = None):
    """nbgrader's own API object for the course at ``root``; ``imposed`` settings win over the file's."""
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory

    ask_alembic_once()
    config = load_config(root)
    if imposed is not None:
        config.merge(imposed)
    coursedir = CourseDirectory(config=config)
    return NbGraderAPI(coursedir=coursedir, config=config)
