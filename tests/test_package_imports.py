"""What importing costs: d2lite offers every module's names from its top level without importing them all,
and the grader's processes that only read results (table, export, the command line, nbgrader reading a course's
configuration) never import torch, and nothing that imports nbformat builds jsonschema's lark parsers.

Each check runs in a fresh interpreter, since this test process has long imported torch."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import d2lite

ROOT = Path(__file__).resolve().parents[1]


def imported_by(statement: str, module: str) -> bool:
    """Whether ``module`` is in ``sys.modules`` after ``statement``, run in a fresh interpreter."""
    script = f"import sys\n{statement}\nprint({module!r} in sys.modules)"
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=600, check=True)
    return out.stdout.split()[-1] == "True"


def torch_imported_by(statement: str) -> bool:
    return imported_by(statement, "torch")


@pytest.mark.parametrize("statement", [
    "import d2lite", "from d2lite import unattended", "import d2lite.unattended",
    "import grader.results.table, grader.results.export, grader.results.manual", "import grader.cli",
    # what a built course's nbgrader_config.py imports: every nbgrader command and formgrader in the course loads it
    "import grader.results.export, grader.results.feedback, grader.results.offline_page, grader.stock",
])
def test_reading_names_and_results_does_not_import_torch(statement):
    assert not torch_imported_by(statement)


def test_reading_a_name_imports_its_module_and_torch_with_it():  # the control: the probe sees torch when it is there
    assert torch_imported_by("import d2lite; d2lite.sgd")


@pytest.mark.parametrize("statement", [
    "import nbformat",                                   # nbval, nbclient, the tests, every grader process
    "from nbgrader.apps.nbgraderapp import main",        # each nbgrader command
    "import jupyter_events.validators",                  # JupyterLab's server, which checks events with formats
])
def test_importing_nbformat_builds_no_lark_parsers(statement):
    """jsonschema 4.25 and later, with rfc3987-syntax installed (its format-nongpl extra, which jupyter-events asks
    for), build dozens of lark parsers on import: about 1 s of CPU in every process that imports nbformat, before
    grader/__init__.py can keep them out. constraints.txt pins jsonschema 4.24.1, which has no such import."""
    assert not imported_by(statement, "rfc3987_syntax")
    assert not imported_by(statement, "lark")


def test_the_top_level_offers_every_modules_names_the_last_module_winning():
    """The names at d2lite's top level are those of the modules' ``__all__``, as star imports of the modules in
    order (a later module's name winning) once made them."""
    import importlib

    expected = {}
    for module in d2lite._MODULES:
        mod = importlib.import_module(f"d2lite.{module}")
        expected.update({name: getattr(mod, name) for name in mod.__all__})
    assert set(d2lite.__all__) == set(expected) | {"dataset_name", "headless", "quick_mode", "under_grader"}
    for name, value in expected.items():
        assert getattr(d2lite, name) is value, name
    star: dict = {}
    exec("from d2lite import *", star)
    assert {k for k in star if not k.startswith("__")} == set(d2lite.__all__)


def test_a_module_is_reached_from_the_top_level_as_before():
    """``d2lite.models.linreg``: each module is an attribute of the package once read, as when ``import d2lite``
    imported them all (a student's ``line = d2lite.models`` raised AttributeError in a first lazy version)."""
    import importlib

    for module in d2lite._MODULES:
        assert getattr(d2lite, module) is importlib.import_module(f"d2lite.{module}"), module
    assert d2lite.models.linreg is d2lite.linreg


def test_every_module_with_public_names_is_offered():
    """A new module must be added to ``_MODULES``, else its names are not at the top level."""
    package = Path(d2lite.__file__).parent
    with_all = {p.stem for p in package.glob("*.py") if p.read_text(encoding="utf-8").count("\n__all__ = [")}
    assert with_all - {"__init__", "unattended", "not_offered"} == set(d2lite._MODULES)


def test_a_d2l_name_d2lite_leaves_out_says_what_to_use():
    with pytest.raises(AttributeError, match="no attribute 'nonexistent_name'"):
        d2lite.nonexistent_name
