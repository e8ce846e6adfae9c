"""grader: the course's auto-grader, built on nbgrader.

Layers, each with one job: course assembly, nbgrader configuration and preprocessors,
the sandbox, verdicts, the batch driver, the command line.
"""
import sys

# nbformat validates with jsonschema, whose optional ``rfc3987-syntax`` checker (installed through
# jupyter-events' ``jsonschema[format-nongpl]``) compiles dozens of lark grammars when imported:
# about 5 s of CPU in every process that imports nbformat, on a 2-core laptop (python-jsonschema
# issue 1392). Notebook validation never uses the "iri" formats it provides, so course-grader's
# processes go without it; jsonschema treats it as not installed. Anything imported earlier wins.
sys.modules.setdefault("rfc3987_syntax", None)
