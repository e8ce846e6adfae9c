"""Plausible wrong answers to the course's exercises lose their points (issue 30).

Each wrong answer below is what a student could write: it passes the exercise's visible checks but
breaks one clause of the contract in the notebook's markdown. The hidden tests were made to refuse
each of them; these tests keep it that way. Every wrong answer is put into the course notebook's own
solution in place of the one answer cell, graded by the engine (sandboxed) against the notebook's
trusted reference, and must lose the exercise's points while the unchanged solution earns them all.

Cost: each notebook is cut after the last test cell that a wrong answer targets (cells run in
order, so the ones after it cannot change its verdict); one reference run and one graded solution per
notebook; the wrong answers to different exercises of a notebook share one submission (each
exercise's test reads only its own answer, and
:func:`test_a_batched_submission_costs_no_other_exercise_a_point` checks that the others keep every
point); two wrong answers to the same cell need a submission each. 6 references and 15 submissions,
run notebook by notebook in two worker processes.
"""
from __future__ import annotations

import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

from grader.engine.notebook import cells as nbs

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "engine"))
from submissions import submission, write  # noqa: E402

COURSE = Path(__file__).resolve().parent.parent / "course"

# -- the wrong answers: (notebook, answer cell, its test cell, the hidden key that refuses it, source) --

CHECK_GRADIENT_BY_NORM = '''\
def check_gradient(f, x, h=1e-6, atol=1e-5, rtol=1e-3):
    """True if autograd's gradient of scalar f at x matches central differences."""
    leaf = x.detach().clone().requires_grad_(True)
    f(leaf).backward()
    analytic = leaf.grad
    numeric = numerical_grad(f, x, h)
    return bool((analytic - numeric).norm() <= atol + rtol * numeric.norm())
'''

TRAIN_LINREG_EPOCH_LOSS_WITH_GRAPH = '''\
def train_linreg(features, labels, lr=0.03, num_epochs=3, batch_size=10):
    """Minibatch SGD on squared loss.  Returns w (d, 1), b (1,), per-epoch mean losses."""
    w = torch.normal(0, 0.01, size=(features.shape[1], 1), requires_grad=True)
    b = torch.zeros(1, requires_grad=True)
    epoch_losses = []
    for _ in range(num_epochs):
        for X, y in d2lite.data_iter(batch_size, features, labels):
            loss = d2lite.squared_loss(d2lite.linreg(X, w, b), y)
            loss.sum().backward()
            d2lite.sgd([w, b], lr, batch_size)
        epoch_loss = d2lite.squared_loss(d2lite.linreg(features, w, b), labels).mean()
        epoch_losses.append(float(epoch_loss))
    return w, b, epoch_losses
'''

TRAIN_LINREG_FROM_ZEROS = '''\
def train_linreg(features, labels, lr=0.03, num_epochs=3, batch_size=10):
    """Minibatch SGD on squared loss.  Returns w (d, 1), b (1,), per-epoch mean losses."""
    w = torch.zeros(features.shape[1], 1, requires_grad=True)
    b = torch.zeros(1, requires_grad=True)
    epoch_losses = []
    for _ in range(num_epochs):
        for X, y in d2lite.data_iter(batch_size, features, labels):
            loss = d2lite.squared_loss(d2lite.linreg(X, w, b), y)
            loss.sum().backward()
            d2lite.sgd([w, b], lr, batch_size)
        with torch.no_grad():
            epoch_losses.append(d2lite.squared_loss(d2lite.linreg(features, w, b), labels).mean().item())
    return w, b, epoch_losses
'''

NEWTON_SQRT_PER_ELEMENT_STOP = '''\
def newton_sqrt(x, rtol=1e-7, max_iter=50):
    """Elementwise square root of positive x by Newton's iteration; differentiable in x."""
    y = torch.ones_like(x)
    for _ in range(max_iter):
        y_new = (y + x / y) / 2
        converged = ((y_new - y).abs() <= rtol * y_new.abs()).all()
        y = y_new
        if converged:
            break
    return y
'''

SGD_STEP_THROUGH_DATA = '''\
def sgd_step(params, lr, batch_size):
    """In-place minibatch SGD update of each leaf in params; zeroes their gradients."""
    for p in params:
        p.data -= lr * p.grad / batch_size
        p.grad.zero_()
'''

