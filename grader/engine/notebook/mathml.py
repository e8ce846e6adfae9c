"""TeX to MathML when a page is made: maths that a browser draws itself, offline, with no script.

Chromium, Firefox and Safari render MathML Core natively, so a feedback page needs no MathJax (which
nbconvert's template loads from a CDN: raw TeX in an offline classroom, and a third-party script).
``latex2mathml`` (pure Python) converts the TeX; its output is not trusted, since a formula may be
the student's: ``\\href{javascript:...}{x}`` becomes an ``href`` attribute, ``\\style`` a ``style``
attribute, and ``\\text{<script>...}`` a ``<script>`` element. So the MathML is parsed as XML and
written again from :data:`MATHML_TAGS` and :data:`MATHML_ATTRIBUTES` only (no ``href``, ``style``,
``src``, event handler or namespace); a formula with any other element, or one that does not
convert or parse, is shown as its TeX source, escaped (:func:`tex_source`): a page never fails on
a formula.

:func:`tex_mathml` converts one formula; :class:`MathMLRenderer` is nbconvert's markdown renderer
with every formula it finds (``$...$``, ``$$...$$``, ``\\(...\\)``, ``\\[...\\]``,
``\\begin{env}...\\end{env}``) converted by a function of one's choice; :func:`markdown_mathml`
renders markdown with it.
"""
from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Callable
from html import escape

from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath

__all__ = ["MATHML_TAGS", "MATHML_ATTRIBUTES", "tex_mathml", "mathml_rebuilt", "tex_source", "MathMLRenderer", "markdown_mathml"]

MATHML = "{http://www.w3.org/1998/Math/MathML}"
# Presentation MathML that draws a formula: no maction (it switches on events), no annotation-xml
# (it may hold HTML), no semantics wrapper, nothing that loads or links.
MATHML_TAGS = frozenset({
    "math", "mrow", "mi", "mn", "mo", "ms", "mtext", "mspace", "msup", "msub", "msubsup", "mfrac", "msqrt",
    "mroot", "mover", "munder", "munderover", "mtable", "mtr", "mtd", "mstyle", "mpadded", "mphantom",
    "menclose", "merror", "mfenced", "mmultiscripts", "mprescripts", "none"})
# Layout attributes only: their values are written escaped and quoted, and none of them is a URL,
# a script or a style sheet.
MATHML_ATTRIBUTES = frozenset({
    "display", "displaystyle", "scriptlevel", "mathvariant", "mathsize", "mathcolor", "mathbackground",
    "stretchy", "fence", "separator", "form", "lspace", "rspace", "minsize", "maxsize", "symmetric",
    "largeop", "movablelimits", "accent", "accentunder", "linethickness", "width", "height", "depth",
    "voffset", "notation", "open", "close", "separators", "columnalign", "rowalign", "columnlines",
    "rowlines", "columnspacing", "rowspacing", "frame", "framespacing", "columnspan", "rowspan",
    "equalrows", "equalcolumns", "align"})


class _Refused(ValueError):
    """The converter's MathML holds something outside the allowlist."""


def tex_source(tex: str, display: bool) -> str:
    """The formula as readable TeX, escaped, between its delimiters: what a page shows for a formula
    that could not be converted."""
    fence = "$$" if display else "$"
    return f'<code class="tex-source">{escape(fence + tex + fence)}</code>'


def tex_mathml(tex: str, display: bool = False) -> str:
    """``<math>`` for the TeX formula ``tex`` (without its ``$`` delimiters), rebuilt from the
    allowlist; its TeX source (:func:`tex_source`) if it cannot be converted or holds anything else.

    display: a formula on its own line (``$$...$$``), else inline (``$...$``)."""
    from latex2mathml.converter import convert

    try:
        tree = ET.fromstring(convert(tex, display="block" if display else "inline"))
        return _rebuilt(tree)
    except Exception:  # noqa: BLE001 - the converter's own errors vary: any failure shows the source
        return tex_source(tex, display)


def mathml_rebuilt(markup: str) -> str:
    """``<math>`` markup (as :func:`tex_mathml` wrote it, maybe since changed by a student) written again
    from the allowlist; the markup as escaped text if it does not parse or holds anything else."""
    try:
        return _rebuilt(ET.fromstring(markup))
    except Exception:  # noqa: BLE001 - a parse error or a refused element: show it as text
        return f'<code class="tex-source">{escape(markup)}</code>'


def _rebuilt(element: ET.Element) -> str:
    """``element`` and its children written again: allowed tags, allowed attributes, escaped text."""
    tag = element.tag[len(MATHML):] if element.tag.startswith(MATHML) else element.tag
    if tag not in MATHML_TAGS:
        raise _Refused(tag)
    attributes = "".join(f' {name}="{escape(value, quote=True)}"' for name, value in sorted(element.attrib.items())
                         if name in MATHML_ATTRIBUTES)
    inner = escape(element.text or "", quote=False) + "".join(
        _rebuilt(child) + escape(child.tail or "", quote=False) for child in element)
    return f"<{tag}{attributes}>{inner}</{tag}>"


class MathMLRenderer(IPythonRenderer):
    """nbconvert's markdown renderer, every formula given to ``math(tex, display)`` instead of left
    as TeX for MathJax; by default :func:`tex_mathml`."""

    def __init__(self, *args, math: Callable[[str, bool], str] = tex_mathml, **kwargs):
        super().__init__(*args, **kwargs)
        self.math = math

    def inline_math(self, body: str) -> str:
        return self.math(body, False)

    def block_math(self, body: str) -> str:
        return self.math(body, True)

    def latex_environment(self, name: str, body: str) -> str:
        return self.math(f"\\begin{{{name}}}{body}\\end{{{name}}}", True)


def markdown_mathml(text: str, math: Callable[[str, bool], str] = tex_mathml, **renderer) -> str:
    """``text`` rendered from markdown to HTML as nbconvert renders it, formulas through ``math``.

    renderer: :class:`IPythonRenderer`'s options (attachments, path, ...); raw HTML is kept as written."""
    return MarkdownWithMath(renderer=MathMLRenderer(escape=False, math=math, **renderer)).render(text)
