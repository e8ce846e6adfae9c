"""The engine: grade one notebook. In: the trusted source notebook, a student's copy (or none, for
the reference run) and limits. Out: a :class:`~.verdict.result.NotebookResult` of per-test
verdicts and reasons, from :mod:`.grade`, the engine's one interface (``grade``, ``run_reference``,
``validate``). It is four parts, as nbgrader keeps its preprocessors apart from running the
kernel, and each imports only the parts below it (tests/test_layout.py checks it):

- :mod:`.notebook`: notebook text: the nbgrader markers, points and exercises, and the student's
  answers merged into the trusted notebook; it starts no process;
- :mod:`.isolation`: the sandboxed kernel the merged notebook runs in, and its limits;
- :mod:`.reading`: each answer's source read as text, evidence for a person, never a verdict;
- :mod:`.verdict`: what the test cells recorded compared, in this process, with the solution's
  values, and the typed results (``TestResult``, ``Outcome``) with their one JSON form.
"""