MY_INIT_THROUGH_DATA = '''\
def my_init(module):
    """For nn.Linear: weight ~ U(-10, 10) with entries |w| < 5 zeroed; bias = 0. In place."""
    if not isinstance(module, nn.Linear):
        return
    nn.init.uniform_(module.weight, -10, 10)
    module.weight.data *= module.weight.data.abs() >= 5
    if module.bias is not None:
        module.bias.data.zero_()
'''

SUMMARIZE_RECORDING_A_GRAPH = '''\
def summarize(model, X):
    """One (name, type_name, output_shape, n_params) row per call of a leaf module in model(X)."""
    rows, handles = [], []

    def make_hook(name):
        def hook(module, inputs, output):
            n_params = sum(p.numel() for p in module.parameters())
            rows.append((name, type(module).__name__, output.shape, n_params))
        return hook

    try:
        for name, module in model.named_modules():
            if next(module.children(), None) is None:
                handles.append(module.register_forward_hook(make_hook(name)))
        model(X)
    finally:
        for hook_handle in handles:
            hook_handle.remove()
    return rows
'''

MY_LINEAR_BIAS_FIRST = '''\
class MyLinear(nn.Module):
    """Affine layer. weight: (in_units, units), bias: (units,). X: (..., in_units) -> (..., units)."""

    def __init__(self, in_units, units):
        super().__init__()
        self.in_units, self.units = in_units, units
        self.bias = nn.Parameter(torch.zeros(units))
        self.weight = nn.Parameter(torch.randn(in_units, units))

    def forward(self, X):
        return X @ self.weight + self.bias

    def extra_repr(self):
        return f"in_units={self.in_units}, units={self.units}"
'''

WARMUP_COSINE_INT_AFTER_THE_END = '''\
def warmup_cosine(step, warmup_steps, total_steps, min_factor=0.0):
    """LambdaLR factor at `step`: warmup, cosine down to min_factor, then min_factor."""
    if step < 0 or warmup_steps < 0 or total_steps <= warmup_steps:
        raise ValueError(f"bad schedule: step={step}, warmup_steps={warmup_steps}, total_steps={total_steps}")
    if step < warmup_steps:
        return (step + 1) / warmup_steps
    if step > total_steps:
        return min_factor
    s = (step - warmup_steps) / (total_steps - warmup_steps)
    return min_factor + (1 - min_factor) * (1 + math.cos(math.pi * s)) / 2
'''

TRAIN_STEP_TENSOR_FROM_PYTHON = '''\
def train_step(net, X, y, loss_fn, optimizer, totals):
    """One optimizer step on (X, y); adds [loss * B, correct, B] to ``totals`` (3,) in place."""
    optimizer.zero_grad()
    logits = net(X)
    loss = loss_fn(logits, y)
    loss.backward()
    optimizer.step()
    B = y.shape[0]
    with torch.no_grad():
        totals += torch.stack([loss.detach() * B, count_correct(logits, y).to(totals.dtype),
                               torch.tensor(B, dtype=totals.dtype, device=totals.device)])
'''

PATCHIFY_CHECKING_THE_WIDTH_ONLY = '''\
def patchify(images, p):
    """Cut a batch of images into non-overlapping p x p patches."""
    B, C, H, W = images.shape
    if W % p:
        raise ValueError(f"patchify: the width {W} is not a multiple of the patch size p={p}")
    grid = images.reshape(B, C, H // p, p, W // p, p)
    grid = grid.permute(0, 2, 4, 1, 3, 5)
    return grid.reshape(B, (H // p) * (W // p), C * p * p)
'''

_SET_RNG_STATE = '''

def set_rng_state(state, generators=()):
    """Restore the generators from a dict made by get_rng_state (ValueError if the generators do not match)."""
    generators = list(generators)
    if len(generators) != len(state["generators"]):
        raise ValueError("set_rng_state: the number of generators does not match the saved states")
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    torch.cuda.set_rng_state_all(state["cuda"])
    for generator, saved in zip(generators, state["generators"]):
        generator.set_state(saved)
'''

RNG_STATE_WITHOUT_CUDA = '''\
def get_rng_state(generators=()):
    """The states of Python's, NumPy's and PyTorch's global generators and of ``generators``, as a dict."""
    return {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state(),
            "cuda": [], "generators": [g.get_state() for g in generators]}
''' + _SET_RNG_STATE

