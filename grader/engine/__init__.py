"""The engine: grade one notebook. In: the trusted source notebook, a student's copy (or none, for
the reference run) and limits. It merges the student's answers into the trusted notebook, runs it
in a sandboxed kernel, reads each answer's source, and compares what the test cells recorded with
the solution's values in this process. Out: per-test verdicts and reasons (:mod:`.execute`).
"""
