"""The demo (``make demo``): the whole instructor pipeline on a bundled example class, offline.

The class is generated from the source notebooks, by grade_id, so it follows the course:

- ``ada lovelace``: every exercise solved (the instructor's solutions);
- ``ben``: the untouched release;
- ``chen``: the first half of the exercises solved, the rest left as released;
- ``dana``: all solved, with typical mistakes (a broadcasting bug that transposes the pairwise
  distance matrix; an SGD step that forgets to zero the gradients);
- ``Émile Zola``: a unicode id with a space, whose second notebook arrived corrupt.

To keep it to a few minutes on a 2-core CPU the class submits the first two notebooks (``--all``
grades every notebook; 04/05 train models and take ~1-2 minutes per submission).
"""
from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

from d2lite import unattended

from .authoring.assembly import build, release
from .authoring.coursedir import CourseDir
from .engine.notebook import cells as nbs
from .errors import GraderError

__all__ = ["MISTAKES", "STANDS_FOR", "example_class", "collected_lines", "run_demo"]

STANDS_FOR = {  # what each example student shows, printed before grading
    "ada lovelace": "every exercise solved (the instructor's solutions): full marks",
    "ben": "hands in the release untouched: every exercise \"not answered\"",
    "chen": "solved the first half of the exercises and left the rest as released",
    "dana": "solved everything with typical mistakes",
    "Émile Zola": "a unicode id with a space; solved everything, but the second notebook's upload is cut off "
                  "(rejected at collect, on purpose)",
}

# assignment -> grade_id -> (correct text, mistaken text): applied only where the text is found.
MISTAKES = {
    "01_tensors": {"pairwise_distances": ("X[:, None, :] - Y[None, :, :]", "Y[:, None, :] - X[None, :, :]")},
    "02_autograd": {"sgd_step": ("            p.grad.zero_()\n", "")},
}


def _with_mistakes(nb: nbs.NotebookNode, assignment: str) -> tuple[nbs.NotebookNode, list[str]]:
    applied = []
    for cell in nb.cells:
        grade_id = nbs.nbgrader_meta(cell).get("grade_id")
        old, new = MISTAKES.get(assignment, {}).get(grade_id, (None, None))
        if old and old in cell.source:
            cell.source = cell.source.replace(old, new)
            applied.append(grade_id)
    return nb, applied


def example_class(root: Path, inbox: Path, names: list[str]) -> list[str]:
    """Write the example submissions into ``inbox`` (one folder per student); return notes."""
    notes = [f"{student}: {what}" for student, what in STANDS_FOR.items() if student != "dana"]
    for index, assignment in enumerate(names):
        source = nbs.read_notebook(CourseDir(root).source_notebook(assignment))
        exercises = nbs.exercises(source)
        unsolved = {gid for e in exercises[len(exercises) // 2:] for gid in e.solution_ids}
        mistaken, applied = _with_mistakes(nbs.read_notebook(CourseDir(root).source_notebook(assignment)), assignment)
        notes.append(f"dana / {assignment}: {STANDS_FOR['dana']}, in {', '.join(applied) or 'nothing (no known mistake)'}")
        submissions = {
            "ada lovelace": source,
            "ben": nbs.read_notebook(CourseDir(root).released_notebook(assignment)),
            "chen": nbs.stub(source, unsolved),
            "dana": mistaken,
            "Émile Zola": source,
        }
        for student, nb in submissions.items():
            path = inbox / student / f"{assignment}.ipynb"
            nbs.write_notebook(nb, path)
            if student == "Émile Zola" and index == 1:
                path.write_text(path.read_text(encoding="utf-8")[:500], encoding="utf-8")  # cut off mid-upload
    return notes


def collected_lines(report, inbox: Path) -> list[str]:
    """What collect did with the example class: the count, then each refused file named with its student."""
    lines = [f"collected {len(report.accepted)} submissions from {inbox}/"
             + (f"; {len(report.rejected)} file(s) refused, each named below:" if report.rejected else "")]
    stored = {item.where: item for item in report.imported if item.rejected}
    for refused in report.rejected:
        item = stored.get(refused.where)
        who = f"{item.student} / {item.assignment} ({refused.where})" if item else refused.where
        lines.append(f"refused: {who}: {refused.reason}")
    return lines


def run_demo(root: Path, *, workers: int = 2, unsafe: bool = False, limits=None, everything: bool = False,
             only: list[str] | None = None, course: Path | None = None) -> int:
    """Build, release, collect the example class, autograde, feedback, export; print where it all is.
    ``only`` names the notebooks to grade (default: the first two, or every one with ``everything``)."""
    from .intake.collect import collect
    from .results.export import export_csv
    from .results.feedback import feedback
    from .results.table import grade_table
    from .running.batch import autograde

    os.environ.setdefault(unattended.DATASET, "mnist5k")  # offline: the bundled MNIST subset
    start = time.monotonic()
    if root.exists():
        shutil.rmtree(root)
    names = build(root, course)
    unknown = sorted(set(only or ()) - set(names))
    if unknown:
        raise GraderError(f"demo --assignment: no notebook named {', '.join(unknown)} in the course; "
                          f"choose from {', '.join(names)}")
    chosen = [n for n in names if n in only] if only else names if everything else names[:2]
    release(root, chosen)
    print(f"[{time.monotonic() - start:5.0f} s] built and released {', '.join(chosen)} in {root}/")
    inbox = root / "inbox"
    notes = example_class(root, inbox, chosen)
    print(f"[{time.monotonic() - start:5.0f} s] the example class, one folder per student in {inbox}/:")
    for note in notes:
        print(f"        {note}")
    report = collect(root, inbox, chosen)
    for line in collected_lines(report, inbox):
        print(f"[{time.monotonic() - start:5.0f} s] {line}" if line.startswith("collected") else f"        {line}")
    results = autograde(root, assignments=chosen, workers=workers, limits=limits, unsafe=unsafe, progress=True)
    print(f"[{time.monotonic() - start:5.0f} s] graded\n")
    print(grade_table(root, results))
    pages = feedback(root, chosen)
    csv_path = export_csv(root)
    print(f"\n[{time.monotonic() - start:5.0f} s] done")
    print(f"  gradebook (nbgrader):  {CourseDir(root).gradebook}")
    print(f"  autograded notebooks:  {root / 'autograded'}/<student>/<assignment>/")
    print(f"  feedback ({len(pages)} HTML):    {root / 'feedback'}/<student>/<assignment>/")
    print(f"  grades CSV:            {csv_path}")
    print(f"  formgrader:            cd {root} && {Path(os.sys.executable).parent}/jupyter lab  (Nbgrader > Formgrader)")
    return 0
