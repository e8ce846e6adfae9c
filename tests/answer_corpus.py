"""Corpora of answers to the course's own exercises, as data (issue 28), read by tests/test_answer_corpus.py.

HONEST: answers and exploration cells that ordinary students write, each applied to the course's solution
notebook (answer cells replaced by grade_id, student cells added after a cell by grade_id). Every one must
keep all its points and read clean: no finding for any test of its notebook.

ATTACKS: ways around an exercise's ``answer_rules``; each names the test it attacks and the rule it tries
to get around. Every one must be found for that test (flagged for a person) or earn nothing there.

An entry: ``Entry(notebook, why, replace={grade_id: source}, after={grade_id: [source, ...]})``; ``after``
keyed by "" adds cells after the notebook's first cell.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import nbformat

COURSE = Path(__file__).resolve().parent.parent / "course"


@dataclass(frozen=True)
class Entry:
    notebook: str
    why: str
    replace: dict = field(default_factory=dict)
    after: dict = field(default_factory=dict)
    test: str = ""  # attacks: the test whose rule it tries to get around
    rule: str = ""  # attacks: that rule


def _gid(cell) -> str:
    return cell.metadata.get("nbgrader", {}).get("grade_id", "")


def submission(entry: Entry, base: nbformat.NotebookNode | None = None) -> nbformat.NotebookNode:
    """The course's solution notebook (or ``base``) with the entry's answers replaced and cells added."""
    nb = base if base is not None else nbformat.read(str(COURSE / f"{entry.notebook}.ipynb"), as_version=4)
    missing = (set(entry.replace) | set(entry.after) - {""}) - {_gid(c) for c in nb.cells}
    assert not missing, f"{entry.notebook} has no cell {missing}"
    cells = []
    for n, cell in enumerate(nb.cells):
        if _gid(cell) in entry.replace:
            cell.source = entry.replace[_gid(cell)]
        cells.append(cell)
        key = _gid(cell) or ("" if n == 0 else None)
        for source in entry.after.get(key, []) if key is not None else []:
            cells.append(nbformat.v4.new_code_cell(source))
    nb.cells = cells
    return nb


T, AG, M, TR, G, P, PR, AT = ("01_tensors", "02_autograd", "03_modules", "03b_training", "04_gpu",
                              "06_performance", "06c_profiling", "07_attention")

# --- honest -----------------------------------------------------------------------------------------

HONEST = {
    # 01_tensors: these are also graded in one batch (tests/test_answer_corpus.py), so each must be right.
    "softmax helper in an earlier cell": Entry(
        T, "a helper defined in a cell of the student's own before the answer, then used there",
        after={"test_one_hot": ["def shift_by_max(X, dim):\n    return X - X.amax(dim=dim, keepdim=True)\n"]},
        replace={"softmax": "def softmax(X, dim):\n    e = torch.exp(shift_by_max(X, dim))\n"
                            "    return e / e.sum(dim=dim, keepdim=True)\n"}),
    "softmax by logsumexp": Entry(
        T, "the log-sum-exp form: another torch reduction, nothing the rule names",
        replace={"softmax": "def softmax(X, dim):\n    return torch.exp(X - torch.logsumexp(X, dim=dim, keepdim=True))\n"}),
    "softmax checked against nn.Softmax": Entry(
        T, "`from torch import nn` and a comparison with the builtin in an exploration cell after the answer",
        after={"softmax": ["from torch import nn\n\nZ = torch.randn(8, 5)\n"
                           "print(torch.allclose(softmax(Z, 1), nn.Softmax(dim=1)(Z), atol=1e-6))\n"]}),
    "softmax %time and a plot": Entry(
        T, "`%time` of the answer and an exploration plot of its output",
        after={"softmax": ["%time _ = softmax(torch.randn(1000, 100), 1)\n",
                           "import matplotlib.pyplot as plt\n\nz = torch.linspace(-4, 4, 81)\n"
                           "probs = softmax(torch.stack([z, torch.zeros_like(z)]), 0)\n"
                           "plt.plot(z, probs[0], label='p(first)')\nplt.legend()\nplt.title(f'softmax of ({z[0]:.0f}..{z[-1]:.0f}, 0)')\n"
                           "plt.show()\n"]}),
    "pairwise by vector_norm, names with avoided words": Entry(
        T, "locals named cdist_like / pairwise_distance_matrix: the student's own names, not the builtins",
        replace={"pairwise_distances": "def pairwise_distances(X, Y):\n    cdist_like = X.unsqueeze(1) - Y.unsqueeze(0)\n"
                                       "    pairwise_distance_matrix = torch.linalg.vector_norm(cdist_like, dim=-1)\n"
                                       "    return pairwise_distance_matrix\n"}),
    "pairwise with pow and a shape check in an f-string": Entry(
        T, "`.pow(2)`, an f-string error message and a check over the two arguments written out",
        replace={"pairwise_distances": "def pairwise_distances(X, Y):\n    for name, M in ((\"X\", X), (\"Y\", Y)):\n"
                                       "        if M.dim() != 2:\n"
                                       "            raise ValueError(f\"{name} must be 2-D, got shape {tuple(M.shape)}\")\n"
                                       "    return (X[:, None] - Y[None]).pow(2).sum(-1).sqrt()\n"}),
    "normalize_rows by Tensor.norm": Entry(
        T, "`X.norm(...)` and a local called `normalized`",
        replace={"normalize_rows": "def normalize_rows(X, p=2, eps=1e-12):\n"
                                   "    normalized = X / X.norm(p=p, dim=1, keepdim=True).clamp(min=eps)\n"
                                   "    return normalized\n"}),
    "one_hot by scatter with an f-string": Entry(
        T, "scatter_ into zeros, the range checked with an f-string message",
        replace={"one_hot": "def one_hot(labels, num_classes):\n"
                            "    if labels.numel() and not (0 <= int(labels.min()) and int(labels.max()) < num_classes):\n"
                            "        raise ValueError(f\"labels must be in [0, {num_classes}), got {labels.min()}..{labels.max()}\")\n"
                            "    out = torch.zeros(*labels.shape, num_classes, device=labels.device)\n"
                            "    return out.scatter_(-1, labels.unsqueeze(-1), 1.0)\n"}),
    "interleave by cat and view": Entry(
        T, "a list comprehension over the shape check's operands is not in a no_loops exercise",
        replace={"interleave": "def interleave(a, b):\n    if a.shape != b.shape:\n"
                               "        raise ValueError(f\"shapes differ: {[tuple(t.shape) for t in (a, b)]}\")\n"
                               "    return torch.cat([a.unsqueeze(1), b.unsqueeze(1)], dim=1).reshape(-1, *a.shape[1:])\n"}),
    "quadratic_forms by einsum": Entry(
        T, "einsum, the textbook one-liner",
        replace={"quadratic_forms": "def quadratic_forms(A, x):\n    return torch.einsum('bi,bij,bj->b', x, A, x)\n"}),
    "ema_update by lerp_": Entry(
        T, "the in-place lerp",
        replace={"ema_update": "def ema_update_(avg, x, beta):\n    return avg.lerp_(x, 1 - beta)\n"}),
    "broadcast_shape by zip_longest": Entry(
        T, "itertools.zip_longest over the reversed shapes, sets in a comprehension, no torch or numpy",
        replace={"broadcast_shape": "from itertools import zip_longest\n\n\ndef broadcast_shape(*shapes):\n"
                                    "    result = []\n"
                                    "    for sizes in zip_longest(*(reversed(s) for s in shapes), fillvalue=1):\n"
                                    "        distinct = {size for size in sizes if size != 1}\n"
                                    "        if len(distinct) > 1:\n"
                                    "            raise ValueError(f\"shapes {shapes} do not broadcast: sizes {sorted(distinct)}\")\n"
                                    "        result.append(distinct.pop() if distinct else 1)\n"
                                    "    return tuple(reversed(result))\n"}),
    "mse by F.mse_loss": Entry(
        T, "the exercise does not rule out the library loss; `import torch.nn.functional as F` in the answer",
        replace={"mse": "import torch.nn.functional as F\n\n\ndef mse(pred, target):\n"
                        "    for name, t in ((\"pred\", pred), (\"target\", target)):\n"
                        "        if t.dim() not in (1, 2) or (t.dim() == 2 and t.shape[1] != 1):\n"
                        "            raise ValueError(f\"mse: {name} must have shape (n,) or (n, 1), got {tuple(t.shape)}\")\n"
                        "    if len(pred) != len(target):\n"
                        "        raise ValueError(f\"mse: {len(pred)} predictions but {len(target)} targets\")\n"
                        "    return F.mse_loss(pred.reshape(-1), target.reshape(-1))\n"}),
    # 02_autograd
    "grad_of by autograd.grad": Entry(
        AG, "torch.autograd.grad instead of backward()",
        replace={"grad_of": "def grad_of(f, x):\n    leaf = x.detach().requires_grad_()\n"
                            "    (g,) = torch.autograd.grad(f(leaf), leaf)\n    return g\n"}),
    "vjp by autograd.grad with grad_outputs": Entry(
        AG, "grad_outputs is a keyword, and `vjp_value` the student's own name",
        replace={"vjp": "def vjp(f, x, v):\n    leaf = x.detach().requires_grad_()\n"
                        "    (vjp_value,) = torch.autograd.grad(f(leaf), leaf, grad_outputs=v)\n    return vjp_value\n"}),
    "newton_sqrt with sqrt in its names": Entry(
        AG, "a local `sqrt_estimate` and whole-number powers only",
        replace={"newton_sqrt": "def newton_sqrt(x, rtol=1e-7, max_iter=50):\n    sqrt_estimate = torch.ones_like(x)\n"
                                "    for _ in range(max_iter):\n        previous = sqrt_estimate\n"
                                "        sqrt_estimate = 0.5 * (previous + x / previous)\n"
                                "        if ((sqrt_estimate - previous).abs() <= rtol * sqrt_estimate.abs()).all():\n"
                                "            break\n    return sqrt_estimate\n"}),
    "sgd_step d2l-book style": Entry(
        AG, "the book's loop over params with `param.grad.zero_()`",
        replace={"sgd_step": "def sgd_step(params, lr, batch_size):\n    with torch.no_grad():\n"
                             "        for param in params:\n            param -= lr * param.grad / batch_size\n"
                             "            param.grad.zero_()\n"}),
    "my_data_iter d2l-book style": Entry(
        AG, "the book's data_iter with random.shuffle and index tensors, written out by the student",
        replace={"my_data_iter": "import random\n\n\ndef my_data_iter(batch_size, features, labels):\n"
                                 "    num_examples = len(features)\n    indices = list(range(num_examples))\n"
                                 "    random.shuffle(indices)\n    for i in range(0, num_examples, batch_size):\n"
                                 "        batch_indices = torch.tensor(indices[i: min(i + batch_size, num_examples)])\n"
                                 "        yield features[batch_indices], labels[batch_indices]\n"}),
    "predict by matmul": Entry(
        AG, "torch.matmul under no_grad",
        replace={"predict": "def predict(w, b, X):\n    with torch.no_grad():\n        return torch.matmul(X, w) + b\n"}),
    "train_linreg on the student's own earlier answers": Entry(
        AG, "helpers from earlier exercises (my_data_iter, sgd_step), a printed f-string per epoch",
        replace={"train_linreg": "def train_linreg(features, labels, lr=0.03, num_epochs=3, batch_size=10):\n"
                                 "    w = torch.normal(0, 0.01, size=(features.shape[1], 1), requires_grad=True)\n"
                                 "    b = torch.zeros(1, requires_grad=True)\n    losses = []\n"
                                 "    for epoch in range(num_epochs):\n"
                                 "        for X, y in my_data_iter(batch_size, features, labels):\n"
                                 "            l = ((X @ w + b - y.reshape(-1, 1)) ** 2 / 2).sum()\n"
                                 "            l.backward()\n            sgd_step([w, b], lr, batch_size)\n"
                                 "        with torch.no_grad():\n"
                                 "            losses.append(float(((features @ w + b - labels.reshape(-1, 1)) ** 2 / 2).mean()))\n"
                                 "        print(f'epoch {epoch + 1}, loss {losses[-1]:f}')\n    return w, b, losses\n"}),
    "seeds and print options in an exploration cell": Entry(
        AG, "torch.manual_seed, np.random.seed, set_printoptions, warnings.filterwarnings before trying an answer",
        after={"grad_of": ["import warnings\n\nimport numpy as np\n\ntorch.manual_seed(42)\nnp.random.seed(42)\n"
                           "torch.set_printoptions(precision=3)\nwarnings.filterwarnings('ignore')\n"
                           "print(grad_of(lambda t: (t ** 2).sum(), torch.arange(3.0)))\n"]}),
    # 03_modules
    "summarize with hooks made by a lambda": Entry(
        M, "forward hooks registered in a comprehension with a lambda's default argument",
        replace={"summary_solution": "def summarize(model, X):\n    rows = []\n"
                                     "    leaves = [(n, m) for n, m in model.named_modules() if not list(m.children())]\n"
                                     "    handles = [m.register_forward_hook(lambda mod, inp, out, n=n: rows.append(\n"
                                     "        (n, type(mod).__name__, out.shape, sum(p.numel() for p in mod.parameters()))))\n"
                                     "        for n, m in leaves]\n    try:\n        with torch.no_grad():\n"
                                     "            model(X)\n    finally:\n        for h in handles:\n            h.remove()\n"
                                     "    return rows\n"}),
    "MLP as nn.Sequential": Entry(
        M, "`from torch import nn` again in the answer, and the layers in an nn.Sequential",
        replace={"mlp_solution": "from torch import nn\n\n\nclass MLP(nn.Module):\n"
                                 "    def __init__(self, num_inputs=20, num_hiddens=256, num_outputs=10):\n"
                                 "        super().__init__()\n        self.hidden = nn.Linear(num_inputs, num_hiddens)\n"
                                 "        self.out = nn.Linear(num_hiddens, num_outputs)\n\n"
                                 "    def forward(self, X):\n        return self.out(torch.relu(self.hidden(X)))\n"}),
    "MySequential by ModuleList": Entry(
        M, "an nn.ModuleList and a loop in forward",
        replace={"mysequential_solution": "class MySequential(nn.Module):\n    def __init__(self, *modules):\n"
                                          "        super().__init__()\n        self.layers = nn.ModuleList(modules)\n\n"
                                          "    def forward(self, X):\n        for layer in self.layers:\n"
                                          "            X = layer(X)\n        return X\n"}),
    "count_parameters by map": Entry(
        M, "`map(torch.numel, ...)`: no rule on loops here",
        replace={"count_solution": "def count_parameters(module):\n    return sum(map(torch.numel, module.parameters()))\n"}),
    "my_init tried with net.apply": Entry(
        M, "an exploration cell that builds a net of its own and applies the answer to it",
        after={"init_test": ["net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))\nnet.apply(my_init)\n"
                             "print(net[0].weight)\n"]}),
    "tied_groups by defaultdict": Entry(
        M, "collections.defaultdict and a sorted comprehension",
        replace={"tied_solution": "from collections import defaultdict\n\n\ndef tied_groups(module):\n"
                                  "    names = defaultdict(list)\n"
                                  "    for name, param in module.named_parameters(remove_duplicate=False):\n"
                                  "        names[id(param)].append(name)\n"
                                  "    return sorted(sorted(group) for group in names.values() if len(group) >= 2)\n"}),
    "MyLinear with an f-string extra_repr": Entry(
        M, "torch.matmul, nn.init, an f-string repr",
        replace={"mylinear_solution": "class MyLinear(nn.Module):\n    def __init__(self, in_units, units):\n"
                                      "        super().__init__()\n        self.in_units, self.units = in_units, units\n"
                                      "        self.weight = nn.Parameter(torch.empty(in_units, units))\n"
                                      "        nn.init.normal_(self.weight)\n        self.bias = nn.Parameter(torch.zeros(units))\n\n"
                                      "    def forward(self, X):\n        return torch.matmul(X, self.weight) + self.bias\n\n"
                                      "    def extra_repr(self):\n        return f\"in_units={self.in_units}, units={self.units}\"\n"}),
    # 03b_training
    "warmup_cosine with math": Entry(
        TR, "math.cos and math.pi, an f-string error",
        replace={"warmup_solution": "def warmup_cosine(step, warmup_steps, total_steps, min_factor=0.0):\n"
                                    "    if step < 0 or warmup_steps < 0 or total_steps <= warmup_steps:\n"
                                    "        raise ValueError(f\"bad schedule: {step=}, {warmup_steps=}, {total_steps=}\")\n"
                                    "    if step < warmup_steps:\n        return (step + 1) / warmup_steps\n"
                                    "    t = min(1.0, (step - warmup_steps) / (total_steps - warmup_steps))\n"
                                    "    return min_factor + (1 - min_factor) * 0.5 * (1 + math.cos(math.pi * t))\n"}),
    "adam_step_ with adam in its names": Entry(
        TR, "a helper `adam_moments` and a state key 'adam_step': the student's names, not torch.optim",
        replace={"adam_solution": "def adam_moments(slot, grad, beta1, beta2):\n"
                                  "    slot['m'].mul_(beta1).add_(grad, alpha=1 - beta1)\n"
                                  "    slot['v'].mul_(beta2).addcmul_(grad, grad, value=1 - beta2)\n\n\n"
                                  "def adam_step_(params, state, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, decoupled=False):\n"
                                  "    beta1, beta2 = betas\n    with torch.no_grad():\n"
                                  "        for p in params:\n            if p.grad is None:\n                continue\n"
                                  "            slot = state.setdefault(p, {'adam_step': 0, 'm': torch.zeros_like(p), 'v': torch.zeros_like(p)})\n"
                                  "            slot['adam_step'] += 1\n            t = slot['adam_step']\n"
                                  "            grad = p.grad if decoupled else p.grad + weight_decay * p\n"
                                  "            if decoupled:\n                p.mul_(1 - lr * weight_decay)\n"
                                  "            adam_moments(slot, grad, beta1, beta2)\n"
                                  "            m_hat = slot['m'] / (1 - beta1 ** t)\n            v_hat = slot['v'] / (1 - beta2 ** t)\n"
                                  "            p -= lr * m_hat / (v_hat.sqrt() + eps)\n"}),
    # 04_gpu
    "count_correct with num_correct as a local": Entry(
        G, "a local named `num_correct`, the avoided word as the student's own variable",
        replace={"count_correct": "def count_correct(logits, y):\n    num_correct = logits.argmax(1).eq(y).sum()\n"
                                  "    return num_correct\n"}),
    "evaluate_accuracy syncing once after the loop": Entry(
        G, "an `accuracy` local and .item() and print() after the loop, not in it",
        replace={"evaluate_accuracy": "def evaluate_accuracy(net, data_iter, device=None):\n"
                                      "    device = device or next(net.parameters()).device\n"
                                      "    was_training = net.training\n    net.eval()\n"
                                      "    correct, total = torch.zeros((), dtype=torch.int64, device=device), 0\n"
                                      "    with torch.no_grad():\n        for X, y in data_iter:\n"
                                      "            correct += count_correct(net(X.to(device)), y.to(device))\n"
                                      "            total += len(y)\n    net.train(was_training)\n"
                                      "    accuracy = correct.item() / total\n    return accuracy\n"}),
    "cuda_env by a dict merge": Entry(
        G, "`{**base}` and `','.join(map(str, ...))`",
        replace={"cuda_env": "def cuda_env(gpu_ids, base=None):\n    env = {**(os.environ if base is None else base)}\n"
                             "    env['CUDA_VISIBLE_DEVICES'] = ','.join(map(str, map(int, gpu_ids)))\n    return env\n"}),
    # 06_performance
    "clip_grads_ with a total_norm local": Entry(
        P, "the sum of squares in a generator, a local called `total_norm`, the scale applied in a loop",
        replace={"clip_grads_": "def clip_grads_(params, max_norm, eps=1e-6):\n"
                                "    grads = [p.grad for p in params if p.grad is not None]\n"
                                "    if not grads:\n        raise ValueError('no gradients')\n"
                                "    total_norm = sum((g.detach() ** 2).sum() for g in grads) ** 0.5\n"
                                "    scale = (max_norm / (total_norm + eps)).clamp(max=1.0)\n"
                                "    for g in grads:\n        g.mul_(scale)\n    return total_norm\n"}),
    # 06c_profiling
    "accumulate_gradients by split and zip": Entry(
        PR, "Tensor.split and zip over the micro-batches",
        replace={"accumulate_gradients": "def accumulate_gradients(model, loss_fn, X, y, micro_batch_size):\n"
                                         "    if micro_batch_size < 1:\n"
                                         "        raise ValueError(f'micro_batch_size must be >= 1, got {micro_batch_size}')\n"
                                         "    model.zero_grad()\n    total = torch.zeros(())\n"
                                         "    for Xb, yb in zip(X.split(micro_batch_size), y.split(micro_batch_size)):\n"
                                         "        loss = loss_fn(model(Xb), yb) * len(Xb) / len(X)\n"
                                         "        loss.backward()\n        total += loss.detach()\n    return total\n"}),
    # 07_attention
    "attention with F.softmax and a scaled_dot_products local": Entry(
        AT, "F.softmax is allowed here; `scaled_dot_products` is the student's own name",
        replace={"attention_solution": "def attention(Q, K, V, mask=None):\n"
                                       "    scaled_dot_products = Q @ K.mT / math.sqrt(Q.size(-1))\n"
                                       "    if mask is not None:\n"
                                       "        scaled_dot_products = scaled_dot_products.masked_fill(~mask, float('-inf'))\n"
                                       "    weights = F.softmax(scaled_dot_products, dim=-1)\n"
                                       "    if mask is not None:\n        weights = weights.masked_fill(~mask, 0.0)\n"
                                       "    return weights @ V, weights\n"}),
    "attention weights plotted": Entry(
        AT, "an exploration cell that plots the answer's weights with d2lite's plt",
        after={"attention_test": ["Q = K = V = torch.randn(1, 6, 4)\n_, w = attention(Q, K, V, causal_mask(6))\n"
                                  "plt.imshow(w[0])\nplt.colorbar()\nplt.show()\n"]}),
    "split_heads by reshape and permute": Entry(
        AT, "reshape/permute and an f-string error",
        replace={"heads_solution": "def split_heads(X, n_heads):\n    B, L, D = X.shape\n"
                                   "    if D % n_heads:\n        raise ValueError(f'{D=} is not a multiple of {n_heads=}')\n"
                                   "    return X.reshape(B, L, n_heads, D // n_heads).permute(0, 2, 1, 3)\n\n\n"
                                   "def merge_heads(X):\n    B, H, L, dh = X.shape\n"
                                   "    return X.permute(0, 2, 1, 3).reshape(B, L, H * dh)\n"}),
    "help with ? on a builtin": Entry(
        AT, "IPython's `F.scaled_dot_product_attention?` shows the docs of the very builtin the block may not call",
        after={"causal_test": ["F.scaled_dot_product_attention?\n", "torch.tril??\n"]}),
    "figure size set as d2l's set_figsize does": Entry(
        AT, "`plt.rcParams['figure.figsize'] = ...`: a drawing setting of matplotlib, then a plot",
        after={"attention_test": ["plt.rcParams['figure.figsize'] = (3.5, 2.5)\n"
                                  "plt.plot(torch.arange(8), causal_mask(8).sum(1))\nplt.show()\n"]}),
    "block on the student's own helpers, with a multi_head_attention attribute": Entry(
        AT, "its own attention module, stored as `self.multi_head_attention`: the student's attribute, not torch's",
        replace={"block_solution": "class MultiHeadSelfAttention(nn.Module):\n"
                                   "    def __init__(self, d_model, n_heads):\n        super().__init__()\n"
                                   "        self.n_heads = n_heads\n        self.qkv = nn.Linear(d_model, 3 * d_model)\n"
                                   "        self.proj = nn.Linear(d_model, d_model)\n\n"
                                   "    def forward(self, x):\n"
                                   "        q, k, v = (split_heads(t, self.n_heads) for t in self.qkv(x).chunk(3, dim=-1))\n"
                                   "        out, _ = attention(q, k, v, causal_mask(x.shape[1]).to(x.device))\n"
                                   "        return self.proj(merge_heads(out))\n\n\n"
                                   "class TransformerBlock(nn.Module):\n    def __init__(self, d_model, n_heads, d_ff):\n"
                                   "        super().__init__()\n        self.norm1 = nn.LayerNorm(d_model)\n"
                                   "        self.multi_head_attention = MultiHeadSelfAttention(d_model, n_heads)\n"
                                   "        self.norm2 = nn.LayerNorm(d_model)\n"
                                   "        self.mlp = nn.Sequential(nn.Linear(d_model, d_ff), nn.GELU(), nn.Linear(d_ff, d_model))\n\n"
                                   "    def forward(self, x):\n        x = x + self.multi_head_attention(self.norm1(x))\n"
                                   "        return x + self.mlp(self.norm2(x))\n"}),
    "causal_mask by triu": Entry(
        AT, "the complement of an upper triangle",
        replace={"causal_solution": "def causal_mask(L_q, L_k=None):\n    L_k = L_q if L_k is None else L_k\n"
                                    "    return ~torch.ones(L_q, L_k, dtype=torch.bool).triu(L_k - L_q + 1)\n"}),
    "%load_ext autoreload": Entry(
        T, "the autoreload extension, as many students start every notebook",
        after={"": ["%load_ext autoreload\n%autoreload 2\n"]}),
}

# --- attacks ----------------------------------------------------------------------------------------

ATTACKS = {
    "softmax by getattr on a built name": Entry(
        T, "", replace={"softmax": "def softmax(X, dim):\n    return getattr(X, 'soft' + 'max')(dim)\n"},
        test="test_softmax", rule="avoid softmax"),
    "softmax through an alias made in an earlier cell": Entry(
        T, "", after={"test_one_hot": ["sm = torch.special.softmax\n"]},
        replace={"softmax": "def softmax(X, dim):\n    return sm(X, dim)\n"}, test="test_softmax", rule="avoid softmax"),
    "softmax via F.softmax": Entry(T, "", replace={"softmax": "import torch.nn.functional as F\n\n\n"
                                                              "def softmax(X, dim):\n    return F.softmax(X, dim)\n"},
                                   test="test_softmax", rule="avoid softmax"),
    "softmax rebound by a lambda after the answer": Entry(
        T, "", after={"softmax": ["softmax = lambda X, dim: X.softmax(dim)\n"]}, test="test_softmax", rule="avoid softmax"),
    "pairwise by a comprehension": Entry(
        T, "", replace={"pairwise_distances": "def pairwise_distances(X, Y):\n"
                                              "    return torch.stack([((x - Y) ** 2).sum(-1).sqrt() for x in X])\n"},
        test="test_pairwise_distances", rule="no_loops"),
    "pairwise by cdist imported under another name": Entry(
        T, "", after={"": ["from torch import cdist as distances\n"]},
        replace={"pairwise_distances": "def pairwise_distances(X, Y):\n    return distances(X, Y)\n"},
        test="test_pairwise_distances", rule="avoid cdist"),
    "broadcast_shape by numpy through __import__": Entry(
        T, "", replace={"broadcast_shape": "def broadcast_shape(*shapes):\n"
                                           "    return tuple(__import__('numpy').broadcast_shapes(*shapes))\n"},
        test="test_broadcast_shape", rule="no_modules numpy / avoid broadcast"),
    "normalize_rows by F.normalize": Entry(
        T, "", replace={"normalize_rows": "from torch.nn import functional as F\n\n\n"
                                          "def normalize_rows(X, p=2, eps=1e-12):\n    return F.normalize(X, p=p, dim=1, eps=eps)\n"},
        test="test_normalize_rows", rule="avoid normalize"),
    "newton_sqrt by ** 0.5": Entry(
        AG, "", replace={"newton_sqrt": "def newton_sqrt(x, rtol=1e-7, max_iter=50):\n    return x ** 0.5\n"},
        test="test_newton_sqrt", rule="avoid pow"),
    "newton_sqrt by rsqrt": Entry(
        AG, "", replace={"newton_sqrt": "def newton_sqrt(x, rtol=1e-7, max_iter=50):\n    return 1 / x.rsqrt()\n"},
        test="test_newton_sqrt", rule="avoid sqrt"),
    "sgd_step by torch.optim.SGD": Entry(
        AG, "", replace={"sgd_step": "def sgd_step(params, lr, batch_size):\n"
                                     "    torch.optim.SGD(params, lr=lr / batch_size).step()\n"
                                     "    for p in params:\n        p.grad.zero_()\n"},
        test="test_sgd_step", rule="avoid sgd"),
    "vjp by torch.func": Entry(
        AG, "", replace={"vjp": "def vjp(f, x, v):\n    _, pullback = torch.func.vjp(f, x)\n    return pullback(v)[0]\n"},
        test="test_vjp", rule="avoid vjp"),
    "my_data_iter by DataLoader": Entry(
        AG, "", replace={"my_data_iter": "from torch.utils.data import DataLoader, TensorDataset\n\n\n"
                                         "def my_data_iter(batch_size, features, labels):\n"
                                         "    yield from DataLoader(TensorDataset(features, labels), batch_size, shuffle=True)\n"},
        test="test_my_data_iter", rule="avoid dataloader"),
    "adam_step_ by torch.optim.Adam": Entry(
        TR, "", replace={"adam_solution": "def adam_step_(params, state, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, decoupled=False):\n"
                                          "    kind = torch.optim.AdamW if decoupled else torch.optim.Adam\n"
                                          "    opt = state.setdefault('opt', kind(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay))\n"
                                          "    opt.step()\n"},
        test="adam_test", rule="avoid adam, optim"),
    "count_correct by d2lite.accuracy": Entry(
        G, "", replace={"count_correct": "def count_correct(logits, y):\n    return torch.tensor(int(d2lite.accuracy(logits, y)))\n"},
        test="test_count_correct", rule="avoid accuracy"),
    "evaluate_accuracy syncing in the loop": Entry(
        G, "", replace={"evaluate_accuracy": "def evaluate_accuracy(net, data_iter, device=None):\n"
                                             "    net.eval()\n    correct = total = 0\n    with torch.no_grad():\n"
                                             "        for X, y in data_iter:\n"
                                             "            correct += (net(X).argmax(1) == y).sum().item()\n"
                                             "            total += len(y)\n    return correct / total\n"},
        test="test_evaluate_accuracy", rule="no_host_sync_in_loops"),
    "clip_grads_ by clip_grad_norm_": Entry(
        P, "", replace={"clip_grads_": "def clip_grads_(params, max_norm, eps=1e-6):\n"
                                       "    return torch.nn.utils.clip_grad_norm_(params, max_norm)\n"},
        test="test_clip_grads_", rule="avoid clip_grad"),
    "attention by F.scaled_dot_product_attention": Entry(
        AT, "", replace={"attention_solution": "def attention(Q, K, V, mask=None):\n"
                                               "    out = F.scaled_dot_product_attention(Q, K, V, attn_mask=mask)\n"
                                               "    return out, None\n"},
        test="attention_test", rule="avoid scaled_dot_product"),
    "block by nn.MultiheadAttention": Entry(
        AT, "", replace={"block_solution": "class TransformerBlock(nn.Module):\n    def __init__(self, d_model, n_heads, d_ff):\n"
                                           "        super().__init__()\n        self.norm1 = nn.LayerNorm(d_model)\n"
                                           "        self.attn = nn.MultiheadAttention(d_model, n_heads, batch_first=True)\n"
                                           "        self.norm2 = nn.LayerNorm(d_model)\n"
                                           "        self.mlp = nn.Sequential(nn.Linear(d_model, d_ff), nn.GELU(), nn.Linear(d_ff, d_model))\n\n"
                                           "    def forward(self, x):\n        h = self.norm1(x)\n"
                                           "        x = x + self.attn(h, h, h, need_weights=False, is_causal=True,\n"
                                           "                          attn_mask=~causal_mask(x.shape[1]))[0]\n"
                                           "        return x + self.mlp(self.norm2(x))\n"},
        test="block_test", rule="avoid MultiheadAttention"),
    "block storing nn.MultiheadAttention in an attribute of the student's": Entry(
        AT, "", replace={"block_solution": "class TransformerBlock(nn.Module):\n    def __init__(self, d_model, n_heads, d_ff):\n"
                                           "        super().__init__()\n"
                                           "        self.multi_head_attention = nn.MultiheadAttention(d_model, n_heads, batch_first=True)\n"
                                           "        self.mlp = nn.Sequential(nn.Linear(d_model, d_ff), nn.GELU(), nn.Linear(d_ff, d_model))\n\n"
                                           "    def forward(self, x):\n"
                                           "        x = x + self.multi_head_attention(x, x, x, need_weights=False)[0]\n"
                                           "        return x + self.mlp(x)\n"},
        test="block_test", rule="avoid MultiheadAttention (an own attribute's name is no cover)"),
}
