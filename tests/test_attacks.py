"""Attacks on the verdicts, each a real submission that must earn nothing (grader/THREAT_MODEL.md).

Every attacker here answers WRONGLY (or not at all) and then tries to make the grader believe
otherwise. Whatever student code does inside its kernel, a test only passes when the trusted test
cell recorded, exactly once, the values the instructor's solution recorded on hidden inputs.
"""
from __future__ import annotations

import json
import socket
import sys
import threading
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "engine"))
from submissions import PLAIN, TENSOR, cell_with_id, grade_all, references, submission, write  # noqa: E402

from grader.record import MIME_TYPE  # noqa: E402

WRONG = {  # plain fixture: answers that pass the visible checks and are wrong everywhere else
    "add": "def add(a, b):\n    return 5 if (a, b) == (2, 3) else a - b",
    "mean": "def mean(xs):\n    return 2.0 if xs == [1, 2, 3] else 0.0",
    "shout": "def shout(s):\n    return 'HI!' if s == 'hi' else s",
}


def forge(key: str, tree) -> str:
    """Python source that displays a record output, exactly as grader.record does."""
    payload = {"key": key, "value": tree, "rtol": 1.0, "atol": 1.0}
    return (f"from IPython.display import display\n"
            f"display({{{MIME_TYPE!r}: {payload!r}}}, raw=True)\n")


