"""Attacks on the grader itself, each a real submission graded end to end (grader/THREAT_MODEL.md).

The attacker's answers are wrong; what they try is to harm the grading machine or the rest of the
batch, or to read hidden tests: symlinks left in the kernel's folders for the grader (root) to
write through after a restart, messages no Jupyter kernel would send, escape sequences for the
instructor's terminal, the kernel's input history, huge record floods and submissions built to
make merging slow or to crash the JSON parser. Every attack earns nothing, leaves the
instructor's files as they were, and the other submissions are graded as usual.
"""
from __future__ import annotations

import json
import re
import shutil
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import nbformat
import pytest

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "engine"))
from submissions import PLAIN, _grade_job, cell_with_id, many_cells, references, release, submission, write  # noqa: E402

from grader.engine.grade import Limits, References, grade  # noqa: E402
from grader.engine.isolation.notebook_run import TAINTED_NOTE  # noqa: E402

WRONG = {  # answers that pass the visible checks and are wrong everywhere else
    "add": "def add(a, b):\n    return 5 if (a, b) == (2, 3) else a - b",
    "mean": "def mean(xs):\n    return 2.0 if xs == [1, 2, 3] else 0.0",
    "shout": "def shout(s):\n    return 'HI!' if s == 'hi' else s",
}
SOLVED = {"add": "def add(a, b):\n    return a + b", "mean": "def mean(xs):\n    return sum(xs) / len(xs)",
          "shout": "def shout(s):\n    return s.upper() + '!'"}
HIDDEN_TEXT = ["random.Random(1)", "random.Random(2)", "rng.randint", 'shout("grader")']
LIMITS = Limits(cell_timeout_s=15, max_output_bytes=100_000)
TERMINAL_CONTROLS = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def indent(code: str) -> str:
    return "".join(f"    {line}\n" for line in code.splitlines())


# -- 1. symlinks in the kernel's folders, then a restart --------------------------------------

def planting_symlinks(targets: dict[str, str]) -> str:
    """An answer cell that replaces every file the grader writes into the kernel's folders (its
    matplotlib font list, the support files, the connection file) by a symlink to a host file."""
    return (f"import glob, os\ntargets = {targets!r}\n"
            "def plant(path, target):\n"
            "    try:\n        if os.path.lexists(path):\n            os.remove(path)\n"
            "        os.symlink(target, path)\n    except OSError as exc:\n        print('cannot plant', path, exc)\n"
            "os.makedirs('.matplotlib', exist_ok=True)\n"
            "for font in glob.glob('.matplotlib/fontlist-*.json') or ['.matplotlib/fontlist-v3.json']:\n"
            "    plant(font, targets['font'])\n"
            "plant('helper.py', targets['support'])\n"
            "from ipykernel.connect import get_connection_file\n"
            "plant(get_connection_file(), targets['socket'])\n"
            "plant(os.path.join(os.path.dirname(get_connection_file()), 'k-1'), targets['socket'])\n"
            + WRONG["add"])


IGNORES_INTERRUPT = ("import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
                     "while True:\n    time.sleep(0.5)")


# -- 2. messages no Jupyter kernel sends --------------------------------------------------------

CRAFTED_OUTPUTS = r"""import json, os, sys
os.write(1, b'raw \xff\xfe \xed\xa0\x80 bytes\n')
getattr(sys.stdout, 'buffer', sys.__stdout__.buffer).write(b'buffer \xff\xc0\n')
sys.__stdout__.flush()
print('\x1b]0;pwned\x07\x1b[2J\x1b[31mred\x9b2J\u202eevil')
kernel = get_ipython().kernel
session = kernel.session
DEEP = b'{"deep": ' + b'[' * 100000 + b']' * 100000 + b'}'
def pack(obj):
    if isinstance(obj, dict) and 'deep' in obj:
        return DEEP
    return json.dumps(obj, default=str).encode().replace(b'INVALID', b'\xff\xfe\xed\xa0\x80')
session.pack = pack  # ASCII JSON: "\ud800" arrives as a lone surrogate; NaN as NaN
parent = kernel.get_parent('shell')
def send(kind, content):
    session.send(kernel.iopub_socket, kind, content, parent=parent)
send('stream', {'name': 'stdout', 'text': 'lone \ud800 surrogate INVALID bytes\n'})
send('stream', {'name': '\x1b[2J', 'text': 5})
send('stream', {'name': 'stderr', 'text': ['a', 3, None]})
send('display_data', {'data': {'text/plain': 'x\udfff', 'image/png': 5, 'text/html': ['a', 3],
                               'application/json': {'n': float('nan'), '\ud800': [float('inf')]},
                               'bad mime \ud800': 'y'}, 'metadata': {'w': float('nan'), 5: 'x'}})
send('display_data', {'data': 'not a dict', 'metadata': 3})
send('execute_result', {'data': {'text/plain': 'r\ud800'}, 'metadata': {}, 'execution_count': 'seven'})
send('error', {'ename': 5, 'evalue': None, 'traceback': 'not a list'})
send('error', {'ename': 'Bad\ud800', 'evalue': 'INVALID', 'traceback': ['\ud800', 7]})
send('display_data', {'deep': 1})
nested = {}
for _ in range(300):  # 600 levels of JSON: as deep as ipykernel's encoder goes
    nested = {'a': [nested]}
send('display_data', {'data': {'application/json': nested, 'text/plain': 'deep'}, 'metadata': {}})
print('printed after the crafted messages \ud800 \udcff')
sys.stdout.flush()
"""


