"""Run the benchmarks and record them in benchmarks/RESULTS.md.

Each ``benchmarks/bench_<name>.py`` defines ``main() -> str`` returning a Markdown section
(a heading, a table of ratios measured side by side in one run, and a sentence on what the
numbers mean). This script runs them (all, or those named on the command line), prints each
section, and rewrites its block in RESULTS.md between ``<!-- bench:NAME -->`` markers, so a
partial run keeps the other sections. The header records date, machine and versions.

    python benchmarks/run.py                 # all
    python benchmarks/run.py data_iter       # just bench_data_iter.py

On a machine with a CUDA GPU every section is stored apart, as ``<!-- bench:NAME-gpu -->``, with the
machine named in the section itself: a GPU run keeps the CPU sections (and the CPU header) as
they are, and the other way round.
"""
from __future__ import annotations

import datetime
import importlib.util
import os
import platform
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "RESULTS.md"


def machine_description() -> str:
    import torch

    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU"
    return (
        f"{cpu}, {os.cpu_count()} logical cores, {gpu}; Python {platform.python_version()}, "
        f"torch {torch.__version__}, {platform.system()} {platform.release()}"
    )


def load(name: str):
    path = HERE / f"bench_{name}.py"
    if not path.exists():
        available = ", ".join(sorted(p.stem.removeprefix("bench_") for p in HERE.glob("bench_*.py")))
        raise SystemExit(f"no benchmark {name!r}; available: {available}")
    spec = importlib.util.spec_from_file_location(f"bench_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def update_results(name: str, section: str, header: str | None) -> None:
    """Write ``section`` as block ``name``; ``header`` (None: keep it) replaces the machine line."""
    text = RESULTS.read_text() if RESULTS.exists() else "# Benchmark results\n"
    if header is not None:
        machine = f"<!-- machine -->\n{header}\n<!-- /machine -->"
        if "<!-- machine -->" in text:
            text = re.sub(r"(?s)<!-- machine -->.*?<!-- /machine -->", lambda _: machine, text, count=1)
        else:
            text = text.replace("# Benchmark results\n", f"# Benchmark results\n\n{machine}\n", 1)
    block = f"<!-- bench:{name} -->\n{section.strip()}\n<!-- /bench:{name} -->"
    pattern = re.compile(rf"(?s)<!-- bench:{re.escape(name)} -->.*?<!-- /bench:{re.escape(name)} -->")
    text = pattern.sub(lambda _: block, text) if pattern.search(text) else text.rstrip() + "\n\n" + block + "\n"
    RESULTS.write_text(text)


HEADLINE = re.compile(r"<!-- headline: (.*?) \| (.*?) \| (.*?) -->")


def summary_table(text: str) -> str:
    """One table of every benchmark's headline figures, read from all sections of RESULTS.md."""
    rows = [f"| {what} | {value} | {goal} |" for what, value, goal in HEADLINE.findall(text)]
    return "\n".join(["| measure | measured | goal |", "| --- | --- | --- |", *rows])


def write_summary() -> str:
    text = RESULTS.read_text()
    table = summary_table(text)
    block = f"<!-- summary -->\n## Summary\n\n{table}\n<!-- /summary -->"
    if "<!-- summary -->" in text:
        text = re.sub(r"(?s)<!-- summary -->.*?<!-- /summary -->", lambda _: block, text, count=1)
    else:
        text = text.replace("<!-- /machine -->\n", f"<!-- /machine -->\n\n{block}\n", 1)
    RESULTS.write_text(text)
    return table


def main(names: list[str]) -> None:
    sys.path.insert(0, str(HERE.parent))
    names = names or sorted(p.stem.removeprefix("bench_") for p in HERE.glob("bench_*.py"))
    import torch

    today = datetime.date.today().isoformat()
    header = f"Latest run: {today} on {machine_description()}."
    on_gpu = torch.cuda.is_available()
    print(header)
    for name in names:
        print(f"\n== {name} ==", flush=True)
        section = load(name).main()
        print(section, flush=True)
        if on_gpu:
            update_results(f"{name}-gpu", f"{section.strip()}\n\n_Measured {today} on {machine_description()}._", None)
        else:
            update_results(name, f"{section.strip()}\n\n_Measured {today}._", header)
    print("\n== summary (all sections of RESULTS.md) ==\n" + write_summary())
    print(f"\nwrote {RESULTS.relative_to(HERE.parent)}")


if __name__ == "__main__":
    main(sys.argv[1:])
