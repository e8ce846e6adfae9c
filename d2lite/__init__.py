"""d2lite: the small helper package of the course, a drop-in for the d2l names it offers.

Each concept lives in its own module; everything is re-exported here so that notebooks
write ``d2lite.sgd`` (or ``import d2lite as d2l`` and keep d2l-style code unchanged).
"""
from .checks import *  # noqa: F401,F403
from .data import *  # noqa: F401,F403
from .device import *  # noqa: F401,F403
from .download import *  # noqa: F401,F403
from .idx import *  # noqa: F401,F403
from .models import *  # noqa: F401,F403
from .optim import *  # noqa: F401,F403
from .parallel import *  # noqa: F401,F403
from .plot import *  # noqa: F401,F403
from .timer import *  # noqa: F401,F403
from .train import *  # noqa: F401,F403
from .unattended import dataset_name, headless, quick_mode, under_grader  # noqa: F401

__version__ = "0.1.0"
