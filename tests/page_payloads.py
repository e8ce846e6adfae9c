"""Outputs that would run script in a page made from them: every kind of active output we know of.

Each payload, if it runs, pushes its name on ``window.__pwned`` and sets ``document.title``.
Shared by tests/test_feedback_in_browser.py (pages opened in Chromium) and tests/test_attacks_batch.py
(the same answer among honest students in one batch); :func:`active_markup` reads a page for what would
run (tests/test_attacks_collect.py, tests/test_attacks_batch.py); :func:`page_text` and :func:`table_rows`
read what a page says (tests/test_feedback_text.py).
"""
from __future__ import annotations

from html.parser import HTMLParser

__all__ = ["ATTACK", "active_markup", "page_text", "table_rows"]

ATTACK = r'''from IPython.display import HTML, Javascript, Latex, Markdown, display
def _p(name):  # JavaScript that says `name` ran (no spaces: it must fit an unquoted attribute;
    # void(0) last: a javascript: link whose value is a string would replace the whole page)
    return "(window.__pwned=window.__pwned||[]).push('" + name + "');document.title='pwned';void(0)"
display({"image/png": "iVBORw0KGgo=", "text/plain": "png"}, raw=True,
        metadata={"image/png": {"width": "1 onerror=" + _p("png-width")}})
display({"image/jpeg": "/9j/", "text/plain": "jpeg"}, raw=True, metadata={"height": "1 onerror=" + _p("jpeg-height")})
display(HTML("<script>" + _p("script") + "</script>"))
display(HTML('<img src="x" onerror="' + _p("html-img") + '">'))
display(HTML('<a href="javascript:' + _p("html-link") + '">click</a>'))
display(HTML("<svg><script>" + _p("inline-svg") + "</script></svg>"))
display({"image/svg+xml": '<svg xmlns="http://www.w3.org/2000/svg" onload="' + _p("svg") + '"><script>'
         + _p("svg-script") + "</script></svg>", "text/plain": "svg"}, raw=True)
display(Javascript(_p("javascript")))
display(Markdown("[click](javascript:" + _p("markdown-link") + ")"))
display(Latex(r"$\href{javascript:" + _p("latex") + "}{click}$"))
print("<script>" + _p("stdout") + "</script>")
'''


class _ActiveMarkup(HTMLParser):
    """Collects what would run in a browser: event-handler attributes, ``javascript:`` URLs, scripts that
    are not the page template's own (the students' payloads all name ``pwned``). The answer's source,
    shown as highlighted text, is not markup and is not collected."""

    def __init__(self):
        super().__init__()
        self.found, self._in_script = [], False

    def handle_starttag(self, tag, attrs):
        self._in_script = tag == "script"
        for name, value in attrs:
            if name.startswith("on") or (value or "").strip().lower().startswith("javascript:"):
                self.found.append(f"<{tag} {name}={value!r}>")

    def handle_data(self, data):
        if self._in_script and "pwned" in data:
            self.found.append(f"<script>{data[:60]}")

    def handle_endtag(self, tag):
        self._in_script = False


def active_markup(html: str) -> list[str]:
    """Whatever in ``html`` would run in a browser: event-handler attributes, ``javascript:`` URLs, the
    students' scripts (see :class:`_ActiveMarkup`); [] for a page that is safe to open."""
    reader = _ActiveMarkup()
    reader.feed(html)
    reader.close()
    return reader.found


class _Text(HTMLParser):
    """The text a reader sees (no style or script), and every table as rows of cell texts."""

    def __init__(self):
        super().__init__()
        self.parts, self.tables, self._hidden, self._cell = [], [], False, None

    def handle_starttag(self, tag, attrs):
        self._hidden = tag in ("style", "script")
        if tag == "table":
            self.tables.append([])
        elif tag == "tr" and self.tables:
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = []
        if tag in ("p", "div", "pre", "tr", "br", "h1", "h2", "h3", "li"):
            self.parts.append("\n")

    def handle_endtag(self, tag):
        self._hidden = False
        if tag in ("td", "th") and self._cell is not None and self.tables and self.tables[-1]:
            self.tables[-1][-1].append(" ".join("".join(self._cell).split()))
            self._cell = None

    def handle_data(self, data):
        if not self._hidden:
            self.parts.append(data)
            if self._cell is not None:
                self._cell.append(data)


def _read(html: str) -> _Text:
    reader = _Text()
    reader.feed(html)
    reader.close()
    return reader


def page_text(html: str) -> str:
    """What ``html`` shows as text (entities decoded; styles and scripts left out)."""
    return "".join(_read(html).parts)


def table_rows(html: str) -> list[list[list[str]]]:
    """Every table of ``html``: a list of rows, each the texts of its cells (spaces collapsed)."""
    return _read(html).tables
