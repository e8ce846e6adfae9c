"""Maths in feedback pages, offline (issue 31, item 6): formulas are MathML when the page is made, and
the page loads no MathJax, from a CDN or anywhere else.

One course (the feedback fixture, whose first exercise's text gains an inline and a display formula,
and a written answer) is graded for real in the sandbox; ada's written answer holds a formula, a
formula that is a ``javascript:`` link and one that holds markup. Her page is read as HTML, and
opened in a real Chromium that may load only files: the formulas are drawn as maths (a superscript sits above its base), and no link
comes from her TeX.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from nbformat.v4 import new_markdown_cell

from browser_support import launched_chromium
from grader.authoring.assembly import build, release
from grader.engine.notebook import cells as nbs
from grader.intake.collect import collect
from grader.results.feedback import feedback
from grader.running.batch import autograde
from page_payloads import active_markup, page_text

SOURCE = Path(__file__).parent / "fixtures" / "grader" / "feedback" / "01_feedback.ipynb"
A = "01_feedback"
INSTRUCTOR = ("Limit a value to a range: $c(x) = \\min(\\max(x, a), b)^2$ for $a \\le b$, so that\n\n"
              "$$\\sum_{i=1}^{n} \\frac{x_i^2}{n} \\le b^2$$\n")
ADA = ("My reasoning: $y^2 \\ge 0$, and $\\href{javascript:(window.__pwned=[1]);void(0)}{click}$ "
       "and $\\text{<b onmouseover=alert(1)>x</b>}$.")


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> Path:
    """ada's feedback page."""
    base = tmp_path_factory.mktemp("feedback maths")
    source = base / "source"
    source.mkdir()
    nb = nbs.read_notebook(SOURCE)
    exercise = next(c for c in nb.cells if c.cell_type == "markdown" and c.source.startswith("## Exercise 1"))
    exercise.source += "\n\n" + INSTRUCTOR
    written = new_markdown_cell("Because $x^2 \\ge 0$.", metadata={"nbgrader": {  # a written answer, graded by hand
        "grade": True, "grade_id": "why", "locked": False, "points": 1, "schema_version": 3, "solution": True}})
    nb.cells.insert(nb.cells.index(exercise) + 1, written)
    nbs.write_notebook(nb, source / f"{A}.ipynb")
    root = base / "course"
    build(root, source)
    release(root)
    handed_in = nbs.read_notebook(root / "release" / A / f"{A}.ipynb")
    next(c for c in handed_in.cells if nbs.nbgrader_meta(c).get("grade_id") == "why").source = ADA
    nbs.write_notebook(handed_in, base / "inbox" / "ada" / f"{A}.ipynb")
    assert collect(root, base / "inbox").rejected == []
    autograde(root, workers=1, unsafe=False)
    feedback(root)
    return root / "feedback" / "ada" / A / f"{A}.html"


def paragraph_of(html: str, words: str) -> str:
    """The HTML of the paragraph that starts with ``words``."""
    found = re.search(r"<p>" + re.escape(words) + r".*?</p>", html, re.S)
    assert found, words
    return found.group(0)


def test_a_feedback_page_carries_its_formulas_as_mathml_and_no_mathjax(page):
    html = page.read_text(encoding="utf-8")
    assert not re.search(r"<script|MathJax\.|cdnjs|https?://cdn", html, re.I), "the page loads no script, no CDN"
    instructor = paragraph_of(html, "Limit a value to a range:")
    assert instructor.count('<math display="inline">') == 2 and "$" not in instructor and "\\min" not in instructor
    display = re.search(r'<math display="block">.*?</math>', html, re.S)
    assert display and re.search(r"<m(subsup|underover)><mo>∑</mo>", display.group(0)) and "<mfrac>" in display.group(0)
    assert "$$" not in page_text(html).split("Limit a value to a range:")[1].split("def clip")[0]


def test_student_tex_gives_mathml_but_no_link_and_no_markup(page):
    html = page.read_text(encoding="utf-8")
    ada = paragraph_of(html, "My reasoning:")
    assert "<msup><mi>y</mi><mn>2</mn></msup>" in ada, "a student's formula is drawn too"
    assert active_markup(ada) == [] and "javascript:" not in ada and not re.search(r"<a\b|\bhref", ada), ada
    assert "<b" not in ada.replace("<b>", "") and "&lt;b onmouseover=alert(1)&gt;" in ada, \
        "a formula holding markup is shown as its TeX"


RENDERED = """() => {
  const out = [];
  for (const math of document.querySelectorAll('math')) {
    const box = math.getBoundingClientRect(), sup = math.querySelector('msup');
    let raised = null;
    if (sup) {  // a superscript drawn as maths sits above its base's top; as plain text, on the same line
      const base = sup.children[0].getBoundingClientRect(), script = sup.children[1].getBoundingClientRect();
      raised = script.top < base.top - 1 && script.height < base.height + 0.5;
    }
    out.push({display: getComputedStyle(math).display, width: box.width, height: box.height, raised,
              text: math.closest('p') ? math.closest('p').innerText : ''});
  }
  return out;
}"""


@pytest.fixture(scope="module")
def browser():
    yield from launched_chromium()


@pytest.mark.required_in_ci("install Debian's chromium (`make browser-deps`, i.e. `apt-get install chromium`)")
def test_formulas_are_drawn_as_maths_offline_in_chromium(browser, page):
    tab = browser.new_page()
    refused = []

    def only_files(route):
        if route.request.url.startswith("file:"):
            return route.continue_()
        refused.append(route.request.url)
        return route.abort()

    tab.route("**/*", only_files)
    tab.goto(page.as_uri(), wait_until="load")
    drawn = tab.evaluate(RENDERED)
    assert refused == [], f"the page asked for {refused}"
    assert len(drawn) >= 5, drawn  # instructor: 2 inline, 1 display; ada: 2
    assert all(m["width"] > 0 and m["height"] > 0 for m in drawn), drawn
    assert {m["display"] for m in drawn} == {"math", "block math"}, "Chromium lays them out as MathML (CSS display: math)"
    assert [m["raised"] for m in drawn if m["raised"] is not None] and \
        all(m["raised"] for m in drawn if m["raised"] is not None), drawn
    limit = next(m["text"] for m in drawn if m["text"].startswith("Limit a value"))
    assert "$" not in limit and "\\" not in limit, limit
    tab.evaluate("""() => { for (const a of document.querySelectorAll('a[href]'))
        if (!['http:', 'https:', 'mailto:', 'file:'].includes(a.protocol)) a.click(); }""")
    tab.evaluate("() => new Promise(done => setTimeout(done, 300))")
    assert tab.evaluate("() => window.__pwned === undefined"), "ada's \\href ran"
    tab.close()
