"""Notebook text: what the nbgrader markers say and how a submission's answers enter the trusted notebook.

In: notebook JSON (the trusted source, a student's copy). Out: cells, points, exercises and shares
(:mod:`.cells`, :mod:`.shares`), the merged notebook (:mod:`.merge`), the gate's notebook copies
(:mod:`.variants`), traceback text (:mod:`.failures`), and outputs cut to what a page may show
(:mod:`.allowlist`, :mod:`.mathml`). Starts no process and imports nothing else of the engine.
"""
