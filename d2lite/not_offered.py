"""d2l names that d2lite deliberately does not offer, each with what to use instead.

``d2lite.<name>`` for one of them raises an AttributeError carrying this advice (see
``d2lite.__getattr__``); the README's d2lite section lists the same groups.
"""
from __future__ import annotations

__all__ = ["NOT_OFFERED", "advice"]

_CLASS_API = ("d2l 1.0's object-oriented API; d2lite follows the functional API of d2l 0.17 "
              "(train_ch3, train_ch6, load_data_fashion_mnist ...): write an nn.Module and call "
              "d2lite.train_ch6, or install d2l itself for the 1.0 chapters")
_ALIAS = ("one of d2l 0.17's backend aliases, which its PyTorch pages print as plain torch code; "
          "write torch.{name} instead")
_TENSOR_METHOD = {"reshape": "x.reshape(...)", "size": "x.numel()", "reduce_sum": "x.sum(...)",
                  "argmax": "x.argmax(...)", "astype": "x.type(...)", "numpy": "x.detach().numpy()",
                  "to": "x.to(...)", "transpose": "x.t()", "concat": "torch.cat(...)"}
_TORCH_ALIASES = ("ones", "zeros", "tensor", "arange", "meshgrid", "sin", "sinh", "cos", "cosh", "tanh",
                  "linspace", "exp", "log", "normal", "rand", "matmul", "int32", "float32", "stack",
                  "abs", "eye")

NOT_OFFERED: dict[str, str] = {
    **{name: _CLASS_API for name in ("Module", "Trainer", "DataModule", "HyperParameters", "ProgressBoard",
                                     "Classifier", "FashionMNIST", "SyntheticRegressionData",
                                     "add_to_class", "init_cnn")},
    **{name: _ALIAS.format(name=name) for name in _TORCH_ALIASES},
    **{name: f"one of d2l 0.17's backend aliases; write {method} instead" for name, method in _TENSOR_METHOD.items()},
    "train_ch13": "d2l's computer-vision chapter (13 in 0.17), beyond what d2lite covers; use d2lite.train_ch6 "
                  "for one device, or the data-parallel code of course/05_multigpu.ipynb",
    "train_batch_ch13": "d2l's computer-vision chapter (13 in 0.17), beyond what d2lite covers; write the step "
                        "with d2lite.split_batch and d2lite.allreduce as in the multi-GPU chapter",
    "gpu": "d2l 1.0's device helper; use d2lite.try_gpu(i) (never fails) or torch.device(f'cuda:{i}')",
    "cpu": "d2l 1.0's device helper; use torch.device('cpu')",
}


def advice(name: str) -> str | None:
    """Why d2lite has no ``name`` and what to use instead, or None for names it never heard of."""
    reason = NOT_OFFERED.get(name)
    return None if reason is None else f"d2lite does not offer d2l's {name!r}: it is {reason}."
