"""The course's environment variables, named in one place, and what they say about this run.

Graders and CI set variables that say nobody watches; ``D2LITE_*`` choose data. A flag counts
as set unless it is empty, "0", "false" or "no". ``train_ch6`` leaves its progress bar out under
a grader; ``Animator`` draws nothing under a grader or CI; notebooks train briefly in
:func:`quick_mode`. This module imports nothing heavy: the grader reads the names from here too.
"""
from __future__ import annotations

import os

__all__ = ["NBGRADER_EXECUTION", "COURSE_GRADER_RECORD", "CI", "DATASET", "DATA_DIR", "FASHION_MNIST_URL",
           "GRADING_ENV", "HEADLESS_ENV", "under_grader", "headless", "quick_mode", "dataset_name"]

NBGRADER_EXECUTION = "NBGRADER_EXECUTION"      # set by nbgrader while it executes a notebook
COURSE_GRADER_RECORD = "COURSE_GRADER_RECORD"  # set to "1" by course-grader in a grading kernel
CI = "CI"                                      # set by CI services
DATASET = "D2LITE_DATASET"                     # "mnist5k": the bundled digits instead of Fashion-MNIST
DATA_DIR = "D2LITE_DATA"                       # where downloaded data sets are kept
FASHION_MNIST_URL = "D2LITE_FASHION_MNIST_URL"  # a mirror of Fashion-MNIST

GRADING_ENV = (NBGRADER_EXECUTION, COURSE_GRADER_RECORD)
HEADLESS_ENV = GRADING_ENV + (CI,)


def _is_set(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() not in ("", "0", "false", "no")


def under_grader() -> bool:
    """True while nbgrader or course-grader executes the notebook."""
    return any(_is_set(name) for name in GRADING_ENV)


def headless() -> bool:
    """True under a grader or CI: nobody watches plots."""
    return any(_is_set(name) for name in HEADLESS_ENV)


def dataset_name(default: str = "fashion_mnist") -> str:
    """The data set the run asked for with ``D2LITE_DATASET``, else ``default``."""
    return os.environ.get(DATASET, "").strip() or default


def quick_mode() -> bool:
    """True when notebooks should train briefly: under a grader, under CI, or on the bundled
    digits (``D2LITE_DATASET=mnist5k``)."""
    return headless() or dataset_name() == "mnist5k"
