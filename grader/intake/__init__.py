"""Intake: what students hand in, taken into the course directory. In: an inbox of student folders
or zips, or an nbgrader exchange; all of it untrusted. Out: ``submitted/<student>/<assignment>/``
with a timestamp (an earlier, different one moved to ``replaced/``), and every refused upload listed
with what to do (:func:`.collect.collect`); the lines the command prints: :func:`.summary.collect_lines`.
"""