def attacks(refs: dict, refs_file: Path, port: int) -> dict[str, tuple[Path, dict]]:
    """name -> (source, answers); ``refs`` are the reference values (the strongest attacker)."""
    add_refs = refs["add_test"]
    known_visible = "from IPython.display import display\n"  # the visible answer is no secret
    secret_paths = [str(PLAIN), str(refs_file)]
    return {
        "excepthook": (PLAIN, {
            "add": "import sys\nsys.excepthook = lambda *a: None\n"
                   "get_ipython().set_custom_exc((BaseException,), lambda *a, **k: None)\n"
                   + WRONG["add"]}),
        "input_transformer": (PLAIN, {
            "add": WRONG["add"] + "\nget_ipython().input_transformers_post.append("
                   "lambda lines: ['record(\"visible\", 5)\\n'])"}),
        "builtins": (PLAIN, {  # the encoder's builtins: str() of every int says 5
            "add": "import builtins, grader.values\nreal_str = builtins.str\n"
                   "builtins.print = lambda *a, **k: None\n"
                   "grader.values.str = lambda x: '5' if type(x) is int else real_str(x)\n"
                   + WRONG["add"],
            "mean": WRONG["mean"] + "\nimport grader.record\ngrader.record.encode = "
                    "lambda value, _depth=0: {'float': '2.0'}"}),
        "lying_objects": (PLAIN, {
            "add": "class Liar(int):\n    def __eq__(self, other):\n        return True\n"
                   "    __hash__ = int.__hash__\n"
                   "def add(a, b):\n    return Liar(0)",
            "mean": "class Always:\n    def __eq__(self, other):\n        return True\n"
                    "    def __bool__(self):\n        return True\n"
                    "def mean(xs):\n    return Always()",
            "shout": "class S(str):\n    def __eq__(self, other):\n        return True\n"
                     "    __hash__ = str.__hash__\n"
                     "def shout(s):\n    return S('no')"}),
        "patched_testing": (TENSOR, {
            "square": "import torch, numpy\ntorch.testing.assert_close = lambda *a, **k: None\n"
                      "torch.equal = lambda *a, **k: True\n"
                      "numpy.testing.assert_allclose = lambda *a, **k: None\n"
                      "torch.Tensor.__eq__ = lambda self, other: torch.ones((), dtype=torch.bool)\n"
                      "def square(x):\n    return x + x",
            "row_mean": "def row_mean(x):\n    return x.mean(dim=0)"}),
        "forged_env": (PLAIN, {
            "add": "import os\nos.environ['COURSE_GRADER_RECORD'] = '0'\n"
                   "os.environ['NBGRADER_EXECUTION'] = 'autograde'\n" + WRONG["add"]}),
        "shadow_module_in_workdir": (PLAIN, {
            "add": "import os, sys\nos.makedirs('grader', exist_ok=True)\n"
                   "open('grader/__init__.py', 'w').write('')\n"
                   "open('grader/record.py', 'w').write('def record(key, value, **kw):\\n"
                   "    return value\\n')\n"
                   "for name in [m for m in sys.modules if m.startswith('grader')]:\n"
                   "    del sys.modules[name]\n"
                   "sys.path.insert(0, os.getcwd())\n"
                   "from grader.record import record\n" + WRONG["add"]}),
        "early_exit": (PLAIN, {"add": "import os\nos._exit(0)"}),
        "read_instructor_files": (PLAIN, {
            "add": "import json\nsource = None\n"
                   f"for path in {secret_paths!r}:\n"
                   "    try:\n        source = open(path).read()\n"
                   "    except OSError as exc:\n        print('unreadable', type(exc).__name__)\n"
                   "if source and 'return a + b' in source:\n"
                   "    def add(a, b):\n        return a + b\n"
                   "else:\n    def add(a, b):\n        return a - b"}),
        "network": (PLAIN, {
            "add": "import socket\ntry:\n"
                   f"    code = socket.create_connection(('127.0.0.1', {port}), timeout=3)"
                   ".recv(100).decode()\n"
                   "except OSError as exc:\n    code = 'def add(a, b):\\n    return a - b'\n"
                   "    print('no network:', exc)\nexec(code)"}),
        "forged_records_in_answer_cell": (PLAIN, {
            "add": WRONG["add"] + "\n" + "".join(forge(k, v["value"]) for k, v in add_refs.items()),
        }),
        "forged_records_during_test": (PLAIN, {
            "add": "forged = []\ndef add(a, b):\n    if (a, b) == (2, 3):\n        return 5\n"
                   "    if not forged:\n        forged.append(1)\n" + "".join(
                       "        " + line + "\n" for line in
                       forge("hidden", add_refs["hidden"]["value"]).splitlines())
                   + "    return a - b"}),
        "thread_forging_records": (PLAIN, {
            "add": WRONG["add"] + "\nimport threading, time\ndef spam():\n"
                   "    for _ in range(100):\n"
                   + "".join("        " + line + "\n" for line in
                             forge("hidden", add_refs["hidden"]["value"]).splitlines())
                   + "        time.sleep(0.05)\nthreading.Thread(target=spam, daemon=True).start()"}),
        "silenced_display": (PLAIN, {
            "add": WRONG["add"] + "\nget_ipython().display_pub.publish = lambda *a, **k: None"}),
        "record_rebound": (PLAIN, {
            "add": WRONG["add"] + "\n" + known_visible +
                   "def record(key, value, **kw):\n"
                   "    if key == 'visible':\n"
                   "        " + forge("visible", {"int": "5"}).splitlines()[1] + "\n"
                   "    return value"}),
    }


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("attacks")
    refs = references([PLAIN, TENSOR], tmp_path_factory)
    plain_refs = json.loads(refs[PLAIN].read_text())["cells"]
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    threading.Thread(target=_serve, args=(server,), daemon=True).start()
    jobs = {}
    for name, (source, answers) in attacks(plain_refs, refs[PLAIN], server.getsockname()[1]).items():
        jobs[name] = source, write(submission(source, answers), tmp / "subs" / f"{name}.ipynb")
    jobs["edited_test_cell"] = PLAIN, write(submission(PLAIN, WRONG, mutate=_edit_tests),
                                            tmp / "subs" / "edited_test_cell.ipynb")
    try:
        return grade_all(jobs, refs, tmp)
    finally:
        server.close()


def _serve(server):
    try:
        while True:
            conn, _ = server.accept()
            conn.sendall(b"def add(a, b):\n    return a + b")
            conn.close()
    except OSError:
        pass


def _edit_tests(nb):
    for gid, value in (("add_test", 5), ("mean_test", 2.0), ("shout_test", "HI!")):
        cell_with_id(nb, gid).source = f"record('visible', {value!r})\nrecord('hidden', None)"


def points(result, *gids):
    return {g: result.tests[g].points for g in gids}


