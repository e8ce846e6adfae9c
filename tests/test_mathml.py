"""TeX to MathML for feedback pages (grader/engine/notebook/mathml.py), and student markdown with formulas
(grader/engine/notebook/allowlist.py's markdown_html): what reaches the page is MathML from the allowlist, or
the formula's TeX as text; never a link, a script, a style or an event handler.

The pages themselves, offline in Chromium, are in tests/test_feedback_maths.py.
"""
from __future__ import annotations

import re

import pytest

from grader.engine.notebook.allowlist import markdown_cell, markdown_html
from grader.engine.notebook.mathml import markdown_mathml, tex_mathml
from page_payloads import active_markup

ACTIVE = re.compile(r"\bhref=|\bstyle=|\bsrc=|<script|\bon[a-z]+=|javascript:", re.I)


def test_a_formula_becomes_mathml_with_its_structure():
    assert tex_mathml("x^2") == '<math display="inline"><mrow><msup><mi>x</mi><mn>2</mn></msup></mrow></math>'
    block = tex_mathml(r"\frac{a}{b}", display=True)
    assert block.startswith('<math display="block">') and "<mfrac><mrow><mi>a</mi></mrow><mrow><mi>b</mi></mrow></mfrac>" in block


@pytest.mark.parametrize("tex", [
    r"\href{javascript:alert(1)}{x}",           # latex2mathml writes an href attribute
    r"\style{background:url(http://x)}{x}",     # ... a style attribute
    r"\color{red}{\href{javascript:alert(2)}{y}}",
])
def test_links_and_styles_are_dropped_and_the_formula_kept(tex):
    shown = tex_mathml(tex)
    assert shown.startswith("<math") and not ACTIVE.search(shown), shown


@pytest.mark.parametrize("tex", [
    r"\text{<script>alert(1)</script>}",        # latex2mathml copies the text as markup
    r"\text{<img src=x onerror=alert(1)>}",
    r"\text{a < b}",                            # not well-formed: cannot be checked, so not kept
    r"\frac{1}{",                               # latex2mathml raises
])
def test_a_formula_that_cannot_be_vouched_for_is_shown_as_its_tex(tex):
    shown = tex_mathml(tex)
    assert "<math" not in shown and active_markup(shown) == [] and "<script" not in shown and "<img" not in shown
    assert shown == f'<code class="tex-source">${tex.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")}$</code>'


def test_markdown_formulas_are_mathml_and_code_stays_code():
    html = markdown_mathml("Loss $\\ell(y)$ and `$HOME` and\n\n$$\\sum_i x_i$$\n")
    assert html.count("<math") == 2 and '<math display="block">' in html and '<math display="inline">' in html
    assert "<code>$HOME</code>" in html and "$$" not in html and "\\ell" not in html


def test_student_markdown_keeps_its_formulas_as_mathml_and_no_link():
    html = markdown_html("Mine: $\\href{javascript:alert(1)}{x} + y^2$ and [c](javascript:alert(2))\n\n"
                         "$$\\text{<img src=x onerror=alert(3)>}$$")
    assert active_markup(html) == [] and "javascript:" not in html.replace("[c](javascript:", "")
    assert "href" not in html, "no link: nh3 leaves the javascript: link's <a> without its href"
    assert '<math display="inline">' in html and "<msup><mi>y</mi><mn>2</mn></msup>" in html
    assert "&lt;img src=x onerror=alert(3)&gt;" in html, "the formula that holds markup is shown as text"


def test_a_student_cannot_forge_the_placeholder_of_a_formula():
    """Formulas wait for the cleaner as placeholders; text that looks like one stays text."""
    html = markdown_html("math00000000000000000000000000000000n0e and $x$")
    assert "math00000000000000000000000000000000n0e" in html and html.count("<math") == 1


def test_a_stored_written_answer_keeps_its_formulas_when_the_page_renders_it_again():
    stored = markdown_cell("I take $y^2$ because\n\n$$\\frac{a}{b}$$")
    page = markdown_html(stored)
    assert "<msup><mi>y</mi><mn>2</mn></msup>" in page and "<mfrac>" in page and "tex-source" not in page


def test_markup_hidden_in_a_stored_answers_mathml_is_rebuilt_from_the_allowlist():
    forged = ('<div class="tex2jax_ignore"><p><math display="inline"><mi onclick="alert(1)">x</mi>'
              '<maction actiontype="toggle"><mi>y</mi></maction></math>'
              '<math display="inline"><mi style="color:red" mathvariant="bold">z</mi></math></p></div>')
    page = markdown_html(forged)
    assert active_markup(page) == [] and "<mi onclick" not in page and "style=" not in page
    assert "<maction" not in page and "&lt;maction" in page, "a formula holding a refused element is shown as text"
    assert '<mi mathvariant="bold">z</mi>' in page
