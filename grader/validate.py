"""``course-grader validate``: the student's self-check, and its messages in the student's words.

A student meets three problems before any test runs, each answered with what to do:
the path does not exist (often: ``make lab`` has not made the copies in ``build/student/`` yet),
the path is a folder, or the notebook cannot be read (damaged, e.g. edited in a text editor: the
message says how to get a previous version back).
"""
from __future__ import annotations

import shlex
from pathlib import Path

from .authoring.invocation import command
from .lab import STUDENT_DIR

__all__ = ["cmd_validate", "missing_notebook", "unreadable_notebook"]

EXAMPLE = f"{STUDENT_DIR}/01_tensors/01_tensors.ipynb"


def _validate(path: Path | str) -> str:
    return command(f"validate {shlex.quote(str(path))}", module=True)


def missing_notebook(path: Path) -> str:
    """What to say when ``path`` does not exist."""
    inside = path.resolve().is_relative_to(STUDENT_DIR.resolve())
    if inside and not STUDENT_DIR.joinpath(*path.resolve().relative_to(STUDENT_DIR.resolve()).parts[:1]).exists():
        return (f"{path} does not exist yet: your copies of the released notebooks are made by `make lab` "
                f"(in {STUDENT_DIR}/<assignment>/<assignment>.ipynb). Run `make lab` first, work in the notebook "
                f"it opens, then run `{_validate(path)}` again")
    return f"{path} does not exist; pass the path of your notebook, e.g. `{_validate(EXAMPLE)}`"


def unreadable_notebook(path: Path, why: str) -> str:
    """What to say when ``path`` is not a readable notebook (``why``: the reader's reason)."""
    why = why.removeprefix("cannot validate: ")
    checkpoint = path.parent / ".ipynb_checkpoints" / f"{path.stem}-checkpoint{path.suffix}"
    back = (f"JupyterLab kept the version of your last save (its checkpoint): `cp {shlex.quote(str(checkpoint))} "
            f"{shlex.quote(str(path))}` puts it back (in JupyterLab: File > Revert Notebook to Checkpoint)"
            if checkpoint.is_file() else "if JupyterLab still opens it, File > Revert Notebook to Checkpoint")
    return f"cannot validate {path}: {why}. To get a previous version back: {back}; or {_fresh_copy(path)}"


def _fresh_copy(path: Path) -> str:
    """How to start again from the released notebook: through ``make lab`` for a copy it made (the folder
    ``build/student/<assignment>/``), otherwise from wherever the student got it (no folder invented)."""
    try:
        inside = path.resolve().relative_to(STUDENT_DIR.resolve()).parts
    except ValueError:
        inside = ()
    if len(inside) == 2:  # build/student/<assignment>/<notebook>.ipynb, as make lab copies it
        return (f"start again from the released notebook (with `make lab`: rename the folder "
                f"{STUDENT_DIR}/{inside[0]}/, run `make lab` again, which copies the release there, and paste "
                "your answers into the new copy)")
    return ("start again from the released notebook, where you got it (JupyterLab's Assignments tab: Fetch; or "
            "your course's page), and paste your answers into the new copy")


def cmd_validate(args, limits) -> int:
    """Run the visible tests of ``args.path``; 0 all pass, 1 some fail, 2 nothing could run."""
    from .engine.grade import validate
    from .engine.isolation.cleanup import scratch_folder

    if args.path.is_dir():
        inside = sorted(p.name for p in args.path.glob("*.ipynb"))
        example = f"{args.path / inside[0]}" if inside else f"{args.path}/NOTEBOOK.ipynb"
        print(f"{args.path} is a folder; validate one notebook in it"
              + (f" ({', '.join(inside)})" if inside else " (it holds no .ipynb file)")
              + f": `{_validate(example)}`")
        return 2
    if not args.path.is_file():
        print(missing_notebook(args.path))
        return 2
    failed = 0
    with scratch_folder("validate") as workdir:  # removed whatever the notebook left there
        try:
            results = validate(args.path, workdir=Path(workdir), limits=limits)
        except ValueError as error:
            print(unreadable_notebook(args.path, str(error)))
            return 2
    from .results.vocabulary import NOT_ANSWERED, NOT_ANSWERED_REASON, outcome_word

    for result in results:  # in the feedback page's words: passed, wrong, error in your code, not answered
        ok = result.status == "passed"
        failed += not ok
        word = outcome_word(result.status, result.reason)
        reason = NOT_ANSWERED_REASON if word == NOT_ANSWERED else result.reason
        print(f"{word.upper()}  {result.grade_id}: {reason}")
    if not results:
        print("no graded test cells found in this notebook: the locked test cells under each exercise "
              "(they carry nbgrader's metadata) were deleted, or the answers were pasted into a new "
              "notebook. Get a fresh copy of the released notebook, copy your answers into its "
              "answer cells, and validate that copy.")
        return 2
    print(f"{len(results) - failed}/{len(results)} visible checks pass"
          + ("" if not failed else "; fix the failing exercises and validate again"))
    return 1 if failed else 0
