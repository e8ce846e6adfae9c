"""What of a student's output may reach a page: an allowlist, not a blocklist.

Every output was made by a kernel running the student's code, so every byte of it is the
student's: MIME types, metadata, text. nbconvert's templates paste some of it into HTML as it is
(``width={{ width }}`` in an ``<img>`` tag, unquoted: a width of ``1 onerror=...`` runs script), and
MathJax (formgrader's view) or a TeX converter turns LaTeX into links (``\\href{javascript:...}``).
So what is kept is rebuilt, field by field, from what this module knows to be harmless:

================  ==============================================================================
MIME type         kept as
================  ==============================================================================
``text/plain``    text (templates escape it)
``image/png``     base64 only, and only if it decodes to a PNG (magic bytes); same for
``image/jpeg``    JPEG. These are the only ``data:`` URIs a page gets, and we write them
``text/html``     cleaned by nh3: :data:`SAFE_TAGS`, links to http(s)/mailto only, no ``img``,
                  no ``style``, no SVG, no event handlers; a tag outside the list is removed and
                  its text kept, ``<script>`` and ``<style>`` with their text. HTML over
                  :data:`MAX_HTML_CHARS` or nested deeper than :data:`MAX_HTML_DEPTH` is not parsed
                  at all (a parser's time grows with depth: 30,000 nested tags took bleach 55 s
                  and take nh3 3 s); a note says so
``text/markdown`` rendered to HTML, then cleaned as ``text/html`` (a ``[x](javascript:...)`` only
                  becomes a link, which the cleaner removes, once rendered); its formulas as
                  MathML rebuilt from :mod:`grader.engine.notebook.mathml`'s allowlist
``text/latex``    plain text (``text/plain``), shown in ``<pre>``, which MathJax does not typeset
                  (cleaned HTML is wrapped in ``tex2jax_ignore`` for the same reason: formgrader's
                  view of the autograded notebook still runs MathJax; feedback pages do not)
anything else     dropped (SVG, JavaScript, widgets, JSON, PDF, vendor types)
================  ==============================================================================

A markdown cell's answer is stored as :func:`markdown_cell` makes it: the cleaned HTML on one line,
which a markdown renderer (formgrader's, feedback's) passes through as one HTML block, unchanged.

Metadata keeps only ``width`` and ``height`` of the two image types (and at the top level), and
only when they are positive finite numbers (``bool`` is not a number); everything else goes.

:func:`safe_output` applies this to one nbformat output (a dict: ``output_type`` and its fields);
:func:`clean_html` and :func:`markdown_html` are used for text cells too.
"""
from __future__ import annotations

import base64
import binascii
import math
import re
import secrets

import nbformat

__all__ = ["clean_text", "ALLOWED_MIME", "SAFE_TAGS", "MAX_HTML_CHARS", "MAX_HTML_DEPTH", "MAX_MARKDOWN_CHARS", "clean_html", "markdown_html",
           "markdown_cell", "html_depth", "safe_size", "safe_image", "safe_bundle", "safe_metadata", "safe_output"]

ALLOWED_MIME = ("text/plain", "image/png", "image/jpeg", "text/html", "text/markdown", "text/latex")
IMAGES = {"image/png": b"\x89PNG\r\n\x1a\n", "image/jpeg": b"\xff\xd8\xff"}  # type -> magic bytes
SIZES = ("width", "height")
# What a student's HTML may keep: text structure and tables; no images (their onerror), styles,
# frames, forms or SVG. Attributes: a link's href and title, an abbreviation's title.
SAFE_TAGS = frozenset({"a", "abbr", "acronym", "b", "blockquote", "code", "em", "i", "li", "ol", "strong", "ul",
                    "p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "span", "div", "sub", "sup",
                    "del", "dl", "dt", "dd", "table", "thead", "tbody", "tr", "th", "td", "caption"})
