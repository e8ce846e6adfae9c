"""The allowlist that outputs and feedback are rebuilt from (grader/engine/notebook/allowlist.py), field by field.

The pages themselves are checked in a real browser (tests/test_feedback_in_browser.py); these
tests pin each rule with values a student's kernel can send.
"""
from __future__ import annotations

import base64
import time

import pytest

from grader.engine.notebook.allowlist import (MAX_HTML_CHARS, MAX_MARKDOWN_CHARS, TOO_BIG, clean_html, html_depth, markdown_cell,
                                     markdown_html, safe_bundle, safe_image, safe_metadata, safe_output, safe_size)

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(40))).decode()
JPEG = base64.b64encode(b"\xff\xd8\xff\xe0" + bytes(40)).decode()


@pytest.mark.parametrize("value, kept", [
    (300, 300), (2.5, 2.5), ("300", None), ("1 onerror=alert(1)", None), (True, None), (0, None),
    (-4, None), (float("nan"), None), (float("inf"), None), (None, None), ([1], None), ({"a": 1}, None),
])
def test_sizes_are_positive_finite_numbers_only(value, kept):
    assert safe_size(value) == kept


def test_metadata_keeps_only_numeric_sizes_of_images():
    metadata = {"image/png": {"width": "1 onerror=alert(1)", "height": 20, "unconfined": True},
                "image/jpeg": {"width": 7.5}, "width": 10, "height": "x", "text/html": {"isolated": True},
                "filenames": {"image/png": "/etc/passwd"}}
    assert safe_metadata(metadata) == {"width": 10, "image/png": {"height": 20}, "image/jpeg": {"width": 7.5}}


@pytest.mark.parametrize("value, mime, kept", [
    (PNG, "image/png", PNG), (PNG[:20] + "\n" + PNG[20:], "image/png", PNG), (JPEG, "image/jpeg", JPEG),
    (JPEG, "image/png", None), (PNG + '" onerror="alert(1)', "image/png", None),
    (base64.b64encode(b"<svg onload=alert(1)>").decode(), "image/png", None), (PNG, "image/svg+xml", None),
    (5, "image/png", None),
])
def test_images_are_base64_pngs_and_jpegs_only(value, mime, kept):
    assert safe_image(value, mime) == kept


def test_a_bundle_keeps_known_types_and_cleans_their_text():
    bundle = safe_bundle({
        "text/plain": "<b>x</b>", "image/png": PNG, "image/svg+xml": "<svg onload=alert(1)/>",
        "application/javascript": "alert(1)", "text/html": '<script>alert(1)</script><a href="javascript:alert(1)">a</a>'
        '<img src=x onerror=alert(1)><b title="t" onclick="alert(1)">b</b>',
        "text/latex": r"$\href{javascript:alert(1)}{x}$", "application/vnd.jupyter.widget-view+json": {"model_id": "x"},
    })
    assert set(bundle) == {"text/plain", "image/png", "text/html"}
    assert bundle["text/plain"] == "<b>x</b>", "plain text is escaped by the page, not here"
    html = bundle["text/html"]
    assert "<script" not in html and "javascript:" not in html and "<img" not in html and "onclick" not in html
    assert "alert(1)" not in html and ">a</a>" in html and "<b>b</b>" in html and "title" not in html


def test_a_tag_outside_the_list_is_removed_and_its_text_kept_but_not_a_scripts():
    """nh3 removes what bleach escaped: the page shows what a browser would, less the disallowed parts."""
    html = clean_html('<foo>kept</foo><style>p {color: red}</style><script>alert(1)</script><!-- note -->'
                      '<p class="c" style="x" lang="en" title="t">p</p><a href="/rel">r</a><a href="mailto:a@b">m</a>')
    assert html == ('<div class="tex2jax_ignore">kept<p>p</p><a href="/rel" rel="noopener noreferrer">r</a>'
                    '<a href="mailto:a@b" rel="noopener noreferrer">m</a></div>')


@pytest.mark.parametrize("html, depth", [
    ("<div><p>x</p></div><br><hr><img src=x>", 2), ("<div/>" * 5, 5), ("<b><i>x</b></i>", 2),
    ("<div><table><tr><td></div>" * 3, 12), ("</div>" * 9 + "<div>", 1), ("<DIV></Div><div></div>", 1),
])
def test_depth_is_counted_without_parsing_and_never_below_the_parsers(html, depth):
    assert html_depth(html) == depth


