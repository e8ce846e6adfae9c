"""grader: the course's auto-grader, built on nbgrader.

Layers, each with one job: course assembly, nbgrader configuration and preprocessors,
the sandbox, verdicts, the batch driver, the command line.
"""