SAFE_ATTRIBUTES = {"*": set(), "a": {"href", "title"}, "abbr": {"title"}, "acronym": {"title"}}  # "*": none on
# every tag (nh3 would otherwise keep lang and title everywhere)
SAFE_PROTOCOLS = frozenset({"http", "https", "mailto"})  # no javascript:, data:, vbscript:, file:
DROPPED_WITH_TEXT = frozenset({"script", "style"})  # other tags outside SAFE_TAGS keep their text
MAX_HTML_CHARS = 300_000  # one output; a cell keeps 256 kB of outputs anyway (Limits.max_output_bytes)
MAX_HTML_DEPTH = 100  # a pandas table is 5 deep; cost grows with depth times tags
MAX_MARKDOWN_CHARS = 20_000  # 3,000 words; mistune takes 1 s on 20,000 characters of "*a*a..."
TOO_BIG = ('<div class="tex2jax_ignore"><p>[not shown: HTML larger than {chars:,} characters or nested deeper '
           'than {depth} elements, or markdown larger than {md:,} characters]</p></div>').format(
    chars=MAX_HTML_CHARS, depth=MAX_HTML_DEPTH, md=MAX_MARKDOWN_CHARS)
# Where a start tag or end tag begins, as HTML's tokenizer reads it ("<" or "</", then an ASCII letter).
_TAG = re.compile(r"<(/?)([A-Za-z][^\t\n\f\r />]*)")
_VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "keygen", "link", "meta", "param",
                   "source", "track", "wbr"})
_BLOCK = '<div class="tex2jax_ignore">'  # what cleaned HTML opens with
_MATH_ELEMENT = re.compile(r"<math[\s>].*?</math>", re.DOTALL)  # MathML as tex_mathml writes it (never nested)
_BASE64 = re.compile(r"[A-Za-z0-9+/]*={0,2}")
_OUTPUT_TYPES = ("stream", "display_data", "execute_result", "error")
SURROGATE = re.compile("[\ud800-\udfff]")


def clean_text(value) -> str | None:
    """``value`` with its lone surrogates replaced by U+FFFD; None when it is not a str."""
    return SURROGATE.sub("\ufffd", value) if isinstance(value, str) else None


def html_depth(html: str, limit: int = MAX_HTML_DEPTH) -> int:
    """How deep the elements of ``html`` may nest, counted without parsing, in one pass (stops past
    ``limit``). Never less than a parser builds, up to the few elements it adds itself (``tbody``,
    ``tr``): a start tag opens (``<div/>`` too, as in HTML), and an end tag closes only the element
    last opened when it has that name (a parser ignores an end tag it cannot match)."""
    open_: list[str] = []
    deepest = 0
    for match in _TAG.finditer(html):
        name = match[2].lower()
        if match[1]:
            if open_ and open_[-1] == name:
                open_.pop()
        elif name not in _VOID:
            open_.append(name)
            deepest = max(deepest, len(open_))
            if deepest > limit:
                break
    return deepest


def clean_html(html: str) -> str:
    """``html`` with every tag, attribute and link protocol outside the allowlist removed (the text
    of a removed tag stays, except a script's or a style's), inside a ``tex2jax_ignore`` block:
    MathJax leaves it as text (no ``\\href`` link from student math). HTML too large or too deep to
    parse in time becomes :data:`TOO_BIG`."""
    import nh3

    if len(html) > MAX_HTML_CHARS or html_depth(html) > MAX_HTML_DEPTH:
        return TOO_BIG
    cleaned = nh3.clean(html, tags=set(SAFE_TAGS), attributes={k: set(v) for k, v in SAFE_ATTRIBUTES.items()}, url_schemes=set(SAFE_PROTOCOLS),
                        clean_content_tags=set(DROPPED_WITH_TEXT), strip_comments=True)
    return f'{_BLOCK}{cleaned}</div>'


def markdown_html(text: str) -> str:
    """Markdown rendered (nbconvert's renderer, as the page would), then cleaned; its formulas as
    MathML rebuilt from :mod:`grader.engine.notebook.mathml`'s allowlist. A stored answer (:func:`markdown_cell`'s
    one-line form) is cleaned again as it is, its MathML rebuilt again, not rendered a second time.

    The cleaner would escape MathML, so each formula is first a placeholder holding a random
    token the student cannot know, and replaces it once the HTML is cleaned."""
    from .mathml import markdown_mathml, tex_mathml

    from .mathml import mathml_rebuilt

    token, formulas = secrets.token_hex(16), []

    def placeholder(markup: str) -> str:
        formulas.append(markup)
        return f"math{token}n{len(formulas) - 1}e"

    if text.startswith(_BLOCK) and "\n" not in text and "\r" not in text:  # markdown_cell's form: a stored
        # answer, one HTML block that a renderer copies; its formulas are MathML already
        # searched only up to the last </math>: past it every <math would scan to the end (quadratic)
        end = text.rfind("</math>") + len("</math>") if "</math>" in text else 0
        html = _MATH_ELEMENT.sub(lambda found: placeholder(mathml_rebuilt(found[0])), text[:end]) + text[end:]
    elif len(text) > MAX_MARKDOWN_CHARS:
        return TOO_BIG
    else:
        html = markdown_mathml(text, math=lambda tex, display: placeholder(tex_mathml(tex, display)))
    return re.sub(f"math{token}n([0-9]+)e", lambda found: formulas[int(found[1])], clean_html(html))