def strictly_valid(nb) -> str:
    """The notebook as saved: valid nbformat, strict JSON (no NaN), encodable as UTF-8."""
    nbformat.validate(nb)
    text = nbformat.writes(nb)
    text.encode("utf-8")
    json.loads(text, parse_constant=lambda name: pytest.fail(f"{name} in the saved notebook"))
    return text


# -- 3. the kernel's input history, read after a hidden test ran ----------------------------------

READ_HISTORY = """import linecache
ip = get_ipython()
print('In', In)
print('_ih', _ih)
print('_i', _i, '_ii', _ii, '_iii', _iii)
ip.run_line_magic('history', '-n')
print('Out', Out, '_oh', _oh, '_', _, '__', __)
history = ip.history_manager
print('manager', history.input_hist_raw, history.input_hist_parsed, history.output_hist)
print('linecache', [''.join(entry[2]) for entry in list(linecache.cache.values()) if len(entry) > 2])
raise ValueError(str(In) + str(linecache.cache))
"""

LEAK_THROUGH_REASONS = """import linecache, grader.record, grader.values
real = grader.values.encode
calls = []
def hidden_source():
    return ''.join(''.join(e[2]) for e in list(linecache.cache.values()) if len(e) > 2)
def leak(value, _depth=0):
    calls.append(1)
    if len(calls) % 2:  # each test's visible record: as it should be
        return real(value)
    if isinstance(value, float):  # mean_test: a tensor on a 'device' named by the hidden source
        return {'tensor': {'dtype': 'torch.float64', 'shape': [], 'device': hidden_source(),
                           'requires_grad': False, 'data': 'AAAAAAAAAAA='}}
    if isinstance(value, str):  # shout_test: an unknown dtype
        return {'tensor': {'dtype': 'torch.' + hidden_source(), 'shape': [], 'device': 'cpu',
                           'requires_grad': False, 'data': ''}}
    return {hidden_source(): 1}  # add_test: a value of an unknown kind
grader.record.encode = leak
"""


# -- 4. floods -----------------------------------------------------------------------------------

def forging_records(answer: str, megabytes: int) -> str:
    """The answer, which also displays ``megabytes`` MB of record outputs under many keys the
    first time it is called (so during its test cell, where records are kept)."""
    name = answer.split("(")[0].removeprefix("def ")
    return (answer.replace(f"def {name}(", f"def _{name}(", 1)
            + f"\nforged = []\ndef {name}(*args):\n    if not forged:\n        forged.append(1)\n"
            "        from IPython.display import display\n"
            f"        for n in range({megabytes}):\n"
            "            display({'application/vnd.course-grader.record+json': "
            "{'key': f'junk{n}', 'value': {'str': 'x' * 1_000_000}}}, raw=True)\n"
            f"    return _{name}(*args)\n")


# -- the graded submissions -----------------------------------------------------------------------

@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """An instructor's folder outside every sandbox: the trusted source with a support file, its
    references, and a gradebook; the attacks aim at these files."""
    root = tmp_path_factory.mktemp("course")
    (root / "source").mkdir()
    shutil.copyfile(PLAIN, root / "source" / "plain.ipynb")
    (root / "source" / "helper.py").write_text("SHIPPED = True\n")
    refs = references([PLAIN], tmp_path_factory)[PLAIN]
    shutil.copyfile(refs, root / "references.json")
    (root / "gradebook.db").write_text("grades")
    (root / "secret.txt").write_text("secret")
    return root


