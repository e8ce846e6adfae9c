"""Self-checks for exercises: *how* a function computed its result, not only what it returned.

The course's visible tests use these so that a check reads as one line ("softmax must not call
torch.softmax") instead of tracer plumbing:

    with forbid(torch.softmax, F.softmax, torch.Tensor.softmax):
        out = softmax(X, dim=1)              # AssertionError if any of them is called
    out, lines = lines_executed(pairwise_distances, X, Y)   # Python lines run outside libraries
    out, saved = tensors_saved_for_backward(predict, w, b, X)  # 0 when no graph was recorded
    with forbid_host_sync():                 # AssertionError if the step reads or prints a value
        train_step(meta_net, X_meta, y_meta, loss_fn, optimizer, totals_meta)

``forbid`` watches the calls themselves (a profile hook), so it sees a forbidden function however
it is reached: through another name, a saved reference, ``getattr`` or a method call. These are
self-checks of the student's own work: they run inside the student's Python process, where the
checked code can switch them off (``sys.setprofile(None)``, another thread, a replaced module
attribute), so they are advice and never a verdict. The grader judges the same properties on the
answer's source, in its own process (``grader/engine/reading/rules.py``).
"""
from __future__ import annotations

import contextlib
import os
import sys
import sysconfig
import threading
from typing import Any, Callable, Iterator

__all__ = ["forbid", "lines_executed", "tensors_saved_for_backward", "forbid_host_sync"]


def _describe(target: Any) -> str:
    """A readable name: ``torch.softmax``, ``Tensor.softmax``, ``torch.nn.functional.softmax``."""
    torch = sys.modules.get("torch")
    name = getattr(target, "__name__", "")
    if torch is not None and name and getattr(torch, name, None) is target:
        return f"torch.{name}"
    if torch is not None and getattr(target, "__objclass__", None) in (torch.Tensor, torch._C.TensorBase):
        return f"Tensor.{name}"
    module = getattr(target, "__module__", None) or getattr(getattr(target, "__objclass__", None), "__module__", "")
    name = getattr(target, "__qualname__", None) or getattr(target, "__name__", repr(target))
    return f"{module}.{name}" if module else name


def _matcher(target: Any) -> Callable[[str, Any, Any], bool]:
    """A test (event, frame, arg) -> True when the profile event is a call of ``target``."""
    code = getattr(target, "__code__", None)
    if code is not None:  # a Python function: its code object runs whatever name called it
        return lambda event, frame, arg: event == "call" and frame.f_code is code
    owner, name = getattr(target, "__objclass__", None), getattr(target, "__name__", None)

    def called(event: str, frame, arg) -> bool:
        if event != "c_call":
            return False
        if arg is target:
            return True
        if owner is not None:  # an unbound C method (Tensor.softmax) called as x.softmax(...)
            return getattr(arg, "__name__", None) == name and isinstance(getattr(arg, "__self__", None), owner)
        return False
    return called


@contextlib.contextmanager
def forbid(*targets: Any, message: str = "") -> Iterator[None]:
    """Inside the block, a call of any of ``targets`` raises AssertionError naming it.

    targets: Python functions (``F.softmax``), C functions (``torch.softmax``) or C methods
        (``torch.Tensor.softmax``, which also catches ``x.softmax(...)``).
    message: what to do instead; added to the error.
    The check covers calls made by this thread while the block runs.
    """
    tests = [(_matcher(t), _describe(t)) for t in targets]
    previous = sys.getprofile()
    seen: list[str] = []

    def profile(frame, event, arg):
        if not seen:
            for test, label in tests:
                if test(event, frame, arg):
                    seen.append(label)
                    break
        if previous is not None:
            previous(frame, event, arg)

    sys.setprofile(profile)
    try:
        yield
    finally:
        sys.setprofile(previous)
    if seen:
        raise AssertionError(f"{seen[0]} was called, which this exercise asks you not to use"
                             + (f"; {message}" if message else ""))


def _library_dirs() -> tuple[str, ...]:
    paths = {sysconfig.get_paths()[key] for key in ("stdlib", "platstdlib", "purelib", "platlib")}
    paths.add(os.path.dirname(os.path.abspath(__file__)))  # d2lite itself
    return tuple(os.path.join(os.path.realpath(p), "") for p in paths)


