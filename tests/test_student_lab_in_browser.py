"""A student's JupyterLab, checked in a real headless Chromium.

The student copy of 01_tensors is made exactly as `make lab` makes it (build, release,
copy the released notebook), served by a token-protected JupyterLab on 127.0.0.1 and
driven with Playwright. Screenshots land in build/test-artifacts/.
"""
from __future__ import annotations

import io
import os
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from browser_support import launched_chromium, running_lab, student_environment

# Without a Chromium that starts, the browser fixture skips; in CI that skip is a failure.
pytestmark = pytest.mark.required_in_ci(
    "install Debian's chromium (`make browser-deps`, i.e. `apt-get install chromium`) and check that "
    "`chromium --headless --no-sandbox --dump-dom about:blank` starts on this machine")

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "build" / "test-artifacts"
NOTEBOOK = "01_tensors/01_tensors.ipynb"
TIMEOUT_MS = 120_000

ANIMATOR_CELL = """\
import time
import d2lite

# A short demo loop: allow redraws every 0.2 s (by default the Animator keeps redrawing under 1 %
# of the time, which in a 5-second loop means a single frame).
animator = d2lite.Animator(xlabel="epoch", ylabel="loss", legend=["train", "test"], xlim=[0, 30],
                           min_interval=0.2, max_overhead=0.5)
for epoch in range(1, 31):
    animator.add(epoch, (1 / epoch, 1.2 / epoch))
    time.sleep(0.15)
animator.close()
"""


@pytest.fixture(scope="module")
def student_folder(tmp_path_factory) -> Path:
    """Released student copies, made with the same function as `make lab`."""
    from grader.authoring.assembly import build, release
    from grader.lab import student_copies

    base = tmp_path_factory.mktemp("lab with spaces")
    course_root, students = base / "course", base / "student"
    source = ROOT / "course" / "01_tensors.ipynb"
    build(course_root, source)
    release(course_root)
    student_copies(course_root, source, students)
    animator = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(ANIMATOR_CELL)])
    animator.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(animator, students / "animator.ipynb")
    return students


@pytest.fixture(scope="module")
def lab(student_folder, tmp_path_factory):
    argv = [str(Path(sys.executable).parent / "jupyter"), "lab", "--no-browser", "--ip=127.0.0.1",
            f"--ServerApp.root_dir={student_folder}"]
    if os.geteuid() == 0:  # CI and these machines run as root; a student's laptop does not
        argv.append("--allow-root")
    log = tmp_path_factory.mktemp("lab-log") / "jupyterlab.log"
    with running_lab(argv, student_folder, log, env=student_environment()) as server:
        yield server


@pytest.fixture(scope="module")
def browser():
    yield from launched_chromium()


@pytest.fixture
def page(browser):
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    yield page
    page.close()


VISIBLE_NOTEBOOK = ".jp-NotebookPanel:not(.lm-mod-hidden)"


def open_notebook(page, lab, path: str):
    """Open ``path`` and return the locator of its (visible) notebook panel once the kernel is idle."""
    page.goto(lab.page_url(path))
    panel = page.locator(VISIBLE_NOTEBOOK)
    panel.locator(".jp-Cell").first.wait_for(timeout=TIMEOUT_MS)
    page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=TIMEOUT_MS)
    return panel


def close_dialogs(page) -> list[str]:
    """The text of each JupyterLab dialog in front of the notebook, closed with Escape. On a busy machine one
    covered the cell and the click waited out its time; the texts say which it was if the cell then fails."""
    texts = []
    dialog = page.locator(".jp-Dialog")
    while dialog.count() and len(texts) < 3:
        texts.append(" ".join(dialog.first.inner_text(timeout=10_000).split())[:300])
        page.keyboard.press("Escape")
        page.wait_for_timeout(500)
    return texts


# How long one Shift+Enter may take to show [*] or [n] in the cell's prompt before it is pressed again. JupyterLab
# shows [*] within a fraction of a second of the keystroke, but an execution sent just after the kernel started can be
# lost whole (the kernel's first messages miss the server: jupyterlab/jupyterlab#8490, open), and the prompt then
# stays empty for ever: waiting 60 s for it cost each test a minute in about one run of two. A second keystroke
# runs the cell; one pressed when the first was only slow runs it twice, which the tests below allow.
PROMPT_WAIT_MS = 10_000
ATTEMPTS = 8


