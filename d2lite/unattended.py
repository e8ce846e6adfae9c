"""Whether anyone watches this run: graders and CI set environment variables that say not.

A variable counts as set unless it is empty, "0", "false" or "no". ``train_ch6`` leaves its
progress bar out under a grader; ``Animator`` draws nothing under a grader or CI.
"""
from __future__ import annotations

import os

__all__ = ["GRADING_ENV", "HEADLESS_ENV", "under_grader", "headless"]

GRADING_ENV = ("NBGRADER_EXECUTION", "COURSE_GRADER_RECORD")  # nbgrader's, course-grader's
HEADLESS_ENV = GRADING_ENV + ("CI",)


def _is_set(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() not in ("", "0", "false", "no")


def under_grader() -> bool:
    """True while nbgrader or course-grader executes the notebook."""
    return any(_is_set(name) for name in GRADING_ENV)


def headless() -> bool:
    """True under a grader or CI: nobody watches plots."""
    return any(_is_set(name) for name in HEADLESS_ENV)
