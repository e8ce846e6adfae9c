"""Outputs that would run script in a page made from them: every kind of active output we know of.

Each payload, if it runs, pushes its name on ``window.__pwned`` and sets ``document.title``.
Shared by tests/test_feedback_in_browser.py (pages opened in Chromium) and tests/test_attacks_batch.py
(the same answer among honest students in one batch).
"""
from __future__ import annotations

__all__ = ["ATTACK"]

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