@pytest.mark.parametrize("html", [
    "<div>" * 30_000 + "x", "<div><table><tr><td></div>" * 10_000, "<b>" * 90_000,
    "<div>" * 30_000 + "x" + "</div>" * 30_000, "<p>" + "x" * MAX_HTML_CHARS,
])
def test_html_too_deep_or_too_large_is_not_parsed(html):
    """Issue 28 (4): 30,000 nested divs took bleach 55 s (nh3 3 s); the depth is counted first, in one pass."""
    started = time.perf_counter()
    assert clean_html(html) == TOO_BIG
    assert time.perf_counter() - started < 1.0  # measured 0.01 s (benchmarks/bench_sanitize.py)


def test_markdown_too_large_is_not_rendered():
    started = time.perf_counter()
    assert markdown_html("*a" * MAX_MARKDOWN_CHARS) == TOO_BIG == markdown_cell("<div>" * 30_000)
    assert time.perf_counter() - started < 1.0


def test_a_markdown_cell_renders_to_itself():
    """Issue 28 (6): rendered twice, a fenced link became a live one (a blank line ends an HTML block)."""
    from nbconvert.filters.markdown import markdown2html

    text = "Answer\n\n```\nfirst\n\n[x](javascript:alert(1))\n```\n\n<img src=x onerror=alert(1)>\n\n**b**"
    once = markdown_cell(text)
    assert "\n" not in once and "javascript:alert(1)" in once and "<strong>b</strong>" in once
    again = markdown2html(once)
    assert again.strip() == once and 'href="javascript' not in again and "<img" not in again
    assert 'href="javascript' in markdown2html(markdown_html(text)), "control: the old two renderings make a link"


def test_a_stored_answer_is_cleaned_again_whatever_its_length():
    """The stored form is longer than the answer; cleaning it again (the feedback page) does not refuse it."""
    answer = "A line of an honest written answer, with *emphasis* and `code`.\n\n" * 300
    assert len(answer) < MAX_MARKDOWN_CHARS < len(markdown_cell(answer))
    again = markdown_cell(markdown_cell(answer))
    assert again != TOO_BIG and again.count("<em>emphasis</em>") == 300 and "\n" not in again


def test_a_stored_answer_full_of_unclosed_math_tags_is_cleaned_in_linear_time():
    """Issue 28 (4): each ``<math`` after the last ``</math>`` made the MathML search scan to the end:
    120,000 characters of ``<math `` took 29 s. Measured now: under 0.05 s."""
    import time

    from grader.engine.notebook.allowlist import _BLOCK, markdown_html

    start = time.perf_counter()
    html = markdown_html(_BLOCK + "<math " * 20_000 + "$x$ <math>y</math>" + "<math " * 20_000)
    assert time.perf_counter() - start < 5 and "<script" not in html


def test_latex_is_shown_as_text_when_there_is_no_plain_text():
    assert safe_bundle({"text/latex": r"$\href{javascript:alert(1)}{x}$"}) == \
        {"text/plain": r"$\href{javascript:alert(1)}{x}$"}


def test_markdown_is_rendered_then_cleaned():
    html = safe_bundle({"text/markdown": "[x](javascript:alert(1)) **b** <img src=x onerror=alert(1)>"})["text/html"]
    assert "javascript:" not in html and "<img" not in html and "<strong>b</strong>" in html


@pytest.mark.parametrize("output", [
    {"output_type": "display_data", "data": {"image/svg+xml": "<svg/>"}, "metadata": {}},
    {"output_type": "display_data", "data": {"application/javascript": "alert(1)"}, "metadata": {}},
    {"output_type": "update_display_data", "data": {"text/plain": "x"}, "metadata": {}},
    {"output_type": "stream", "name": "\x1b]0;x", "text": "x"},
    {"output_type": "stream", "name": "stdout", "text": 5},
    "not an output",
])
def test_outputs_with_nothing_allowed_are_dropped(output):
    assert safe_output(output) is None


def test_an_execution_count_that_is_not_a_count_is_dropped():
    out = safe_output({"output_type": "execute_result", "data": {"text/plain": "1"}, "metadata": {},
                       "execution_count": "<script>alert(1)</script>"})
    assert out["execution_count"] is None and out["data"] == {"text/plain": "1"}