RNG_STATE_CHECKED_AFTER_RESTORING = '''\
def get_rng_state(generators=()):
    """The states of Python's, NumPy's and PyTorch's global generators and of ``generators``, as a dict."""
    return {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state(),
            "cuda": torch.cuda.get_rng_state_all(), "generators": [g.get_state() for g in generators]}


def set_rng_state(state, generators=()):
    """Restore the generators from a dict made by get_rng_state (ValueError if the generators do not match)."""
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    torch.cuda.set_rng_state_all(state["cuda"])
    generators = list(generators)
    if len(generators) != len(state["generators"]):
        raise ValueError("set_rng_state: the number of generators does not match the saved states")
    for generator, saved in zip(generators, state["generators"]):
        generator.set_state(saved)
'''

T, A, M, TR, G, P = "01_tensors", "02_autograd", "03_modules", "03b_training", "04_gpu", "06c_profiling"

# name -> (notebook, submission, answer cell, test cell, hidden key that tells the wrong answer, source)
WRONG = {
    "check_gradient_by_norm": (A, "a", "check_gradient", "test_check_gradient", "each_element_own_tolerance",
                               CHECK_GRADIENT_BY_NORM),
    "train_linreg_epoch_loss_with_graph": (A, "a", "train_linreg", "test_train_linreg", "epoch_loss_graph",
                                           TRAIN_LINREG_EPOCH_LOSS_WITH_GRAPH),
    "train_linreg_from_zeros": (A, "b", "train_linreg", "test_train_linreg", "start", TRAIN_LINREG_FROM_ZEROS),
    "newton_sqrt_per_element_stop": (A, "a", "newton_sqrt", "test_newton_sqrt", "whole_tensor_rule",
                                     NEWTON_SQRT_PER_ELEMENT_STOP),
    "sgd_step_through_data": (A, "a", "sgd_step", "test_sgd_step", "seen_by_autograd", SGD_STEP_THROUGH_DATA),
    "my_init_through_data": (M, "a", "init_solution", "init_test", "seen_by_autograd", MY_INIT_THROUGH_DATA),
    "summarize_recording_a_graph": (M, "a", "summary_solution", "summary_test", "saved_for_backward",
                                    SUMMARIZE_RECORDING_A_GRAPH),
    "my_linear_bias_first": (M, "a", "mylinear_solution", "mylinear_test", "order", MY_LINEAR_BIAS_FIRST),
    "warmup_cosine_int_after_the_end": (TR, "a", "warmup_solution", "warmup_test", "int_arguments",
                                        WARMUP_COSINE_INT_AFTER_THE_END),
    "train_step_tensor_from_python": (G, "a", "train_step", "test_train_step", "from_python_data",
                                      TRAIN_STEP_TENSOR_FROM_PYTHON),
    "patchify_checking_the_width_only": (T, "a", "patchify", "test_patchify", "errors",
                                         PATCHIFY_CHECKING_THE_WIDTH_ONLY),
    "rng_state_without_cuda": (P, "a", "rng_state", "test_rng_state", "cuda", RNG_STATE_WITHOUT_CUDA),
    "rng_state_checked_after_restoring": (P, "b", "rng_state", "test_rng_state", "after_refusal",
                                          RNG_STATE_CHECKED_AFTER_RESTORING),
}


def _batches() -> dict[str, dict[str, dict[str, str]]]:
    """notebook -> submission name -> {answer cell: source}; "solution" is the notebook's own solution."""
    batches: dict[str, dict[str, dict[str, str]]] = {}
    for notebook, sub, answer, _, _, source in WRONG.values():
        answers = batches.setdefault(notebook, {"solution": {}}).setdefault(sub, {})
        assert answer not in answers, f"two wrong answers to {notebook}'s {answer} in one submission"
        answers[answer] = source
    return batches


def _trimmed(notebook: str, folder: Path) -> Path:
    """The course notebook cut after the last test cell that a wrong answer of WRONG targets.

    Cells run in order, so the cells after it cannot change its verdict: leaving them out (training
    runs, timings) only saves time. Both the trusted source and the submissions are made from it."""
    nb = nbs.read_notebook(COURSE / f"{notebook}.ipynb")
    targets = {test for nb_name, _, _, test, _, _ in WRONG.values() if nb_name == notebook}
    last = max(i for i, cell in enumerate(nb.cells) if nbs.nbgrader_meta(cell).get("grade_id") in targets)
    nb.cells = nb.cells[:last + 1]
    return write(nb, folder / f"{notebook}.ipynb")


