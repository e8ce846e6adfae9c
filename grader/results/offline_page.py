"""The exporter of feedback pages: nbgrader's page, readable offline, with no third-party script.

nbgrader's feedback template loads MathJax from a CDN (nbconvert's ``mathjax()`` macro) to typeset
the TeX left in markdown: offline, a student reads raw ``$\\sum_i$``. :class:`OfflineFeedbackPage`
is nbconvert's :class:`HTMLExporter` with two changes:

- markdown is rendered with every formula already converted to MathML
  (:func:`grader.engine.notebook.mathml.markdown_mathml`), which the browser draws itself; this covers the
  instructor's cells and the instructor's comments (student cells arrive here already rendered and
  cleaned by :class:`grader.results.feedback.SanitizeStudentHTML`, their formulas included);
- the template's ``mathjax.html.j2`` is replaced by an empty macro: the page holds no ``<script>``
  to MathJax, or to anything else.

``nbgrader_config.py`` names it (``c.GenerateFeedback.exporter_class``) for stock
``nbgrader generate_feedback``, and :func:`grader.results.feedback.feedback` imposes it.
"""
from __future__ import annotations

from jinja2 import DictLoader, pass_context
from nbconvert.exporters import HTMLExporter
from traitlets import default

from ..engine.notebook.mathml import markdown_mathml

__all__ = ["OfflineFeedbackPage", "NO_MATHJAX"]

# Found before nbconvert's own file of that name (extra loaders come first): the macro stays callable.
NO_MATHJAX = "{%- macro mathjax(url='') -%}{%- endmacro %}"


class OfflineFeedbackPage(HTMLExporter):
    """HTMLExporter whose markdown carries MathML and whose page loads no MathJax."""

    @default("extra_loaders")
    def _no_mathjax(self):
        return [DictLoader({"mathjax.html.j2": NO_MATHJAX})]

    @pass_context  # the template's context: the cell, for its attachments
    def markdown2html(self, context, source):
        """Markdown to HTML, as :meth:`HTMLExporter.markdown2html` with the same options, formulas as MathML."""
        cell = context.get("cell", {})
        return markdown_mathml(source, attachments=cell.get("attachments", {}), embed_images=self.embed_images,
                               path=context.get("resources", {}).get("metadata", {}).get("path", ""),
                               anchor_link_text=self.anchor_link_text,
                               exclude_anchor_links=self.exclude_anchor_links, **self.lexer_options)
