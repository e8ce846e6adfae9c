"""What each make target installs: a student's `make lab` and `make demo` need no browser.

`make -n` prints the recipes a target would run without running them; the Debian packages a
target installs are the arguments of scripts/ensure-debian-packages in that listing.
"""
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def debian_packages(target: str) -> set[str]:
    listing = subprocess.run(["make", "-n", target], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return {pkg for line in listing.splitlines() if "ensure-debian-packages" in line
            for pkg in line.split("ensure-debian-packages", 1)[1].split()}


@pytest.mark.required_in_ci("install make (apt-get install make): make test runs through it")
@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
@pytest.mark.parametrize("target, expected", [("lab", set()), ("demo", {"bubblewrap"}),
                                              ("test", {"bubblewrap", "chromium"})])
def test_each_target_installs_only_what_it_uses(target, expected):
    assert debian_packages(target) == expected

