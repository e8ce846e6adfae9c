"""The ``required_in_ci`` rule of tests/conftest.py, run for real: pytest in a subprocess on a
tiny test file, with and without ``CI``; the outcome of each test is read from its JUnit XML."""
from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

CONFTEST = Path(__file__).with_name("conftest.py")
PROBE = '''\
import pytest

HOW = "apt-get install the-missing-thing"


@pytest.mark.required_in_ci(HOW)
def test_marked_skips_in_its_body():
    pytest.skip("the-missing-thing is not installed")


@pytest.mark.required_in_ci(HOW)
@pytest.mark.skipif(True, reason="not root")
def test_marked_skipif():
    pass


@pytest.fixture(scope="module")
def browser():
    pytest.skip("the browser cannot start here")


@pytest.mark.required_in_ci(HOW)
def test_marked_skips_in_a_module_fixture(browser):
    pass


@pytest.mark.skipif(True, reason="needs a CUDA GPU")
def test_unmarked_skip():
    pass


@pytest.mark.required_in_ci(HOW)
def test_marked_that_runs():
    pass
'''
MARKED_SKIPS = {"test_marked_skips_in_its_body", "test_marked_skipif",
                "test_marked_skips_in_a_module_fixture"}


def outcomes(tmp_path: Path, ci: str | None) -> tuple[int, dict[str, str], str]:
    """Run the probe with CI=``ci`` (None: unset). Returns (exit code, test -> outcome, output)."""
    (tmp_path / "conftest.py").write_text(CONFTEST.read_text())
    (tmp_path / "test_probe.py").write_text(PROBE)
    (tmp_path / "pytest.ini").write_text("[pytest]\naddopts = --strict-markers\n")
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # the rule needs no plugin (nbval's import is slow)
    if ci is not None:
        env["CI"] = ci
    run = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rA",
                          "--junitxml=report.xml", "test_probe.py"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    result = {}
    for case in ET.parse(tmp_path / "report.xml").iter("testcase"):
        kinds = {child.tag for child in case} & {"failure", "error", "skipped"}
        result[case.get("name")] = kinds.pop() if kinds else "passed"
    return run.returncode, result, run.stdout + run.stderr


@pytest.mark.parametrize("ci", ["true"])
def test_a_skip_of_a_required_test_fails_under_ci(tmp_path, ci):
    code, result, output = outcomes(tmp_path, ci)
    assert code == 1, output
    assert {name for name, kind in result.items() if kind in ("failure", "error")} == MARKED_SKIPS, result
    assert result["test_unmarked_skip"] == "skipped" and result["test_marked_that_runs"] == "passed"
    assert "the-missing-thing is not installed" in output and "apt-get install the-missing-thing" in output


@pytest.mark.parametrize("ci", [None, "false"])
def test_without_ci_a_required_test_may_skip(tmp_path, ci):
    code, result, output = outcomes(tmp_path, ci)
    assert code == 0, output
    assert {name for name, kind in result.items() if kind == "skipped"} == MARKED_SKIPS | {"test_unmarked_skip"}
    assert result["test_marked_that_runs"] == "passed"