def lines_executed(fn: Callable, *args: Any, **kwargs: Any) -> tuple[Any, int]:
    """Call ``fn(*args, **kwargs)``; return (its result, Python lines executed outside libraries).

    Lines of the standard library, installed packages (torch, NumPy) and d2lite are not counted,
    so the number measures the caller's own Python: a loop over n elements runs at least n lines.
    """
    libraries = _library_dirs()
    lines = 0

    def tracer(frame, event, arg):
        nonlocal lines
        if os.path.realpath(frame.f_code.co_filename).startswith(libraries):
            return None
        if event == "line":
            lines += 1
        return tracer

    previous = sys.gettrace()
    sys.settrace(tracer)
    try:
        result = fn(*args, **kwargs)
    finally:
        sys.settrace(previous)
    return result, lines


def tensors_saved_for_backward(fn: Callable, *args: Any, **kwargs: Any) -> tuple[Any, int]:
    """Call ``fn(*args, **kwargs)``; return (its result, how many tensors autograd saved for a
    backward pass meanwhile). 0 means no graph was recorded, e.g. under ``torch.no_grad()``."""
    import torch

    saved = 0
    lock = threading.Lock()

    def pack(tensor):
        nonlocal saved
        with lock:
            saved += 1
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        result = fn(*args, **kwargs)
    return result, saved


# --- Host syncs: code that needs a tensor's value on the CPU ---------------------------------------

# What PyTorch says when code asks a meta tensor (shape and dtype, no values) for its values.
_META_VALUE_ERRORS = ("cannot be called on meta tensors",          # .item(), float(), int(), bool(), if
                      "Cannot copy out of meta tensor",            # .tolist(), .cpu(), .to("cpu")
                      "meta device type tensor to numpy",          # .numpy(), np.asarray
                      "data-independent implementation does not exist",  # nonzero, boolean masks
                      "meta tensor without output_size")           # repeat_interleave


@contextlib.contextmanager
def forbid_host_sync(message: str = "") -> Iterator[None]:
    """Inside the block, code that needs a tensor's *value* on the host raises AssertionError.

    Run the code on meta tensors (``torch.zeros(3, device="meta")``: a shape and a dtype, no
    values), which stand in for tensors on a GPU:

    - reading a value (``.item()``, ``float()``, ``int()``, ``if`` on a tensor, ``.tolist()``,
      ``.cpu()``, ``.numpy()``) or an operation whose output size depends on values
      (``nonzero``, ``x[mask]``) fails on a meta tensor; the block reports that failure as an
      AssertionError saying what it means;
    - printing or formatting a tensor (``print(loss)``, ``f"{loss}"``) does NOT fail on a meta
      tensor (it prints ``tensor(..., device='meta')``), although on a GPU it waits for the value
      like ``.item()``: the block watches ``Tensor.__repr__`` and ``Tensor.__format__`` and fails
      if either runs, for a tensor on any device.

    Not seen: copies from the CPU to the device (``torch.tensor(data, device=d)``,
    ``cpu_tensor.to(d)``) run fine on meta tensors, yet on a GPU the default
    ``non_blocking=False`` copy waits for the GPU; nor code that runs only on a GPU
    (``if x.is_cuda: ...``). On a real GPU, ``torch.cuda.set_sync_debug_mode("warn")`` sees those.
    message: what to do instead; added to the error. Other errors pass through unchanged.
    """
    import torch

    printing = {_matcher(torch.Tensor.__repr__): "printed a tensor (print, str or repr)",
                _matcher(torch.Tensor.__format__): "formatted a tensor (an f-string or format())"}
    previous = sys.getprofile()
    seen: list[str] = []

    def profile(frame, event, arg):
        if not seen:
            for test, what in printing.items():
                if test(event, frame, arg):
                    seen.append(what)
                    break
        if previous is not None:
            previous(frame, event, arg)

    def failure(what: str) -> AssertionError:
        return AssertionError(f"the code {what}: on a GPU that makes the CPU wait until the GPU has "
                              "finished all queued work, then copies the value to the host"
                              + (f"; {message}" if message else ""))

    sys.setprofile(profile)
    try:
        yield
    except Exception as error:
        sys.setprofile(previous)
        if seen:
            raise failure(seen[0]) from error
        if any(text in str(error) for text in _META_VALUE_ERRORS):
            raise failure(f"needs a tensor's value on the host ({type(error).__name__}: "
                          f"{str(error).splitlines()[0][:120]})") from error
        raise
    finally:
        sys.setprofile(previous)
    if seen:
        raise failure(seen[0])
