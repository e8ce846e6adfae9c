"""Verdicts: the values a test cell recorded compared, in the grader's process, with the solution's.

In: records of a run and the sealed references (:mod:`.references`, :mod:`.seal`). Out: per-test
:class:`.result.TestResult` and per-submission :class:`.result.Outcome` (:mod:`.result`: their one JSON
form), compared by :mod:`.compare`, nbgrader's output score for assert-only tests
(:mod:`.output_score`), the status words (:mod:`.statuses`). Imports no other part of the engine.
"""