def _grade_notebook(source: str, jobs: dict[str, str], workdir: str) -> dict:
    """The reference run of ``source``, then each submission (name -> path) graded against it."""
    from grader.engine.grade import Limits, grade, run_reference

    limits = Limits(cell_timeout_s=120)
    references = run_reference(Path(source), workdir=Path(workdir) / "reference", limits=limits)
    return {name: grade(Path(source), Path(path), references, workdir=Path(workdir) / name, limits=limits)
            for name, path in jobs.items()}


@pytest.fixture(scope="module")
def graded(tmp_path_factory) -> dict[tuple[str, str], object]:
    """(notebook, submission) -> NotebookResult, for every notebook of WRONG: one reference run each."""
    tmp = tmp_path_factory.mktemp("wrong-answers")
    batches = _batches()
    results = {}
    # the notebooks with the most submissions first, so that two workers finish at about the same time
    order = sorted(batches, key=lambda nb: -len(batches[nb]))
    with ProcessPoolExecutor(2) as pool:
        futures = {}
        for notebook in order:
            source = _trimmed(notebook, tmp / notebook / "source")
            jobs = {name: str(write(submission(source, answers, solved=True), tmp / notebook / f"{name}.ipynb"))
                    for name, answers in batches[notebook].items()}
            futures[notebook] = pool.submit(_grade_notebook, str(source), jobs, str(tmp / notebook / "work"))
        for notebook, future in futures.items():
            for name, result in future.result().items():
                results[notebook, name] = result
    return results


CLAUSES = {  # wrong answer -> the exercise and the clause of its contract that refuses it (the test's id)
    "check_gradient_by_norm": "02 check_gradient: each element within atol + rtol*|n_i|, not a norm test",
    "train_linreg_epoch_loss_with_graph": "02 train_linreg: the epoch loss records no graph",
    "train_linreg_from_zeros": "02 train_linreg: w starts from torch.normal(0, 0.01), not zeros",
    "newton_sqrt_per_element_stop": "02 newton_sqrt: one stop rule for the whole tensor",
    "sgd_step_through_data": "02 sgd_step: under torch.no_grad(), not through .data",
    "my_init_through_data": "03 my_init: zeroing under torch.no_grad(), not through .data",
    "summarize_recording_a_graph": "03 summarize: model(X) under torch.no_grad()",
    "my_linear_bias_first": "03 MyLinear: weight created before bias",
    "warmup_cosine_int_after_the_end": "03b warmup_cosine: a Python float, also after the end",
    "train_step_tensor_from_python": "04 train_step: no tensor made from Python data",
    "patchify_checking_the_width_only": "01 patchify: ValueError when the height is not a multiple of p",
    "rng_state_without_cuda": "06c get_rng_state: cuda from torch.cuda.get_rng_state_all()",
    "rng_state_checked_after_restoring": "06c set_rng_state: ValueError before restoring anything",
}


POINTS = {  # each test cell's points (its nbgrader metadata): the solution earns them all, the wrong answer none
    "test_check_gradient": 2, "test_train_linreg": 6, "test_newton_sqrt": 3, "test_sgd_step": 3, "init_test": 3,
    "summary_test": 6, "mylinear_test": 4, "warmup_test": 3, "test_train_step": 6, "test_patchify": 6,
    "test_rng_state": 4}


@pytest.mark.parametrize("wrong", list(WRONG), ids=[CLAUSES[w] for w in WRONG])
def test_the_wrong_answer_loses_the_exercises_points_and_the_solution_earns_them(graded, wrong):
    notebook, sub, answer, test_cell, key, _ = WRONG[wrong]
    right = graded[notebook, "solution"].tests[test_cell]
    assert (right.status, right.points, right.max_points) == ("passed", POINTS[test_cell], POINTS[test_cell]), right
    test = graded[notebook, sub].tests[test_cell]
    # it passes the visible checks (the cell ran to its end: "failed", not "error"), and the hidden clause refuses it
    assert (test.status, test.points, test.max_points) == ("failed", 0.0, POINTS[test_cell]), (answer, test)
    assert key in test.failed_keys, (answer, test)


def test_a_batched_submission_costs_no_other_exercise_a_point(graded):
    for (notebook, sub), result in graded.items():
        targets = {t for nb, s, _, t, _, _ in WRONG.values() if (nb, s) == (notebook, sub)}
        lost = {gid: (t.status, t.points, t.max_points) for gid, t in result.tests.items()
                if gid not in targets and t.status != "manual" and t.points != t.max_points}
        assert lost == {}, (notebook, sub)
