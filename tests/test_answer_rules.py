"""What the grader reads in an answer's source, in its own process (grader/engine/reading/rules.py).

Each attack below is the source of a real answer that gives the right values (so a grader that only
compares values, or trusts the kernel, would give the point) by the means its exercise rules out:
the builtin it forbids under another name, d2lite's own version by another import path, a loop, or
code that decides at run time what it reaches. The course's own solutions must read clean. A finding
flags the test for a person's review; it takes no point by itself (tests/test_answer_review.py).
"""
from __future__ import annotations

import inspect
from pathlib import Path

import nbformat
import pytest

import d2lite.optim
import d2lite.parallel
from grader.authoring.graded_cells import who_decides
from grader.engine.reading.rules import Rules, answer_problems, declared_rules, rule_problems
from grader.engine.grade import source_problems
from grader.engine.notebook.merge import merge, read_submission

COURSE = Path(__file__).resolve().parent.parent / "course"
INSTRUCTOR = ("trusted", "import torch\nimport torch.nn.functional as F\nimport numpy as np\nimport d2lite")


def problems(answer: str, rules: Rules = Rules(), added: str | None = None) -> list[str]:
    """Judge ``answer`` (one answer cell) after the instructor's imports and an optional added cell."""
    cells = [INSTRUCTOR] + ([("added", added)] if added else []) + [("answer", answer), ("test", "")]
    return answer_problems(cells, [len(cells) - 2], len(cells) - 1, rules)


SOFTMAX = Rules(avoid=("softmax", "softmin"))
HONEST_SOFTMAX = ("def softmax(X, dim):\n    \"\"\"softmax of X: a docstring may say softmax.\"\"\"\n"
                  "    e = torch.exp(X - X.max(dim=dim, keepdim=True).values)\n"
                  "    return e / e.sum(dim=dim, keepdim=True)\n")


def test_an_honest_answer_reads_clean_even_when_its_text_names_the_avoided_word():
    assert problems(HONEST_SOFTMAX, SOFTMAX) == []


@pytest.mark.parametrize("route", [
    "torch.special.softmax(X, dim)",            # missing from the kernel-side forbid list
    "F.log_softmax(X, dim).exp()",
    "torch.nn.Softmax(dim)(X)",
    "torch.softmin(-X, dim)",
    "X.softmax(dim)",
])
def test_a_builtin_the_exercise_rules_out_is_found_under_any_name(route):
    assert problems(f"def softmax(X, dim):\n    return {route}\n", SOFTMAX)


def test_an_alias_made_in_another_cell_is_followed_to_where_it_was_bound():
    found = problems("def softmax(X, dim):\n    return helper(X, dim)\n", SOFTMAX, added="helper = F.softmax\n")
    assert any("softmax" in p and "cell 2, line 1: `helper = F.softmax`" in p for p in found), found


@pytest.mark.parametrize("hatch", [
    "import sys\nsys.setprofile(None)\n",                                 # a module's state changed
    "exec(compile('y = 1', '/usr/lib/python3/site.py', 'exec'))\n",       # a file name of its choosing
    "import importlib\nm = importlib.import_module('d2lite.parallel')\n",
    "ip = get_ipython()\nip.input_transformers_post.append(lambda lines: lines)\n",
    "kernel = __builtins__\n",
    "g = d2lite.sgd.__globals__\n",
    "%run other.py\n",
    "%load_ext my_extension\n",                                            # imports a module it names
    "%load_ext autoreload\n%aimport my_module\n",                          # autoreload itself is fine, %aimport imports
    "table = vars(torch)\n",
    "table = globals()\n",
    "from operator import attrgetter\n",
    "import ctypes\n",
    "import builtins\n",
    "import IPython\nshell = IPython.get_ipython()\n",
    "from IPython.core.interactiveshell import InteractiveShell\nshell = InteractiveShell.instance()\n",
])
def test_code_that_decides_at_run_time_what_it_reaches_is_found_in_any_cell(hatch):
    """Found wherever it is (a finding flags the test for review: grader.engine.grade.reviewed)."""
    found = problems(HONEST_SOFTMAX, SOFTMAX, added=hatch)
    assert any(p.startswith(("code the grader cannot read", "code that changes what other cells share"))
               for p in found), found


@pytest.mark.parametrize("reading", [
    "import threading\nt = threading.Thread(target=print)\n_ = t._target\n",
    "f = getattr(torch, 'soft' + 'max')\n",
    "import inspect\nprint(inspect.signature(torch.exp))\n",
    "import sys\nprint(sys.version)\n",
])
def test_code_that_only_reads_counts_where_the_tested_names_reach_it(reading):
    """An exploration cell the answer does not use and that changes nothing shared is not read for rules;
    the same code inside the answer is."""
    assert problems(HONEST_SOFTMAX, SOFTMAX, added=reading) == []
    inside = "def softmax(X, dim):\n" + "".join(f"    {line}\n" for line in reading.splitlines()) + \
             "    return X.exp() / X.exp().sum(dim, keepdim=True)\n"
    assert any(p.startswith("code the grader cannot read") for p in problems(inside, SOFTMAX)), inside


