"""The attackers of tests/test_attacks.py: the payloads, and the answers they come with.

Each attack is (which trusted source, answers by grade_id). The sources: "plain" and "tensor"
(tests/fixtures/engine), "importing" (plain, with each hidden part importing ``record`` itself as
the course's notebooks do) and "asserting" (plain without its record() calls: the checks the
kernel runs itself, as in a stock nbgrader test cell). ``refs`` hands the strongest attacker the
reference values, which a real student does not have.
"""
from __future__ import annotations

import sys
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "engine"))
from submissions import PLAIN, cell_with_id, write  # noqa: E402

from grader.record import MIME_TYPE  # noqa: E402
from grader.values import decode  # noqa: E402

WRONG = {  # answers that pass the visible checks and are wrong on every other input
    "add": "def add(a, b):\n    return 5 if (a, b) == (2, 3) else a - b",
    "mean": "def mean(xs):\n    return 2.0 if xs == [1, 2, 3] else 0.0",
    "shout": "def shout(s):\n    return 'HI!' if s == 'hi' else s",
}
PLAINLY_WRONG = {  # answers that fail the visible checks too
    "add": "def add(a, b):\n    return a - b",
    "mean": "def mean(xs):\n    return 0.0",
    "shout": "def shout(s):\n    return s",
}
PLAINLY_WRONG_TENSOR = {"square": "def square(x):\n    return x + x",
                        "row_mean": "def row_mean(x):\n    return x.mean(dim=0)"}
LOOSE = 1e300  # the tolerance forged records claim for themselves


def forge(key: str, tree, indent: str = "") -> str:
    """Python source that displays a record output, exactly as grader.record does."""
    payload = {"key": key, "value": tree, "what": "", "rtol": 0.0, "atol": 0.0}
    return (f"{indent}from IPython.display import display\n"
            f"{indent}display({{{MIME_TYPE!r}: {payload!r}}}, raw=True)\n")


LOOSE_RECORD = (  # a record() that sends the student's value, claiming a tolerance that fits anything
    "def record(key, value, what='', **kw):\n"
    "    from IPython.display import display\n"
    "    from grader.values import encode\n"
    f"    display({{{MIME_TYPE!r}: {{'key': key, 'value': encode(value), 'what': what,\n"
    f"             'rtol': {LOOSE!r}, 'atol': {LOOSE!r}}}}}, raw=True)\n"
    "    return value\n")
SHADOW_RECORD = (  # the same, in a module of its own: grader.values is shadowed too
    "from IPython.display import display\n"
    "def encode(v):\n"
    "    if type(v) is list:\n        return {'list': [encode(x) for x in v]}\n"
    "    return {type(v).__name__: v if type(v) is str else repr(v)}\n"
    "def record(key, value, what='', **kw):\n"
    f"    display({{{MIME_TYPE!r}: {{'key': key, 'value': encode(value), 'what': what,\n"
    f"             'rtol': {LOOSE!r}, 'atol': {LOOSE!r}, 'shadow': True}}}}, raw=True)\n"
    "    return value\n")


def importing_variant(tmp: Path) -> Path:
    """PLAIN with each hidden part importing ``record`` itself, as the course's notebooks do."""
    nb = nbformat.read(str(PLAIN), as_version=4)
    for cell in nb.cells:
        cell.source = cell.source.replace("### BEGIN HIDDEN TESTS\n",
                                          "### BEGIN HIDDEN TESTS\nfrom grader.record import record\n")
    return write(nb, tmp / "importing" / "plain_importing.ipynb")


def asserting_variant(tmp: Path) -> Path:
    """PLAIN without its record() calls: what is left are the checks the kernel runs itself, as in
    a stock nbgrader test cell. Graded only for stock's rule (no references of its own)."""
    nb = nbformat.read(str(PLAIN), as_version=4)
    for cell in nb.cells:
        cell.source = "\n".join(line for line in cell.source.splitlines() if not line.startswith("record("))
    return write(nb, tmp / "asserting" / "plain_asserting.ipynb")


