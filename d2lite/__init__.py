"""d2lite: the small helper package of the course, a drop-in for the d2l names it offers.

Each concept lives in its own module; everything is re-exported here so that notebooks
write ``d2lite.sgd`` (or ``import d2lite as d2l`` and keep d2l-style code unchanged).
``d2lite.plt`` is ``matplotlib.pyplot``, imported the first time it is read.
"""
from .checks import *  # noqa: F401,F403
from .data import *  # noqa: F401,F403
from .images import *  # noqa: F401,F403
from .device import *  # noqa: F401,F403
from .downloads import *  # noqa: F401,F403
from .idx import *  # noqa: F401,F403
from .models import *  # noqa: F401,F403
from .optim import *  # noqa: F401,F403
from .parallel import *  # noqa: F401,F403
from .animator import *  # noqa: F401,F403
from .plotting import *  # noqa: F401,F403
from .comparisons import *  # noqa: F401,F403
from .timer import *  # noqa: F401,F403
from .train import *  # noqa: F401,F403
from .classify import *  # noqa: F401,F403
from .conv import *  # noqa: F401,F403
from .resnet import *  # noqa: F401,F403
from .workers import *  # noqa: F401,F403
from .diagrams import *  # noqa: F401,F403
from .sketches import *  # noqa: F401,F403
from .unattended import dataset_name, headless, quick_mode, under_grader  # noqa: F401
from . import not_offered as _not_offered

__version__ = "0.1.0"


def __getattr__(name: str):
    """``d2lite.plt`` (pyplot, imported on first use); for d2l names d2lite leaves out, an error
    that says what to use instead (PEP 562: called only for names not found above)."""
    if name == "plt":
        from .plotting import pyplot

        return pyplot()
    advice = _not_offered.advice(name)
    raise AttributeError(advice or f"module 'd2lite' has no attribute {name!r}")