def run_cell(page, cell) -> None:
    """Run ``cell`` with Shift+Enter, making sure the keystroke reached it (its prompt shows [*] or [n])."""
    closed: list[str] = []
    for _ in range(ATTEMPTS):
        closed += close_dialogs(page)
        try:
            cell.locator(".jp-InputArea-editor").click(timeout=60_000)
        except Exception:
            continue
        page.keyboard.press("Shift+Enter")
        try:
            page.wait_for_function(
                "el => /\\[(\\*|\\d+)\\]/.test(el.innerText)",
                arg=cell.locator(".jp-InputArea-prompt").element_handle(), timeout=PROMPT_WAIT_MS)
            return
        except Exception:
            continue
    screenshot(page, "run-cell-failed.png")
    raise AssertionError(f"the cell did not start running after {ATTEMPTS} Shift+Enter (dialogs closed: {closed})")


def screenshot(page, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / name
    page.screenshot(path=str(path))
    return path


def expected_first_output(notebook: Path) -> str:
    """What the first code cell prints, computed in a separate Python process (the reference)."""
    first = next(c for c in nbformat.read(notebook, 4).cells if c.cell_type == "code")
    return subprocess.run([sys.executable, "-c", first.source], capture_output=True, text=True,
                          check=True).stdout.strip()


def test_running_a_cell_shows_its_output(page, lab, student_folder):
    """The student runs the first cell of the released 01_tensors and sees what Python prints."""
    panel = open_notebook(page, lab, NOTEBOOK)
    first_code = panel.locator(".jp-CodeCell").first
    run_cell(page, first_code)
    output = first_code.locator(".jp-OutputArea-output")
    output.first.wait_for(timeout=TIMEOUT_MS)
    page.wait_for_function("el => el.innerText.trim().length > 0", arg=output.first.element_handle(),
                           timeout=TIMEOUT_MS)
    shown = output.first.inner_text().strip()
    screenshot(page, "01_tensors-first-cell.png")
    assert shown == expected_first_output(student_folder / NOTEBOOK)


def test_released_copy_holds_no_solutions(student_folder):
    """What the lab serves is the student version: stubs in place, no solution or hidden-test markers."""
    text = (student_folder / NOTEBOOK).read_text()
    assert "raise NotImplementedError" in text
    for marker in ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS"):
        assert marker not in text


def test_nbgrader_validate_and_assignment_list_are_there(page, lab):
    """nbgrader's Validate control is on the notebook toolbar; its Assignment List opens."""
    panel = open_notebook(page, lab, NOTEBOOK)
    toolbar = panel.locator(".jp-NotebookPanel-toolbar")
    toolbar.get_by_text("Validate", exact=True).wait_for(timeout=TIMEOUT_MS)
    page.locator(".lm-MenuBar-itemLabel", has_text="Nbgrader").click()
    page.locator(".lm-Menu-itemLabel", has_text="Assignment List").click()
    tab = page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab", has_text="Assignments")
    tab.wait_for(timeout=TIMEOUT_MS)
    screenshot(page, "01_tensors-assignment-list.png")
    assert tab.count() == 1


def test_animator_plot_updates_live(page, lab):
    """d2lite.Animator redraws one plot in place while the cell runs, and the plot shows its axes."""
    from PIL import Image

    panel = open_notebook(page, lab, "animator.ipynb")
    cell = panel.locator(".jp-CodeCell").first
    run_cell(page, cell)
    image = cell.locator(".jp-OutputArea-output img")
    try:
        image.first.wait_for(timeout=TIMEOUT_MS)
    except Exception:
        screenshot(page, "animator-no-plot.png")
        raise
    sources = set()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        sources.add(image.first.get_attribute("src"))
        if cell.locator(".jp-InputArea-prompt").inner_text().strip() not in ("[*]:", ""):
            break  # the cell finished
        time.sleep(0.1)
    page.wait_for_timeout(500)  # the last frame, drawn by close()
    sources.add(image.first.get_attribute("src"))
    screenshot(page, "animator-live.png")
    assert len(sources) >= 2, "the plot was not redrawn while the cell ran"
    assert image.count() == 1, f"expected one plot updated in place, found {image.count()} images"
    shot = Image.open(io.BytesIO(image.first.screenshot())).convert("L")
    width, height = shot.size
    assert width > 150 and height > 100
    dark = sum(1 for value in shot.get_flattened_data() if value < 100)
    assert dark > 0.01 * width * height, "the plot image is (nearly) blank: no axes or lines drawn"