def markdown_cell(text: str) -> str:
    """A markdown cell's text made safe to render: :func:`markdown_html` on one line (line breaks
    written ``&#10;``, the same character to HTML), so a markdown renderer reads it as one HTML block
    and passes it through unchanged. Rendered twice, a fenced ``[x](javascript:...)`` would become a
    link the second time (a blank line inside ``<pre>`` ends an HTML block)."""
    return markdown_html(text).replace("\r", "").replace("\n", "&#10;")


def safe_size(value) -> int | float | None:
    """``value`` if it is a positive finite int or float (not a bool), else None."""
    if type(value) in (int, float) and math.isfinite(value) and value > 0:
        return value
    return None


def safe_image(value, mime: str) -> str | None:
    """The base64 text of a PNG or JPEG (line breaks removed), or None if it is anything else."""
    if not isinstance(value, str) or mime not in IMAGES:
        return None
    text = "".join(value.split())
    if not _BASE64.fullmatch(text):
        return None
    try:
        head = base64.b64decode(text[:64] + "=" * (-len(text[:64]) % 4), validate=True)
    except (binascii.Error, ValueError):
        return None
    return text if head.startswith(IMAGES[mime]) else None


def _text(value) -> str | None:
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "".join(value)
    return value if isinstance(value, str) else None


def safe_bundle(data) -> dict:
    """A MIME bundle rebuilt from the allowlist (see the module's docstring); may be empty."""
    data = data if isinstance(data, dict) else {}
    bundle = {}
    for mime in ALLOWED_MIME:
        if mime in IMAGES:
            image = safe_image(_text(data.get(mime)), mime)
            if image:
                bundle[mime] = image
            continue
        text = _text(data.get(mime))
        if text is None:
            continue
        if mime == "text/html":
            bundle[mime] = clean_html(text)
        elif mime == "text/markdown":
            bundle.setdefault("text/html", markdown_html(text))
        elif mime == "text/latex":
            bundle.setdefault("text/plain", text)
        else:
            bundle[mime] = text
    return bundle


def safe_metadata(metadata) -> dict:
    """Only the positive numeric ``width``/``height``, per image type and at the top level."""
    metadata = metadata if isinstance(metadata, dict) else {}
    kept = {key: size for key in SIZES if (size := safe_size(metadata.get(key))) is not None}
    for mime in IMAGES:
        sizes = metadata.get(mime) if isinstance(metadata.get(mime), dict) else {}
        per_type = {key: size for key in SIZES if (size := safe_size(sizes.get(key))) is not None}
        if per_type:
            kept[mime] = per_type
    return kept


def safe_output(output) -> nbformat.NotebookNode | None:
    """A fresh nbformat output holding only allowed fields, or None when nothing of it is allowed."""
    kind = output.get("output_type") if isinstance(output, dict) else None
    if kind not in _OUTPUT_TYPES:
        return None
    if kind == "stream":
        text = _text(output.get("text"))
        name = output.get("name")
        if text is None or name not in ("stdout", "stderr"):
            return None
        return nbformat.v4.new_output("stream", name=name, text=text)
    if kind == "error":
        trace = output.get("traceback")
        return nbformat.v4.new_output(
            "error", ename=_text(output.get("ename")) or "Error", evalue=_text(output.get("evalue")) or "",
            traceback=[t for t in trace if isinstance(t, str)] if isinstance(trace, list) else [])
    data = safe_bundle(output.get("data"))
    if not data:
        return None
    fields = {"data": data, "metadata": safe_metadata(output.get("metadata"))}
    if kind == "execute_result":
        count = output.get("execution_count")
        fields["execution_count"] = count if type(count) is int and count >= 0 else None
    return nbformat.from_dict(nbformat.v4.new_output(kind, **fields))
