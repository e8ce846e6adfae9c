"""The class report and the similarity page in a real headless Chromium, opened from file://:
no console error, no request outside file://, every image loads and has alt text. Screenshots go
to build/test-artifacts/ (look at them)."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from browser_support import launched_chromium

pytestmark = pytest.mark.required_in_ci(
    "install Debian's chromium (`make browser-deps`, i.e. `apt-get install chromium`) and check that "
    "`chromium --headless --no-sandbox --dump-dom about:blank` starts on this machine")
from grader.authoring.coursedir import CourseDir
from grader.results.report import write_report
from grader.results.similarity_check import check_assignment
from grader.results.similarity_page import write_similarity_page

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from synthetic_class import synthetic_class  # noqa: E402

ARTIFACTS = Path(__file__).resolve().parents[1] / "build" / "test-artifacts"


@pytest.fixture(scope="module")
def pages(tmp_path_factory) -> list[Path]:
    os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"  # nbgrader runs alembic
    root = tmp_path_factory.mktemp("class")
    synthetic_class(root, students=25, notebooks=2, seed=7, plants={"copy": [("s0002", "s0011")]})
    course = CourseDir(root)
    similar = write_similarity_page(course, check_assignment(course, "01_nb"))
    return [write_report(course), similar, write_report(course, student="s0002")]


@pytest.fixture(scope="module")
def browser():
    yield from launched_chromium()


@pytest.mark.parametrize("which", [0, 1, 2], ids=["class", "similarity", "student"])
def test_page_loads_offline_with_images_and_alt_text(browser, pages, which):
    page = browser.new_page(viewport={"width": 1200, "height": 900})
    errors, outside = [], []
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("request", lambda req: outside.append(req.url) if not req.url.startswith("file://") else None)
    page.goto(pages[which].as_uri(), wait_until="load")
    images = page.eval_on_selector_all("img", "els => els.map(e => [e.getAttribute('src'), e.complete, "
                                               "e.naturalWidth, e.getAttribute('alt') || ''])")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"report-{which}.png"), full_page=which != 0)
    page.close()
    assert not errors, f"console errors: {errors}"
    assert not outside, f"requests outside file://: {outside}"
    if which == 0:
        assert len(images) == 5  # 2 notebooks x (scores, exercises) + grading time
    for src, complete, width, alt in images:
        assert complete and width > 0, f"{src} did not load"
        assert len(alt) > 20, f"{src} has no useful alt text: {alt!r}"
