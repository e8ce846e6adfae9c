"""Reading an answer's source: evidence for a person, never a verdict of its own.

In: the answer cells' text. Out: a :class:`.rules.Reading` per graded test (the answer left as released,
copied, or worth a look), decided from text in a child process with a time and a memory limit
(:mod:`.bounds`). Imports no other part of the engine.
"""
