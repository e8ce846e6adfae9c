"""Feedback pages opened in a real headless Chromium: no markup of the student's runs.

A student's answer displays every kind of active output we know of: a ``<script>``, an
``<img onerror>``, ``javascript:`` links in HTML, markdown and LaTeX, an SVG with a script, a
JavaScript output, and PNG/JPEG images whose ``width``/``height`` metadata breaks out of the
``<img>`` tag. Each payload, if it runs, pushes its name on ``window.__pwned`` and sets
``document.title``. Three pages are made from the same submission, for real:

A. ``course-grader autograde`` (sandboxed) then ``course-grader feedback``;
B. stock ``nbgrader autograde`` (opted in: its autograded notebook keeps the raw outputs) then
   stock ``nbgrader generate_feedback``, which the course's ``nbgrader_config.py`` gives the same
   sanitizer: it cleans whatever autograded notebook it is given;
C. the control: the same stock-autograded notebook through nbgrader's ``generate_feedback``
   WITHOUT the sanitizer. Its payloads must run, or this test could not see them run.

Every page is loaded from disk (requests off the machine are refused), every non-web link in it is
clicked, and then the page is asked what ran.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from browser_support import launched_chromium, opened_offline, payloads_ran

pytestmark = pytest.mark.required_in_ci(
    "install Debian's chromium (`make browser-deps`, i.e. `apt-get install chromium`) and check that "
    "`chromium --headless --no-sandbox --dump-dom about:blank` starts on this machine")
from classroom import A, FIXTURE, released_course
from grader.engine.notebook import cells as nbs
from grader.intake.collect import collect
from grader.results.feedback import feedback
from grader.running.batch import autograde
from grader.stock import OPT_IN
from page_payloads import ATTACK

NBGRADER = "import sys; from nbgrader.apps.nbgraderapp import main; sys.exit(main())"
STUDENT = "mallory"
# What must run in the control page: the payloads nbconvert's own template lets through. (Its
# JavaScript outputs need jQuery, and LaTeX links MathJax, both from a CDN this offline test refuses.)
CONTROL_MUST_RUN = {"png-width", "jpeg-height", "script", "html-img", "html-link", "inline-svg", "markdown-link"}


@pytest.fixture(scope="module")
def pages(tmp_path_factory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("feedback pages")
    root = released_course(base / "course")
    attack = nbs.read_notebook(FIXTURE)
    answer = next(c for c in attack.cells if nbs.nbgrader_meta(c).get("grade_id") == "scale")
    answer.source = ATTACK + answer.source
    nbs.write_notebook(attack, base / "inbox" / STUDENT / f"{A}.ipynb")
    assert collect(root, base / "inbox").rejected == []
    stock = base / "stock"
    shutil.copytree(root, stock)
    autograde(root, workers=1, unsafe=False)  # also writes the reference values the stock copy needs
    shutil.copytree(root / "references", stock / "references", dirs_exist_ok=True)
    shutil.copy(root / ".course-grader-key", stock / ".course-grader-key")
    stock_nbgrader(stock, "autograde", A, "--student", STUDENT, "--create")
    raw = (stock / "autograded" / STUDENT / A / f"{A}.ipynb").read_text(encoding="utf-8")
    assert "onerror=(window.__pwned" in raw and "<script>(window.__pwned" in raw, \
        "stock nbgrader should have kept the raw payloads; without them pages B and C prove nothing"
    control = base / "control"
    shutil.copytree(stock, control)
    feedback(root, students=[STUDENT])
    stock_nbgrader(stock, "generate_feedback", A, "--student", STUDENT, "--force")
    unsanitized(control)
    page = Path("feedback") / STUDENT / A / f"{A}.html"
    return {"course-grader": root / page, "stock autograde": stock / page, "control": control / page}


def stock_nbgrader(root: Path, *args: str) -> None:
    """Run nbgrader's own command line in ``root``, opted in to unsandboxed autograding."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COURSE_GRADER", "NBGRADER"))}
    env.update({OPT_IN: "1", "PATH": str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")})
    done = subprocess.run([sys.executable, "-c", NBGRADER, *args], cwd=root, env=env, capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]


def unsanitized(root: Path) -> None:
    """nbgrader's generate_feedback with every step of ours but the sanitizer."""
    from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
    from nbgrader.preprocessors import GetGrades
    from traitlets.config import Config

    from grader.authoring.config import nbgrader_api
    from grader.results.feedback import HideHiddenTests

    imposed = Config()
    imposed.GenerateFeedback.preprocessors = [HideHiddenTests, GetGrades, CSSHTMLHeaderPreprocessor]
    result = nbgrader_api(root, imposed).generate_feedback(A, STUDENT, force=True)
    assert result.get("success"), result


@pytest.fixture(scope="module")
def browser():
    yield from launched_chromium()




def test_the_control_page_runs_the_payloads(browser, pages):
    """Without the sanitizer the payloads run: the check below can see a script run."""
    page = opened_offline(browser, pages["control"])
    page.wait_for_function("names => names.every(n => (window.__pwned || []).includes(n))",
                           arg=sorted(CONTROL_MUST_RUN), timeout=10_000)
    assert CONTROL_MUST_RUN <= payloads_ran(page) and page.title() == "pwned"
    page.close()


@pytest.mark.parametrize("made_by", ["course-grader", "stock autograde"])
def test_no_payload_runs_in_a_feedback_page(browser, pages, made_by):
    page = opened_offline(browser, pages[made_by])
    assert payloads_ran(page) == set() and page.title() != "pwned", (made_by, payloads_ran(page))
    active = page.evaluate("""() => [...document.querySelectorAll('*')].flatMap(e =>
        [...e.attributes].filter(a => /^on/i.test(a.name) || /^\\s*(javascript|data|vbscript):/i.test(a.value)
            && !/^data:image\\/(png|jpeg);base64,/.test(a.value)).map(a => e.tagName + ' ' + a.name + '=' + a.value))""")
    assert active == [], active
    scripts = page.evaluate("() => [...document.scripts].map(s => s.text).filter(t => t.includes('__pwned'))")
    assert scripts == []
    text = page.inner_text("body")
    assert "<script>(window.__pwned" in text, "the student still sees, as text, what their code displayed"
    assert "\\href{javascript:" in text, "LaTeX is shown as its source"
    page.close()


WIDE = ("import matplotlib.pyplot as plt\nplt.figure(figsize=(30, 2), dpi=100)\nplt.plot([0, 1], [0, 1])\nplt.show()\n"
        "print('long-' * 120)\n")
OVERFLOW = """() => {
  const width = document.documentElement.clientWidth, found = [];
  for (const el of document.querySelectorAll('div.output_area pre, img, table')) {  // code input scrolls
    const box = el.getBoundingClientRect();
    if (box.right > width + 1) found.push(`${el.tagName} ends at ${Math.round(box.right)} px`);
    if (el.tagName === 'PRE' && el.scrollWidth > el.clientWidth + 1)
      found.push(`PRE cut: ${el.scrollWidth} > ${el.clientWidth} px: ${el.textContent.slice(0, 60)}`);
  }
  if (document.documentElement.scrollWidth > width + 1)
    found.push(`the page is ${document.documentElement.scrollWidth} px wide`);
  return found;
}"""


@pytest.fixture(scope="module")
def wide_page(tmp_path_factory) -> Path:
    """The feedback page of a student whose answer shows a 3000 px wide figure and prints a 600-character
    line, and whose pairwise answer fails a visible check (a long verdict)."""
    from classroom import broadcasting_bug

    base = tmp_path_factory.mktemp("wide page")
    root = released_course(base / "course")
    nb = broadcasting_bug()
    answer = next(c for c in nb.cells if nbs.nbgrader_meta(c).get("grade_id") == "scale")
    answer.source += "\n" + WIDE
    nbs.write_notebook(nb, base / "inbox" / "wil" / f"{A}.ipynb")
    assert collect(root, base / "inbox").rejected == []
    autograde(root, workers=1, unsafe=False)
    feedback(root)
    return root / "feedback" / "wil" / A / f"{A}.html"


@pytest.mark.parametrize("width", [1280, 800])
def test_a_feedback_page_wraps_its_lines_and_fits_its_figures(browser, wide_page, width):
    """Issue 31 (7): at 1280 px the verdict box cut long lines, and a wide figure ran past the page's edge."""
    page = browser.new_page(viewport={"width": width, "height": 900})
    page.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file:") else route.abort())
    page.goto(wide_page.as_uri(), wait_until="load")
    shown = page.evaluate("() => [document.querySelectorAll('img').length, document.body.innerText]")
    assert shown[0] >= 1 and "long-long-" in shown[1] and "WRONG (0/3)" in shown[1], shown[1][:2000]
    assert page.evaluate(OVERFLOW) == []
    page.close()
