# Every target sets up what it needs: a virtualenv in .venv, installs pinned by constraints.txt,
# and the Debian packages a target needs (installed with apt-get when missing): bubblewrap for
# grading, Chromium for the browser test only.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
SANDBOX_PACKAGES ?= bubblewrap  # grading kernels run under bubblewrap (demo, test, bench)
BROWSER_PACKAGES ?= chromium    # only the browser test (part of make test) drives a browser
export PIP_DISABLE_PIP_VERSION_CHECK := 1
# torch's profiler (libkineto) writes "USDT: ... profiler_start/stop" lines straight to the process's stderr
# at every profile (notebook 06c, the diagrams' tests), which the first run's and nbval's kernels pass to the
# terminal. Its levels run VERBOSE 0 .. ERROR 4, USDT 5: only 6 silences them, kineto's own error lines
# included (torch still raises its errors in Python). Set KINETO_LOG_LEVEL=4 to see those.
export KINETO_LOG_LEVEL ?= 6

.PHONY: help setup sandbox-deps browser-deps test test-fast notebooks demo lab instructor-lab bench clean

help:
	@echo "make demo   - run the instructor pipeline on the bundled example class"
	@echo "make test   - run the whole test suite (unit tests, notebooks under nbval, course gate)"
	@echo "make lab    - JupyterLab on the released student notebooks"
	@echo "make bench  - benchmarks; results go to benchmarks/RESULTS.md"

setup: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	@python3 -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python >= 3.11 is needed (nbgrader 0.9.6 requires it); found " + sys.version.split()[0])'
	test -x $(PY) || python3 -m venv $(VENV)
	# torch first and pinned, so that no later requirement can pull a CUDA build.
	$(PY) -m pip install -q torch==2.13.0 -c constraints.txt
	$(PY) -m pip install -q -c constraints.txt -e '.[test]'
	touch $@

sandbox-deps:
	@bash scripts/ensure-debian-packages $(SANDBOX_PACKAGES)

browser-deps:
	@bash scripts/ensure-debian-packages $(BROWSER_PACKAGES)

# The unit tests run in TEST_WORKERS pytest-xdist processes (tests/conftest.py gives each its share of the
# cores' threads). --dist loadfile sends a test file whole to one worker: a file's module fixtures (a graded
# batch, a conformance corpus: up to two minutes each) are built once, never once per worker, and a file's
# tests never race each other for its shared folders. Files start in collection order, the slowest first
# (tests/conftest.py: SLOWEST_FILES_FIRST), rather than xdist's default of the files with most tests first.
# Three workers on two cores: many tests wait on something (a kernel's time limit, a Dask connection,
# a browser) with a core idle; with two workers the cores were busy 83 % of pytest's run, with three
# 95 % (2026-11-28: pytest 607 s with two, 514 s with three, the same tests, on a quiet machine).
# pytest's exit code 5 (no test collected) still fails the target.
TEST_WORKERS ?= 3

test: setup sandbox-deps browser-deps
	$(PY) -m pytest tests -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder --durations=30
	# Then the course notebooks under nbval and the course quality gate, at the same time: they share
	# nothing (nbval runs a copy in build/nbval, the gate builds in its own temporary folder) and each
	# leaves cores idle while its kernels start. The gate's lines are kept in build/gate.log and shown
	# after nbval's; the target fails if either fails.
	#
	# The course notebooks on the bundled data set. nbval runs a copy of course/ top to bottom. A
	# notebook with cells marked `# NBVAL_CHECK_OUTPUT` (or tagged nbval-check-output, which keeps the
	# marker out of the student's way) is first run up to its last such cell (scripts/run_checked_cells.py,
	# with nbclient), so that nbval can compare those cells with that first run (the committed notebooks
	# carry no outputs to compare with); later cells, and the other notebooks, run once. Kernels log errors
	# only (each would warn that it talks over local TCP without encryption).
	# The course quality gate: solutions full marks, releases zero, no vacuous test, no leak.
	rm -rf build/nbval && mkdir -p build/nbval && cp -r course build/nbval/
	D2LITE_DATASET=mnist5k $(PY) -m grader check course --workers 2 --quiet > build/gate.log 2>&1 & gate=$$!; \
	trap 'kill $$gate 2>/dev/null || true' INT TERM; \
	notebooks=0; \
	{ D2LITE_DATASET=mnist5k $(PY) scripts/run_checked_cells.py --timeout 600 build/nbval/course/*.ipynb && \
	  D2LITE_DATASET=mnist5k $(PY) -m pytest --nbval-lax --nbval-cell-timeout=600 -p no:cacheprovider build/nbval/course; \
	} || notebooks=$$?; \
	check=0; wait $$gate || check=$$?; \
	echo "== course quality gate (grader check course --workers 2), exit $$check"; cat build/gate.log; \
	test $$notebooks -eq 0 -a $$check -eq 0

demo: setup sandbox-deps
	D2LITE_DATASET=mnist5k $(PY) -m grader demo --workers 2

lab: setup
	$(PY) -m grader lab

instructor-lab: setup sandbox-deps
	$(PY) -m grader lab --instructor

bench: setup sandbox-deps
	$(PY) benchmarks/run.py

clean:
	rm -rf build .pytest_cache