def test_silencing_errors_with_excepthook_and_custom_exc_earns_nothing(graded):
    assert points(graded["excepthook"], "add_test") == {"add_test": 0}
    assert graded["excepthook"].tests["add_test"].status in ("failed", "error")


def test_input_transformer_rewriting_test_cells_earns_nothing(graded):
    r = graded["input_transformer"]
    assert r.score == 0 and r.tests["add_test"].status == "failed"
    assert "recorded 2 times" in r.tests["add_test"].reason  # the forged record, in two parts of the cell


def test_patched_builtins_and_encoder_earn_nothing(graded):
    r = graded["builtins"]
    assert r.score == 0
    assert "'hidden'" in r.tests["add_test"].reason and "'hidden'" in r.tests["mean_test"].reason


def test_objects_with_lying_eq_and_bool_earn_nothing(graded):
    r = graded["lying_objects"]
    assert r.score == 0
    assert all(t.status in ("failed", "error") for t in r.tests.values())


def test_monkeypatched_torch_and_numpy_testing_earn_nothing(graded):
    r = graded["patched_testing"]
    assert points(r, "square_test", "row_mean_test") == {"square_test": 0, "row_mean_test": 0}
    assert r.tests["square_test"].status == "failed"


def test_forged_environment_variables_earn_nothing(graded):
    """COURSE_GRADER_RECORD=0 does not silence the checks; NBGRADER_EXECUTION=autograde (which makes
    record() publish under stock nbgrader) only records the wrong answer, which is compared."""
    r = graded["forged_env"]
    assert r.tests["add_test"].points == 0 and r.tests["add_test"].status == "failed"
    assert r.tests["add_test"].reason.startswith("Wrong result")


def test_shadow_grader_module_written_to_the_workdir_earns_nothing(graded):
    assert graded["shadow_module_in_workdir"].tests["add_test"].points == 0


def test_early_exit_earns_nothing(graded):
    r = graded["early_exit"]
    assert r.score == 0
    assert {t.status for t in r.tests.values()} <= {"crashed", "not run"}
    assert any("exit" in p for p in r.problems)


def test_instructor_files_cannot_be_read(graded):
    r = graded["read_instructor_files"]
    assert r.tests["add_test"].points == 0
    answer = next(c for c in r.notebook.cells if "print('unreadable'" in c.source)
    printed = "".join(o.get("text", "") for o in answer.outputs)
    assert printed.count("unreadable") == 2, printed


def test_network_is_unreachable(graded):
    r = graded["network"]
    assert r.tests["add_test"].points == 0
    answer = next(c for c in r.notebook.cells if "create_connection" in c.source)
    assert "no network" in "".join(o.get("text", "") for o in answer.outputs)


def test_correct_records_forged_by_an_answer_cell_are_ignored(graded):
    r = graded["forged_records_in_answer_cell"]
    assert r.tests["add_test"].points == 0
    assert any("emitted grading records" in p for p in r.problems)
    assert not any(MIME_TYPE in json.dumps(c.get("outputs", [])) for c in r.notebook.cells)


def test_correct_records_forged_during_a_test_count_as_duplicates(graded):
    r = graded["forged_records_during_test"]
    assert r.tests["add_test"].points == 0
    assert "'hidden' was recorded 2 times" in r.tests["add_test"].reason


def test_a_thread_forging_records_in_the_background_earns_nothing(graded):
    assert graded["thread_forging_records"].tests["add_test"].points == 0


def test_silencing_the_display_publisher_earns_nothing(graded):
    test = graded["silenced_display"].tests["add_test"]
    assert test.points == 0 and "did not record" in test.reason


def test_rebinding_record_earns_nothing(graded):
    assert graded["record_rebound"].tests["add_test"].points == 0


def test_edited_test_cells_in_the_submission_are_replaced_by_the_trusted_ones(graded):
    r = graded["edited_test_cell"]
    assert r.score == 0
    test = next(c for c in r.notebook.cells if c.metadata.get("nbgrader", {}).get("grade_id")
                == "add_test")
    assert "BEGIN HIDDEN TESTS" in test.source


def test_reasons_never_show_hidden_test_source(graded):
    for result in graded.values():
        for t in result.tests.values():
            assert "HIDDEN" not in t.reason and "rng" not in t.reason, t.reason