def attacks(refs: dict, refs_file: Path, port: int) -> dict[str, tuple[str, dict]]:
    """name -> (which source, answers); ``refs`` are the reference values (the strongest attacker)."""
    add_hidden = refs["add_test"]["hidden"]["value"]
    return {
        "excepthook": ("plain", {
            "add": "import sys\nsys.excepthook = lambda *a: None\n"
                   "get_ipython().set_custom_exc((BaseException,), lambda *a, **k: None)\n"
                   + PLAINLY_WRONG["add"]}),
        "input_transformer": ("plain", {
            "add": PLAINLY_WRONG["add"] + "\nget_ipython().input_transformers_post.append("
                   "lambda lines: ['record(\"visible\", 5);\\n'])"}),
        "builtins": ("plain", {  # float() inside grader.record: every record claims a loose tolerance
            "mean": WRONG["mean"] + f"\nimport grader.record\ngrader.record.float = lambda x: {LOOSE!r}"}),
        "lying_objects": ("plain", {
            "add": "class Liar(int):\n    def __eq__(self, other):\n        return True\n"
                   "    __hash__ = int.__hash__\n"
                   "def add(a, b):\n    return Liar(0)",
            "mean": "class Always:\n    def __eq__(self, other):\n        return True\n"
                    "    def __bool__(self):\n        return True\n"
                    "def mean(xs):\n    return Always()",
            "shout": "class S(str):\n    def __eq__(self, other):\n        return True\n"
                     "    __hash__ = str.__hash__\n"
                     "def shout(s):\n    return S('no')"}),
        "patched_testing": ("tensor", {
            "square": "import torch, numpy\ntorch.testing.assert_close = lambda *a, **k: None\n"
                      "torch.equal = lambda *a, **k: True\n"
                      "numpy.testing.assert_allclose = lambda *a, **k: None\n"
                      "torch.Tensor.__eq__ = lambda self, other: torch.ones((), dtype=torch.bool)\n"
                      + PLAINLY_WRONG_TENSOR["square"],
            "row_mean": PLAINLY_WRONG_TENSOR["row_mean"]}),
        "forged_env": ("plain", {
            "add": "import os\nos.environ['COURSE_GRADER_RECORD'] = '0'\n"
                   "os.environ.pop('NBGRADER_EXECUTION', None)\n" + WRONG["add"]}),
        "shadow_module_in_workdir": ("importing", {
            "mean": "import importlib, os, sys\nos.makedirs('grader', exist_ok=True)\n"
                    "open('grader/__init__.py', 'w').write('')\n"
                    f"open('grader/record.py', 'w').write({SHADOW_RECORD!r})\n"
                    "for name in [m for m in sys.modules if m == 'grader' or m.startswith('grader.')]:\n"
                    "    del sys.modules[name]\n"
                    "sys.path.insert(0, os.getcwd())\nimportlib.invalidate_caches()\n" + WRONG["mean"]}),
        "early_exit": ("plain", {"add": "import os\nos._exit(0)"}),
        "read_instructor_files": ("plain", {
            "add": "solved = False\n"
                   f"for path in {[str(PLAIN), str(refs_file)]!r}:\n"
                   "    try:\n        solved |= 'return a + b' in open(path).read()\n"
                   "    except OSError as exc:\n        print('unreadable', type(exc).__name__)\n"
                   "if solved:\n"
                   "    def add(a, b):\n        return a + b\n"
                   "else:\n    def add(a, b):\n        return a - b"}),
        "network": ("plain", {
            "add": "import socket\ntry:\n"  # the helper's answer decides which function to define
                   f"    told = socket.create_connection(('127.0.0.1', {port}), timeout=3)"
                   ".recv(100).decode()\n"
                   "except OSError as exc:\n    told = ''\n"
                   "    print('no network:', exc)\n"
                   "def add(a, b):\n    return a + b if 'a + b' in told else a - b"}),
        "forged_records_in_answer_cell": ("plain", {  # the right records, then the test's are muted
            "add": WRONG["add"] + "\n" + "".join(forge(k, v["value"]) for k, v in refs["add_test"].items())
                   + "get_ipython().display_pub.publish = lambda *a, **k: None"}),
        "forged_records_during_test": ("plain", {
            "add": "forged = []\ndef add(a, b):\n    if (a, b) == (2, 3):\n        return 5\n"
                   "    if not forged:\n        forged.append(1)\n" + forge("hidden", add_hidden, " " * 8)
                   + "    return a - b"}),
        "thread_forging_records": ("plain", {  # a thread records while the visible check runs
            "add": "import threading\ngo, done = threading.Event(), threading.Event()\n"
                   "def forger():\n    go.wait()\n" + forge("hidden", add_hidden, " " * 4)
                   + "    done.set()\nthreading.Thread(target=forger, daemon=True).start()\n"
                   "def add(a, b):\n    if (a, b) == (2, 3):\n        go.set()\n        done.wait(10)\n"
                   "        return 5\n    return a - b"}),
        "silenced_display": ("plain", {
            **WRONG, "add": WRONG["add"] + "\nget_ipython().display_pub.publish = lambda *a, **k: None"}),
        "record_rebound": ("plain", {"mean": WRONG["mean"] + "\n" + LOOSE_RECORD}),
        # the answers alone, without a payload: what each undefended grader gives them
        "wrong": ("plain", WRONG),
        "wrong_importing": ("importing", WRONG),
        "plainly_wrong": ("plain", PLAINLY_WRONG),
        "plainly_wrong_tensor": ("tensor", PLAINLY_WRONG_TENSOR),
    }


CONTROLS = {  # name -> (the submission of, graded against which source, without the sandbox?)
    "lying_objects asserting": ("lying_objects", "asserting", False),
    "plainly_wrong asserting": ("plainly_wrong", "asserting", False),
    "read_instructor_files unsafe": ("read_instructor_files", "plain", True),
    "network unsafe": ("network", "plain", True),
}


def edited_tests(refs: dict):
    """Test cells edited to record the reference values (the strongest attacker) and assert nothing."""
    def mutate(nb):
        for gid, keys in refs.items():
            cell_with_id(nb, gid).source = "".join(
                f"record({k!r}, {decode(v['value'])!r})\n" for k, v in keys.items())
    return mutate
