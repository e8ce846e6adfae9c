"""What a GPU machine needs from the project, checked where CI runs (no GPU): the demo grades the
GPU notebooks alone, and a GPU run's benchmark sections sit beside the CPU ones."""
from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_demo_refuses_a_notebook_the_course_lacks_and_names_the_choices(tmp_path):
    done = subprocess.run([sys.executable, "-m", "grader", "demo", "--assignment", "04_gpu",
                           "--assignment", "07_nope", "--root", str(tmp_path / "demo")],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode != 0
    assert "07_nope" in done.stderr and "04_gpu, 05_multigpu" in done.stderr, done.stderr
    assert not (tmp_path / "demo" / "inbox").exists(), "nothing is collected or graded"


def load_runner(results: Path):
    spec = importlib.util.spec_from_file_location("bench_run", ROOT / "benchmarks" / "run.py")
    runner = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(runner)
    runner.RESULTS = results
    return runner


def test_a_gpu_section_keeps_the_cpu_header_and_the_cpu_section(tmp_path):
    runner = load_runner(tmp_path / "RESULTS.md")
    runner.update_results("lenet_loops", "## on the CPU\n1.9x", "Latest run: a CPU machine.")
    runner.update_results("lenet_loops-gpu", "## on an H100\n13.3x", None)
    runner.update_results("lenet_loops-gpu", "## on an H100\n13.4x", None)   # a later GPU run replaces it
    text = (tmp_path / "RESULTS.md").read_text()
    assert "Latest run: a CPU machine." in text and "1.9x" in text
    assert "13.4x" in text and "13.3x" not in text
    assert text.index("<!-- bench:lenet_loops -->") < text.index("<!-- bench:lenet_loops-gpu -->")
