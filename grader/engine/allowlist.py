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
``text/html``     cleaned by bleach: :data:`SAFE_TAGS`, links to http(s)/mailto only, no ``img``,
                  no ``style``, no SVG, no event handlers
``text/markdown`` rendered to HTML, then cleaned as ``text/html`` (a ``[x](javascript:...)`` only
                  becomes a link, which the cleaner removes, once rendered); its formulas as
                  MathML rebuilt from :mod:`grader.engine.mathml`'s allowlist
``text/latex``    plain text (``text/plain``), shown in ``<pre>``, which MathJax does not typeset
                  (cleaned HTML is wrapped in ``tex2jax_ignore`` for the same reason: formgrader's
                  view of the autograded notebook still runs MathJax; feedback pages do not)
anything else     dropped (SVG, JavaScript, widgets, JSON, PDF, vendor types)
================  ==============================================================================

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

__all__ = ["ALLOWED_MIME", "SAFE_TAGS", "clean_html", "markdown_html", "safe_size", "safe_image",
           "safe_bundle", "safe_metadata", "safe_output"]

ALLOWED_MIME = ("text/plain", "image/png", "image/jpeg", "text/html", "text/markdown", "text/latex")
IMAGES = {"image/png": b"\x89PNG\r\n\x1a\n", "image/jpeg": b"\xff\xd8\xff"}  # type -> magic bytes
SIZES = ("width", "height")
# What a student's HTML may keep: text structure and tables; no images (their onerror), styles,
# frames, forms or SVG. Attributes: a link's href and title, an abbreviation's title.
SAFE_TAGS = sorted({"a", "abbr", "acronym", "b", "blockquote", "code", "em", "i", "li", "ol", "strong", "ul",
                    "p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "span", "div", "sub", "sup",
                    "del", "dl", "dt", "dd", "table", "thead", "tbody", "tr", "th", "td", "caption"})
SAFE_ATTRIBUTES = {"a": ["href", "title"], "abbr": ["title"], "acronym": ["title"]}
SAFE_PROTOCOLS = ["http", "https", "mailto"]  # no javascript:, data:, vbscript:, file:
_BASE64 = re.compile(r"[A-Za-z0-9+/]*={0,2}")
_OUTPUT_TYPES = ("stream", "display_data", "execute_result", "error")


def clean_html(html: str) -> str:
    """``html`` with every tag, attribute and link protocol outside the allowlist escaped, inside a
    ``tex2jax_ignore`` block: MathJax leaves it as text (no ``\\href`` link from student math)."""
    import bleach

    cleaned = bleach.clean(html, tags=SAFE_TAGS, attributes=SAFE_ATTRIBUTES, protocols=SAFE_PROTOCOLS,
                           strip=False, strip_comments=True)
    return f'<div class="tex2jax_ignore">{cleaned}</div>'



def markdown_html(text: str) -> str:
    """Markdown rendered (nbconvert's renderer, as the page would), then cleaned; its formulas as
    MathML rebuilt from :mod:`grader.engine.mathml`'s allowlist.

    The cleaner would escape MathML, so each formula is first a placeholder holding a random
    token the student cannot know, and replaces it once the HTML is cleaned."""
    from .mathml import markdown_mathml, tex_mathml

    token, formulas = secrets.token_hex(16), []

    def placeholder(tex: str, display: bool) -> str:
        formulas.append(tex_mathml(tex, display))
        return f"math{token}n{len(formulas) - 1}e"

    cleaned = clean_html(markdown_mathml(text, math=placeholder))
    return re.sub(f"math{token}n([0-9]+)e", lambda found: formulas[int(found[1])], cleaned)


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
