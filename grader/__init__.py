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
# jupyter-events' ``jsonschema[format-nongpl]`` from jsonschema 4.25 on) builds dozens of lark parsers when
# imported: about 1 s of CPU on an idle 2-core machine, more on a busy one (python-jsonschema issue 1392), in
# every process that imports nbformat. constraints.txt pins jsonschema 4.24.1, which does not import it; for an
# environment installed without those pins, course-grader's own processes still go without it (notebook
# validation never uses the "iri" formats it provides; jsonschema treats it as not installed). Anything that
# imported nbformat before the grader has paid already.
sys.modules.setdefault("rfc3987_syntax", None)
