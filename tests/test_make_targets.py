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



PROFILE = ("import torch\nwith torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as p:\n"
           "    torch.ones(3) + 1\nprint(len(p.key_averages()) > 0)\n")


@pytest.mark.required_in_ci("install make (apt-get install make): make test runs through it")
@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_silences_the_profilers_usdt_lines():
    """Issue 31 (19): `make test` printed stray "USDT: ... profiler_start/stop" lines (torch's libkineto
    writes them to the stderr of every process that profiles). The Makefile's level silences them."""
    import os
    import sys

    env = {k: v for k, v in os.environ.items() if k != "KINETO_LOG_LEVEL"}
    shown = subprocess.run(["make", "-s", "--no-print-directory", "--eval",
                            "kineto-level: ; @echo \"$${KINETO_LOG_LEVEL-}\"", "kineto-level"],
                           cwd=ROOT, capture_output=True, text=True, env=env, check=True).stdout.strip()
    loud = subprocess.run([sys.executable, "-c", PROFILE], capture_output=True, text=True, env=env, timeout=300)
    quiet = subprocess.run([sys.executable, "-c", PROFILE], capture_output=True, text=True, timeout=300,
                           env={**env, "KINETO_LOG_LEVEL": shown})
    assert "USDT" in loud.stderr, f"this torch no longer prints USDT lines: {loud.stderr!r}"  # the test sees them
    assert quiet.returncode == 0 and quiet.stdout.strip() == "True", quiet.stdout + quiet.stderr
    assert "USDT" not in quiet.stderr, (f"KINETO_LOG_LEVEL={shown!r} from the Makefile still lets them through: "
                                        f"{quiet.stderr!r}; set the level that silences them (export in Makefile)")
