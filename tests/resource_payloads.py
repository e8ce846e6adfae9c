"""Payloads that attack the grading machine rather than the verdict: message floods, deep trees.

Shared by tests/test_attacks_resources.py (each alone, measured) and tests/test_attacks_batch.py
(all in one batch among honest students).
"""
from __future__ import annotations

__all__ = ["flood", "DEEP_TREES"]


def flood(megabytes_each: float, count: int, pause: float = 0.0) -> str:
    """Code sending ``count`` signed stream messages of ``megabytes_each`` MB each, packed once,
    ``pause`` seconds apart (paced, none is dropped for want of room in the grader's queue)."""
    return ("import json, time\nkernel = get_ipython().kernel\nparent = kernel.get_parent('shell')\n"
            f"packed = json.dumps({{'name': 'stdout', 'text': 'x' * {int(megabytes_each * (1 << 20))}}}).encode()\n"
            f"for n in range({count}):\n    kernel.session.send(kernel.iopub_socket, 'stream', packed, parent=parent)\n"
            f"    time.sleep({pause})\n")


# Folder trees 1500 levels deep (31 kB paths, past PATH_MAX, deeper than Python recurses) in the
# kernel's working folder and in its socket folder, each with a link out.
DEEP_TREES = """import os
from ipykernel.connect import get_connection_file
def deep(top, levels=1500):
    here = os.getcwd()
    os.chdir(top)
    for _ in range(levels):
        os.mkdir('a-rather-long-folder-name')
        os.chdir('a-rather-long-folder-name')
    open('leaf', 'w').write('x')
    os.symlink('/etc', 'etc-link')
    os.chdir(here)
deep('.')
deep(os.path.dirname(get_connection_file()))
"""