def test_showing_things_with_ipython_display_is_fine():
    assert problems(HONEST_SOFTMAX, SOFTMAX, added="from IPython.display import HTML, display\ndisplay(HTML('<b>hi</b>'))\n") == []


def test_a_cell_the_answer_does_not_use_is_still_read_for_hatches():
    """An input transformer registered anywhere rewrites every later cell: unused cells count too."""
    assert problems(HONEST_SOFTMAX, SOFTMAX, added="def unused():\n    return eval('1')\n")


def test_no_loops_catches_loops_comprehensions_map_recursion_and_callbacks():
    rules = Rules(no_loops=True)
    for body in ("for x in X:\n        pass\n    return X", "return torch.stack([x for x in X])",
                 "return list(map(abs, X))", "return f(X[1:]) if len(X) else X", "return X.apply_(abs)"):
        assert problems(f"def f(X):\n    {body}\n", rules), body
    assert problems("def f(X):\n    return (X[:, None] - X[None]).abs()\n", rules) == []


def test_host_syncs_inside_a_loop_are_found_and_one_sync_after_it_is_not():
    rules = Rules(no_host_sync_in_loops=True)
    per_batch = "def acc(batches):\n    n = 0\n    for X in batches:\n        n += X.sum().item()\n    return n\n"
    once = "def acc(batches):\n    n = 0\n    for X in batches:\n        n += X.sum()\n    return n.item()\n"
    assert problems(per_batch, rules) and problems(once, rules) == []


def test_modules_an_exercise_rules_out_are_found_in_the_answer_and_in_what_it_reads():
    rules = Rules(avoid=("broadcast",), no_modules=("torch", "numpy"))
    assert problems("def shape(*s):\n    return tuple(np.broadcast_shapes(*s))\n", rules)
    assert problems("def shape(*s):\n    return tuple(torch.zeros(s[0]).shape)\n", rules)
    assert problems("def shape(*s):\n    return max(s, key=len)\n", rules) == []


@pytest.mark.parametrize("answer", [
    "def get_params(params, device):\n    return d2lite.get_params(params, device)\n",
    "def get_params(params, device):\n    return d2lite.parallel.get_params(params, device)\n",
    "from d2lite.parallel import get_params as copy_them\n"
    "def get_params(params, device):\n    return copy_them(params, device)\n",
    "def get_params(params, device):\n    where = d2lite.parallel\n    return where.get_params(params, device)\n",
])
def test_d2lites_own_version_of_the_function_earns_nothing_by_any_import_path(answer):
    assert problems(answer), answer


def test_a_copy_of_d2lites_function_with_new_names_and_messages_is_found():
    source = inspect.getsource(d2lite.optim.sgd)
    renamed = (source.replace("def sgd(params", "def sgd_step(weights").replace("params", "weights")
               .replace("param", "w").replace("sgd: ", "step: "))
    found = problems(renamed, Rules(avoid=("sgd",)))
    assert any("copy of d2lite's `sgd`" in p for p in found), found
    assert problems(inspect.getsource(d2lite.parallel.split_batch))  # by its own name


def test_pow_rules_out_fractional_powers_but_not_squares():
    rules = Rules(avoid=("sqrt", "pow"))
    assert problems("def root(x):\n    return x ** 0.5\n", rules)
    assert problems("def root(x):\n    return (x * x) ** 2\n", rules) == []


def test_declarations_are_read_as_literals_and_bad_ones_are_named():
    cell = "from grader.record import answer_rules, record\nanswer_rules(avoid=('cdist',), no_loops=True)\n"
    assert declared_rules(cell) == Rules(avoid=("cdist",), no_loops=True)
    assert declared_rules("record('a', 1, 'x')") == Rules()
    assert rule_problems("answer_rules(avoid=name)") and rule_problems("answer_rules(loops=True)")
    assert rule_problems("answer_rules(no_loops='yes')")


@pytest.mark.parametrize("notebook", sorted(COURSE.glob("*.ipynb")), ids=lambda p: p.stem)
def test_every_solution_of_the_course_reads_clean(notebook):
    trusted = nbformat.read(str(notebook), as_version=4)
    cells, _ = read_submission(notebook)
    found = {i: p for i, p in source_problems(merge(trusted, cells)).items() if p}
    assert found == {}


def with_answer(notebook: str, grade_id: str, source: str, folder: Path):
    """The course notebook's solution with one answer replaced, merged as the grader merges it."""
    trusted = nbformat.read(str(COURSE / notebook), as_version=4)
    submission = nbformat.read(str(COURSE / notebook), as_version=4)
    for cell in submission.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == grade_id:
            cell.source = source
    nbformat.write(submission, str(folder / notebook))
    cells, _ = read_submission(folder / notebook)
    return merge(trusted, cells)


