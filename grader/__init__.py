"""grader: the course's auto-grader, built on nbgrader.

One sub-package per stage, in pipeline order: ``authoring`` (course/*.ipynb -> an nbgrader course
directory), ``intake`` (students' uploads -> ``submitted/``), ``engine`` (one notebook: merge, run
sandboxed, read the answers, compare with the solution: its parts ``notebook``, ``isolation``,
``reading``, ``verdict``), ``running`` (many notebooks as jobs: local workers or Dask,
the batch, the quality gate), ``results`` (gradebook, grade table, feedback, export, report).
On top, the ways in: ``cli`` (``course-grader``, ``python -m grader``; ``demo``, ``lab`` and
``validate`` are three of its commands), ``stock`` (nbgrader's own ``autograde``), and ``record``
with ``values``, the only modules that run inside a student's kernel (``from grader.record import
record``). Every stage may use ``errors`` (``GraderError``) and ``terminal``, which import nothing of
the grader. Imports run one way, from the top down to the engine (tests/test_layout.py checks it).
"""
import sys

# nbformat validates with jsonschema, whose optional ``rfc3987-syntax`` checker (installed through
# jupyter-events' ``jsonschema[format-nongpl]``) compiles dozens of lark grammars when imported:
# about 5 s of CPU in every process that imports nbformat, on a 2-core laptop (python-jsonschema
# issue 1392). Notebook validation never uses the "iri" formats it provides, so course-grader's
# processes go without it; jsonschema treats it as not installed. Anything imported earlier wins.
sys.modules.setdefault("rfc3987_syntax", None)
