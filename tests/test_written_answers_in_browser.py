"""A written (markdown) answer with script in it, opened in a real headless Chromium (issue 28, item 6).

formgrader renders an autograded notebook's markdown with ``markdown2html`` and nothing else, in the
instructor's Jupyter origin while they grade by hand: a ``<script>`` or ``<img onerror>`` written in an
answer would run there. And the feedback page rendered a cleaned answer a second time, which turned a
fenced ``[x](javascript:...)`` into a live link. Here a student writes all of them in the fixture's
hand-graded answer; the course is graded for real, then:

- the autograded notebook is rendered as formgrader renders it (nbconvert's ``HTMLExporter`` with
  nbgrader's ``formgrade`` template, as ``FormgradeExtension`` configures it) and opened: nothing runs;
  the control, the submitted notebook through the same exporter, runs the payloads;
- the feedback page is opened, its links clicked: nothing runs and the fenced link is text.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from browser_support import launched_chromium, opened_offline, payloads_ran
from classroom import write_inbox
from grader.authoring.assembly import build, release
from grader.authoring.coursedir import CourseDir
from grader.engine.notebook import cells as nbs
from grader.intake.collect import collect
from grader.results.feedback import feedback
from grader.running.batch import autograde

pytestmark = pytest.mark.required_in_ci(
    "install Debian's chromium (`make browser-deps`, i.e. `apt-get install chromium`) and check that "
    "`chromium --headless --no-sandbox --dump-dom about:blank` starts on this machine")

FIXTURE = Path(__file__).parent / "fixtures" / "grader" / "manual" / "01_manual.ipynb"
A, STUDENT = "01_manual", "mallory"


def _p(name: str) -> str:
    """JavaScript that says ``name`` ran (no spaces: it must fit an unquoted attribute)."""
    return "(window.__pwned=window.__pwned||[]).push('" + name + "');document.title='pwned';void(0)"


WRITTEN = ("Lists are mutable.\n```\nfirst line\n\n[fenced](javascript:" + _p("fenced-link") + ")\n```\n\n"
           "<script>" + _p("script") + "</script>\n\n" '<img src="x" onerror="' + _p("img") + '">\n\n'
           "[plain](javascript:" + _p("link") + ")\n")  # the fence right after a paragraph: in one HTML block
CONTROL_MUST_RUN = {"script", "img"}  # what formgrader's own rendering runs from the raw answer


def formgrader_html(notebook: Path) -> str:
    """``notebook`` rendered as formgrader's submission page renders it (FormgradeExtension's exporter)."""
    from nbconvert.exporters import HTMLExporter
    from nbgrader.server_extensions.formgrader import handlers
    from traitlets.config import Config

    config = Config()
    config.HTMLExporter.template_name = "formgrade"
    config.HTMLExporter.extra_template_basedirs = [handlers.template_path]
    resources = {"assignment_id": A, "notebook_id": A, "submission_id": "1", "index": 0, "total": 1,
                 "base_url": "", "student": STUDENT, "last_name": "M", "first_name": "M",
                 "notebook_path": f"autograded/{STUDENT}/{A}/{A}.ipynb"}
    html, _ = HTMLExporter(config=config).from_filename(str(notebook), resources=resources)
    return html


@pytest.fixture(scope="module")
def pages(tmp_path_factory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("written answers")
    root = base / "course"
    build(root, FIXTURE.parent)
    release(root)
    nb = nbs.read_notebook(CourseDir(root).released_notebook(A))
    next(c for c in nb.cells if nbs.nbgrader_meta(c).get("grade_id") == "why_new_list").source = WRITTEN
    collect(root, write_inbox(base / "inbox", {STUDENT: nb}, A))
    autograde(root, workers=1)
    course = CourseDir(root)
    feedback(root, students=[STUDENT])
    pages = {"feedback": course.feedback(STUDENT, A) / f"{A}.html"}
    for name, notebook in (("formgrader", course.autograded(STUDENT, A) / f"{A}.ipynb"),
                           ("control", course.submitted_notebook(STUDENT, A))):
        pages[name] = base / f"{name}.html"
        pages[name].write_text(formgrader_html(notebook), encoding="utf-8")
    return pages


@pytest.fixture(scope="module")
def browser():
    yield from launched_chromium()




def test_the_raw_answer_in_formgraders_rendering_runs_its_script(browser, pages):
    """Control: the answer as submitted, rendered as formgrader renders it, runs; so the checks below can see it."""
    page = opened_offline(browser, pages["control"])
    assert CONTROL_MUST_RUN <= payloads_ran(page), payloads_ran(page)
    page.close()


def test_the_autograded_notebook_stores_the_answer_cleaned(pages):
    """The autograded notebook keeps the answer's text and none of its markup; submitted/ keeps it raw."""
    from grader.engine.notebook.allowlist import markdown_cell

    root = pages["feedback"].parents[3]
    graded = nbs.read_notebook(CourseDir(root).autograded(STUDENT, A) / f"{A}.ipynb")
    cell = next(c for c in graded.cells if nbs.nbgrader_meta(c).get("grade_id") == "why_new_list")
    assert cell.source == markdown_cell(WRITTEN) and "Lists are mutable." in cell.source
    assert "<script" not in cell.source and "<img" not in cell.source and 'href="javascript' not in cell.source
    submitted = nbs.read_notebook(CourseDir(root).submitted_notebook(STUDENT, A))
    assert WRITTEN in [c.source for c in submitted.cells], "submitted/ keeps the answer as written"


@pytest.mark.parametrize("made_by", ["formgrader", "feedback"])
def test_no_script_of_a_written_answer_runs(browser, pages, made_by):
    page = opened_offline(browser, pages[made_by])
    assert payloads_ran(page) == set() and page.title() != "pwned", (made_by, payloads_ran(page))
    links = page.evaluate("() => [...document.querySelectorAll('a[href]')].map(a => a.getAttribute('href'))"
                          ".filter(h => /^\\s*javascript:/i.test(h))")
    assert links == [], links
    text = page.inner_text("body")
    assert "Lists are mutable." in text and "[fenced](javascript:" in text, "the fenced link stays text"
    page.close()