@pytest.mark.parametrize("notebook, grade_id, answer", [
    ("01_tensors.ipynb", "softmax", "def softmax(X, dim):\n    return torch.special.softmax(X, dim)"),
    ("01_tensors.ipynb", "pairwise_distances",
     "def pairwise_distances(X, Y):\n    return torch._C._VariableFunctions.cdist(X, Y)"),
    ("01_tensors.ipynb", "pairwise_distances",
     "def pairwise_distances(X, Y):\n    return torch.stack([((x - Y) ** 2).sum(-1).sqrt() for x in X])"),
    ("01_tensors.ipynb", "broadcast_shape",
     "import numpy\ndef broadcast_shape(*shapes):\n    return tuple(numpy.broadcast_shapes(*shapes))"),
    ("01_tensors.ipynb", "normalize_rows",
     "def normalize_rows(X, p=2, eps=1e-12):\n    return torch.nn.functional.normalize(X, p, 1, eps)"),
    ("02_autograd.ipynb", "sgd_step", "def sgd_step(params, lr, batch_size):\n    d2lite.sgd(params, lr, batch_size)"),
    ("02_autograd.ipynb", "my_data_iter",
     "def my_data_iter(batch_size, features, labels):\n    yield from d2lite.data_iter(batch_size, features, labels)"),
    ("02_autograd.ipynb", "predict",
     "from d2lite.models import linreg\ndef predict(w, b, X):\n    with torch.no_grad():\n        return linreg(X, w, b)"),
    ("05_multigpu.ipynb", "split_batch",
     "def split_batch(X, y, devices):\n    return d2lite.split_batch(X, y, devices)"),
    ("05_multigpu.ipynb", "allreduce", "from d2lite import parallel as p\ndef allreduce(data):\n    p.allreduce(data)"),
    ("04_gpu.ipynb", "evaluate_accuracy",
     "def evaluate_accuracy(net, data_iter, device=None):\n    return d2lite.evaluate_accuracy_gpu(net, data_iter, device)"),
    ("07_attention.ipynb", "attention_solution",
     "def attention(Q, K, V, mask=None):\n    return F.scaled_dot_product_attention(Q, K, V, attn_mask=mask), None"),
    ("07_attention.ipynb", "block_solution",
     "class TransformerBlock(nn.Module):\n    def __init__(self, d_model, n_heads, d_ff):\n        super().__init__()\n"
     "        self.attn = nn.MultiheadAttention(d_model, n_heads, batch_first=True)\n"
     "    def forward(self, x):\n        return self.attn(x, x, x)[0]"),
    ("02_autograd.ipynb", "vjp",  # one backward call per row of v, not one in all
     "def vjp(f, x, v):\n    leaf = x.detach().requires_grad_(True)\n    y = f(leaf).reshape(-1)\n"
     "    for i, w in enumerate(v.reshape(-1)):\n        (w * y[i]).backward(retain_graph=True)\n    return leaf.grad"),
    ("04_gpu.ipynb", "evaluate_accuracy",
     "def evaluate_accuracy(net, data_iter, device=None):\n    device = device or next(net.parameters()).device\n"
     "    right = total = 0\n    for X, y in data_iter:\n"
     "        right += count_correct(net(X.to(device)), y.to(device)).item()\n        total += len(y)\n"
     "    return right / total"),
])
def test_the_courses_own_exercises_refuse_the_shortcuts(notebook, grade_id, answer, tmp_path):
    merged = with_answer(notebook, grade_id, answer, tmp_path)
    read = source_problems(merged)
    answer_at = next(i for i, c in enumerate(merged.notebook.cells)
                     if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)
    test_at = min(i for i in read if i > answer_at)
    assert read[test_at], f"{grade_id}: the shortcut was not found"
    assert not any(read[i] for i in read if i < answer_at)  # earlier exercises keep their points


def test_the_gate_says_who_decides_each_notebooks_points():
    def test_cell(gid, points, source):
        return nbformat.v4.new_code_cell(source, metadata={"nbgrader": {
            "grade": True, "solution": False, "grade_id": gid, "points": points, "locked": True}})
    cells = [
        test_cell("recorded", 3, "from d2lite.checks import forbid\nwith forbid(print):\n    f()\n"
                                 "### BEGIN HIDDEN TESTS\nfrom grader.record import answer_rules, record\n"
                                 "answer_rules(avoid=('cdist',))\nrecord('a', f(), 'what')\n### END HIDDEN TESTS\n"),
        test_cell("plain", 2, "### BEGIN HIDDEN TESTS\nfrom grader.record import record\n"
                              "record('b', g(), 'what')\n### END HIDDEN TESTS\n"),
        test_cell("asserts", 4, "assert h() == 1\n"),
    ]
    line = who_decides(cells)
    assert line.startswith("5 of 9 points rest on values the grader compares, 3 of them also on facts")
    assert "4 on the kernel's own word" in line and "advice only (recorded)" in line