@pytest.fixture(scope="module")
def graded(course, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("kernel-attacks")
    source, refs = course / "source" / "plain.ipynb", course / "references.json"
    targets = {"font": str(course / "gradebook.db"), "support": str(refs), "socket": str(course / "secret.txt")}
    jobs = {
        "symlinks": {"add": planting_symlinks(targets), "mean": IGNORES_INTERRUPT},
        "outputs": {"add": CRAFTED_OUTPUTS + WRONG["add"]},
        "history": {"add": "print('before', In)\n" + WRONG["add"], "mean": READ_HISTORY.replace(
            "raise", WRONG["mean"] + "\nraise"), "shout": READ_HISTORY + WRONG["shout"]},
        "reasons": {"add": LEAK_THROUGH_REASONS + WRONG["add"]},
        "records": {name: forging_records(WRONG[name], 50) for name in WRONG},
        "honest": SOLVED,
    }
    subs = {}
    for name, answers in jobs.items():
        nb = submission(PLAIN, {**WRONG, **answers} if name != "honest" else answers)
        if name == "history":  # a later cell of the student's own, after the last test
            nb.cells.append(nbformat.v4.new_code_cell(READ_HISTORY))
        if name == "outputs":  # a lone surrogate in the submitted source (legal in JSON: "\ud800")
            cell_with_id(nb, "shout").source += "  # \ud800 in the source"
            subs[name] = tmp / "subs" / "outputs.ipynb"
            subs[name].write_text(json.dumps(nb, ensure_ascii=True), encoding="ascii")
            continue
        subs[name] = write(nb, tmp / "subs" / f"{name}.ipynb")
    with ProcessPoolExecutor(3) as pool:
        futures = {name: pool.submit(_grade_job, str(source), str(sub), str(refs), str(tmp / "work" / name), LIMITS)
                   for name, sub in subs.items()}
        return Graded({name: future.exception() or future.result() for name, future in futures.items()})


class Graded(dict):
    """name -> NotebookResult; a job whose grading raised raises here, failing only its own tests."""

    def __getitem__(self, name):
        result = super().__getitem__(name)
        if isinstance(result, BaseException):
            raise AssertionError(f"grading {name!r} raised {type(result).__name__}: {result}")
        return result


def outputs_text(result) -> str:
    return json.dumps([c.get("outputs", []) for c in result.notebook.cells])


def test_symlinks_left_for_a_restarted_kernel_change_no_host_file(graded, course, tmp_path_factory):
    result = graded["symlinks"]
    planting = next(c for c in result.notebook.cells if "def plant" in c.source)
    assert "cannot plant" not in outputs_text(result) and planting.execution_count  # every link was made
    assert any("the kernel was restarted" in p for p in result.problems), result.problems
    assert (course / "gradebook.db").read_text() == "grades"
    assert (course / "secret.txt").read_text() == "secret"
    assert (course / "references.json").read_bytes() == references([PLAIN], tmp_path_factory)[PLAIN].read_bytes()
    assert sorted(p.name for p in course.iterdir()) == ["gradebook.db", "references.json", "secret.txt", "source"]
    assert sorted(p.name for p in (course / "source").iterdir()) == ["helper.py", "plain.ipynb"]
    assert result.score == 0
    assert graded["honest"].score == 4  # graded beside it with the same course files


def test_each_kernel_start_gets_fresh_folders_with_the_trusted_support_files(tmp_path):
    """The restarted kernel finds the shipped helper.py again, not the student's symlink."""
    from grader.engine.isolation.kernel import Kernel

    helper = tmp_path / "course" / "helper.py"
    helper.parent.mkdir()
    helper.write_text("SHIPPED = True\n")
    with Kernel(tmp_path / "scratch", LIMITS, sandboxed=True, support=[("helper.py", helper)]) as kernel:
        first = kernel.workdir
        planted = kernel.run("import os\nos.remove('helper.py')\nos.symlink('/etc/passwd', 'helper.py')\n"
                             "print(os.getcwd())")
        kernel.restart()
        again = kernel.run("import os\nprint(os.getcwd(), os.path.islink('helper.py'), open('helper.py').read())")
    assert planted.status == "ok" and kernel.workdir != first
    cwd, link, text = again.outputs[0]["text"].split(maxsplit=2)
    assert (cwd, link, text) == (str(kernel.workdir), "False", "SHIPPED = True\n\n")


def test_messages_no_kernel_sends_are_rebuilt_into_a_valid_notebook(graded):
    result = graded["outputs"]
    assert result.score == 0
    strictly_valid(result.notebook)
    answer = next(c for c in result.notebook.cells if "os.write(1" in c.source)
    kinds = [(o.output_type, o.get("name")) for o in answer.outputs]
    assert set(kinds) <= {("stream", "stdout"), ("stream", "stderr"), ("display_data", None),
                          ("execute_result", None), ("error", None)}, kinds
    assert result.tests["add_test"].status == "failed"  # the answer cell ran to its end
    printed = "".join(o.text for o in answer.outputs if o.output_type == "stream")
    assert "raw \ufffd" in printed and "printed after the crafted messages \ufffd \ufffd" in printed, printed
    assert "lone \ufffd surrogate \ufffd" in printed and "\x1b]0;pwned" in printed  # kept for the notebook
    for output in answer.outputs:
        for mime, value in output.get("data", {}).items():
            assert mime != "image/png" and (isinstance(value, str) or mime.endswith("json")), (mime, value)
    shout = next(c for c in result.notebook.cells if "in the source" in c.source)
    assert "\ufffd in the source" in shout.source


def test_a_student_kernel_cannot_break_the_grader_with_history_or_reasons(graded):
    """Hidden tests reach neither the outputs nor the reasons, whatever the student prints later."""
    for name in ("history", "reasons"):
        result = graded[name]
        assert result.score == 0
        shown = outputs_text(result) + json.dumps([t.reason for t in result.tests.values()])
        assert not [t for t in HIDDEN_TEXT if t in shown], (name, shown[:3000])


def test_history_printed_before_the_first_hidden_test_is_kept(graded):
    nb = graded["history"].notebook
    before = next(c for c in nb.cells if c.source.startswith("print('before', In)"))
    assert "print('before', In)" in before.outputs[0]["text"]  # the student's own code: shown
    later = [c for c in nb.cells if c.source.startswith("import linecache")]
    assert len(later) == 3 and all(c.outputs[0]["text"] == TAINTED_NOTE for c in later)


def test_reasons_quote_no_student_text(graded):
    """A malformed value of an unknown kind, a tensor on a 'device' and of a 'dtype' named by the
    hidden source: each only says that the value is malformed."""
    reasons = {t.reason for t in graded["reasons"].tests.values()}
    assert reasons == {"Wrong result: 'hidden': the recorded value is malformed."}, reasons


def test_a_dict_with_keys_of_the_students_is_described_without_them():
    from grader.engine.verdict.compare import compare
    from grader.values import encode

    same, why = compare(encode({"w": 1, "rng = random.Random(1)": 2}), encode({"w": 1, "b": 0}), 0, 0)
    assert not same and "rng" not in why and "key(s) it should not have" in why and "'b'" in why


def test_record_floods_stop_at_the_notebooks_limit_with_a_clear_reason(graded):
    result = graded["records"]
    assert result.score == 0
    assert result.tests["add_test"].reason.startswith("Wrong result")
    assert "size limit" in result.tests["shout_test"].reason, result.tests["shout_test"]
    assert any("size limit" in p for p in result.problems), result.problems
    assert graded["honest"].score == 4  # the limit is per submission


# -- damaged and oversized submission files (rejected before any kernel starts) ----------------------

def test_twenty_thousand_cells_sharing_a_grade_id_are_refused_before_a_kernel_starts(course, tmp_path,
                                                                                       monkeypatch):
    """How long the refusal takes is measured in `make bench` (benchmarks/bench_refusals.py)."""
    import grader.engine.isolation.kernel

    started, real_start = [], grader.engine.isolation.kernel.Kernel.start
    monkeypatch.setattr(grader.engine.isolation.kernel.Kernel, "start", lambda self: (started.append(self), real_start(self)))
    sub = write(submission(PLAIN, WRONG, mutate=many_cells), tmp_path / "many.ipynb")
    result = grade(course / "source" / "plain.ipynb", sub, References.load(course / "references.json"),
                   workdir=tmp_path / "work", limits=LIMITS)
    assert {t.status for t in result.tests.values()} == {"missing"}
    assert "5000 cells" in result.problems[0], result.problems
    assert started == [], "the submission was refused from its file, before any kernel started"


def test_forty_thousand_student_cells_are_all_merged():
    """Merging keeps every cell of the crowd, each once; that it takes time linear in the number of
    cells is measured in `make bench` (benchmarks/bench_refusals.py)."""
    from grader.engine.notebook.merge import _Cell, merge

    trusted = nbformat.read(str(PLAIN), as_version=4)
    cells = [_Cell(c.cell_type, c.source, c.metadata.get("nbgrader", {}).get("grade_id", ""))
             for c in release(PLAIN).cells]
    at = next(i for i, c in enumerate(cells) if c.grade_id == "add")
    crowd = [_Cell("code", f"x = {n}", "add" if n % 2 else "") for n in range(40_000)]
    merged = merge(trusted, cells[:at + 1] + crowd + cells[at + 1:])
    assert len(merged.notebook.cells) == len(trusted.cells) + 40_000
    kept = sorted(c.source for c in merged.notebook.cells if c.source.startswith("x = "))
    assert kept == sorted(f"x = {n}" for n in range(40_000))


@pytest.mark.parametrize("depth", [100_000, 5_000])
def test_json_nested_deeper_than_the_parser_goes_is_rejected_with_a_reason(course, tmp_path, depth):
    sub = tmp_path / "deep.ipynb"
    sub.write_text('{"cells": [{"cell_type": "code", "source": "", "metadata": ' + "[" * depth + "]" * depth
                   + "}], \"metadata\": {}, \"nbformat\": 4, \"nbformat_minor\": 5}")
    result = grade(course / "source" / "plain.ipynb", sub, References.load(course / "references.json"),
                   workdir=tmp_path / "work", limits=LIMITS)
    assert {t.status for t in result.tests.values()} == {"missing"}
    assert "nested too deeply" in result.problems[0], result.problems


# -- the batch: saving, re-running, printing ------------------------------------------------------

FIXTURE = Path(__file__).parent / "fixtures" / "grader" / "course" / "01_fixture.ipynb"
A = "01_fixture"
MALLORY = "mallory\u009b2J\u009d0;pwned\u202e"  # C1 CSI/OSC and a bidi override: a valid folder name


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    from classroom import released_course
    from grader.engine.notebook import cells as nbs
    from grader.intake.collect import collect
    from grader.running.batch import autograde

    base = tmp_path_factory.mktemp("batch-attacks")
    root = released_course(base / "course")
    solution = nbs.read_notebook(FIXTURE)
    crafted = nbs.read_notebook(root / "release" / A / f"{A}.ipynb")
    scale = next(c for c in crafted.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "scale")
    scale.source = CRAFTED_OUTPUTS + "def scale(x, factor):\n    return x"
    for student, nb in {"alice": solution, MALLORY: crafted, "trent": solution}.items():
        nbs.write_notebook(nb, base / "inbox" / student / f"{A}.ipynb")
    assert len(collect(root, base / "inbox").imported) == 3
    (root / "autograded" / "trent" / A / f"{A}.ipynb").mkdir(parents=True)  # cannot be written
    return root, autograde(root, workers=2)


def test_a_result_that_cannot_be_saved_is_reported_and_the_batch_goes_on(batch):
    from grader.running.batch import autograde

    root, results = batch
    by = {o.student: o for o in results}
    assert by["alice"].score == 6 and by[MALLORY].score == 0
    assert by["trent"].score == 0 and any("could not be saved" in p for p in by["trent"].problems)
    shutil.rmtree(root / "autograded" / "trent" / A / f"{A}.ipynb")
    again = {o.student: o.score for o in autograde(root, workers=1)}
    assert again == {"alice": 6, MALLORY: 0, "trent": 6}


def test_crafted_outputs_are_saved_valid_and_regrading_works(batch):
    from grader.authoring.coursedir import MARKER
    from grader.running.batch import autograde

    root, _ = batch
    strictly_valid(nbformat.read(str(root / "autograded" / MALLORY / A / f"{A}.ipynb"), as_version=4))
    json.loads((root / "autograded" / MALLORY / A / MARKER).read_text(encoding="utf-8"))
    forced = autograde(root, students=[MALLORY], force=True, workers=1)
    assert [(o.student, o.score) for o in forced] == [(MALLORY, 0)]


def test_the_instructors_table_carries_no_terminal_controls(batch):
    from grader.results.table import grade_table
    from grader.running.batch import outcomes

    root, _ = batch
    table = grade_table(root, outcomes(root))
    assert not TERMINAL_CONTROLS.findall(table), TERMINAL_CONTROLS.findall(table)
    assert "mallory\\x9b2J\\x9d0;pwned\\u202e" in table and "6/6" in table
