"""A typed, JSON-only wire format for the values that graded test cells report.

The student's kernel encodes; the grader decodes in its own process. Nothing is unpickled,
so a student object cannot run code in the grader, and every tensor arrives as plain
(dtype, shape, bytes) that the grader compares itself.

Supported values: None, bool, int, float, str, torch.Tensor (any device: recorded with its
device type), torch.Size, torch.dtype, torch.device, and lists, tuples and str-keyed dicts of
these. NumPy arrays and scalars are converted to tensors/numbers.

torch is imported only when needed: a value cannot be a tensor unless the kernel imported torch,
so recording plain Python values does not pay for importing it.
"""
from __future__ import annotations

import base64
from collections import OrderedDict
import math
import sys
from typing import Any

MAX_DEPTH = 16


def encode(value: Any, _depth: int = 0) -> Any:
    """Return a JSON-serialisable tree that describes ``value`` exactly."""
    if _depth > MAX_DEPTH:
        raise TypeError(f"value nested deeper than {MAX_DEPTH} levels")
    if value is None or type(value) in (bool, str):
        return value if type(value) is not str else {"str": value}
    if type(value) is int:
        return {"int": str(value)}
    if type(value) is float:
        return {"float": repr(value)}
    torch = sys.modules.get("torch")  # None: the kernel never imported torch
    if torch is not None:
        if isinstance(value, torch.Tensor):
            return {"tensor": _encode_tensor(value)}
        if isinstance(value, torch.Size):
            return {"size": [int(n) for n in value]}
        if isinstance(value, torch.dtype):
            return {"dtype": str(value)}
        if isinstance(value, torch.device):
            return {"device": str(value)}
    if type(value) in (list, tuple):
        return {type(value).__name__: [encode(v, _depth + 1) for v in value]}
    if type(value) in (dict, OrderedDict):  # OrderedDict: what Module.state_dict() returns
        if not all(type(k) is str for k in value):
            raise TypeError("only dicts with str keys can be recorded")
        return {"dict": {k: encode(v, _depth + 1) for k, v in value.items()}}
    numpy_value = _from_numpy(value)
    if numpy_value is not None:
        return encode(numpy_value, _depth)
    raise TypeError(
        f"cannot record a value of type {type(value).__qualname__}; record tensors, numbers, "
        "strings, shapes, dtypes or lists/tuples/dicts of them (e.g. a model's state_dict())"
    )


def decode(tree: Any) -> Any:
    """Inverse of :func:`encode`. Raises ValueError on anything that is not a valid tree."""
    import torch

    if tree is None or type(tree) is bool:
        return tree
    if type(tree) is not dict or len(tree) != 1:
        raise ValueError(f"malformed recorded value: {str(tree)[:80]!r}")
    (kind, body), = tree.items()
    if kind == "str" and type(body) is str:
        return body
    if kind == "int" and type(body) is str:
        return int(body)
    if kind == "float" and type(body) is str:
        return float(body)
    if kind == "tensor" and type(body) is dict:
        return _decode_tensor(body)
    if kind == "size" and type(body) is list and all(type(n) is int for n in body):
        return torch.Size(body)
    if kind == "dtype" and type(body) is str:
        return _dtype(body)
    if kind == "device" and type(body) is str:
        return torch.device(body)
    if kind in ("list", "tuple") and type(body) is list:
        items = [decode(v) for v in body]
        return items if kind == "list" else tuple(items)
    if kind == "dict" and type(body) is dict:
        return {str(k): decode(v) for k, v in body.items()}
    raise ValueError(f"malformed recorded value of kind {kind!r}")


def _encode_tensor(t: "torch.Tensor") -> dict:
    import torch

    flat = t.detach().to("cpu").contiguous().reshape(-1)
    if flat.is_quantized or flat.layout != torch.strided:
        raise TypeError("only dense tensors can be recorded")
    if flat.is_conj():
        flat = flat.resolve_conj()
    raw = flat.view(torch.uint8).numpy().tobytes() if flat.numel() else b""
    return {
        "dtype": str(t.dtype),
        "shape": list(t.shape),
        "device": t.device.type,
        "requires_grad": bool(t.requires_grad),
        "data": base64.b64encode(raw).decode("ascii"),
    }


def _decode_tensor(body: dict) -> "torch.Tensor":
    import torch

    if set(body) != {"dtype", "shape", "device", "requires_grad", "data"}:
        raise ValueError("malformed recorded tensor")
    _device_type(body["device"])
    dtype, shape = _dtype(body["dtype"]), body["shape"]
    if type(shape) is not list or not all(type(n) is int and n >= 0 for n in shape):
        raise ValueError("malformed recorded tensor shape")
    raw = base64.b64decode(body["data"], validate=True)
    numel = math.prod(shape)
    itemsize = torch.empty((), dtype=dtype).element_size()
    if len(raw) != numel * itemsize:
        raise ValueError(f"recorded tensor has {len(raw)} bytes, expected {numel * itemsize}")
    if numel == 0:
        return torch.empty(shape, dtype=dtype)
    return torch.frombuffer(bytearray(raw), dtype=dtype).reshape(shape).clone()


def tensor_device(tree: Any) -> str | None:
    """The device type a recorded tensor lived on (the decoded copy is always on the CPU)."""
    if type(tree) is dict and type(tree.get("tensor")) is dict:
        return tree["tensor"].get("device")
    return None


def _device_type(name: Any) -> str:
    """``name`` when it is a device type torch knows ("cpu", "cuda", ...); else ValueError."""
    import torch

    try:
        known = type(name) is str and torch.device(name).type == name
    except (RuntimeError, ValueError):
        known = False
    if not known:
        raise ValueError("unknown device type in a recorded tensor")
    return name


def _dtype(name: str) -> "torch.dtype":
    import torch

    dtype = getattr(torch, name.removeprefix("torch."), None) if name.startswith("torch.") else None
    if not isinstance(dtype, torch.dtype):
        raise ValueError(f"unknown dtype {name!r}")
    return dtype


def _from_numpy(value: Any) -> Any:
    np = sys.modules.get("numpy")
    if np is None:  # not imported by the kernel: the value cannot be a NumPy object
        return None
    if isinstance(value, np.ndarray):
        import torch

        return torch.from_numpy(np.ascontiguousarray(value))
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    return None
