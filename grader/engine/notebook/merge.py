"""Build the notebook that gets graded: the trusted source with the student's answers merged in.

Everything except the answer cells comes from the instructor's source notebook: markdown, locked
cells and every graded test cell (with its hidden tests). Only solution cells (``nbgrader.solution``)
are taken from the submission, matched by ``grade_id``. When a submission lost its metadata or
reshuffled its cells, answers are found by position between cells that did not change (locked
markdown and the visible part of test cells); code cells a student added are kept after the
answer they follow, and markdown cells added after an nbgrader task cell (the answer to the task, graded by
hand; never run). A submission that cannot be read at all yields ``None`` and a reason; so does
one built to be expensive: more than MAX_CELLS cells, or JSON nested deeper than the parser goes.
Merging takes time linear in the number of cells.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbformat.v4.nbbase import random_cell_id

from .allowlist import clean_text
from .cells import CODE_STUB, SOLUTION_BEGIN, TEXT_STUB, is_task, is_test, nbgrader_meta, stub_source, without_hidden

def stub(source: str, cell_type: str = "code") -> str:
    """The released text of a solution cell: each solution region stubbed; a cell without regions
    is replaced whole, as nbgrader's release does (a hand-graded written answer becomes
    ``YOUR ANSWER HERE``), so the model answer never reaches a graded notebook."""
    if SOLUTION_BEGIN in source:
        return stub_source(source)
    return TEXT_STUB if cell_type == "markdown" else CODE_STUB

__all__ = ["Role", "Merged", "read_submission", "merge", "stub", "plain_text", "store_written_answers",
           "last_graded_cell"]

MAX_SUBMISSION_BYTES = 64 * 1024 * 1024
MAX_CELLS = 5000  # a course notebook has about a hundred


@dataclass(frozen=True)
class Role:
    kind: str  # "test" (graded, trusted) | "answer" (student's) | "added" (student's) | "trusted"
    grade_id: str = ""


@dataclass
class Merged:
    notebook: nbformat.NotebookNode
    roles: list[Role]  # one per cell of ``notebook``
    problems: list[str]


def is_answer(cell) -> bool:
    """A cell taken from the submission: a solution cell, hand-graded ones (:func:`is_manual`) included."""
    return bool(nbgrader_meta(cell).get("solution"))


def _release_text(cell) -> str:
    """What a locked/test cell looks like in the student's copy (hidden tests removed)."""
    return plain_text(without_hidden(cell.source))


def plain_text(text: str) -> str:
    """Text as compared between a release and a submission: no trailing spaces, no blank lines around it."""
    return "\n".join(line.rstrip() for line in text.strip().splitlines())


@dataclass
class _Cell:
    cell_type: str
    source: str
    grade_id: str


def read_submission(path: Path | None, whose: str = "the submitted") -> tuple[list[_Cell] | None, str]:
    """The submission's cells, leniently (any nbformat, missing fields), or (None, why not); the reason
    speaks of "``whose`` notebook" (the instructor reads "the submitted", a student validating "your")."""
    if path is None:
        return None, "no notebook was submitted"
    try:
        path = Path(path)
        if not path.is_file():
            return None, f"{whose} notebook {path.name!r} does not exist"
        if path.stat().st_size > MAX_SUBMISSION_BYTES:
            return None, f"{whose} notebook is larger than {MAX_SUBMISSION_BYTES >> 20} MB"
        data = json.loads(path.read_bytes().decode("utf-8", errors="replace"))
    except json.JSONDecodeError as exc:
        return None, (f"{whose} notebook is not valid JSON (line {exc.lineno}, column "
                      f"{exc.colno}): it was damaged, e.g. edited in a text editor")
    except RecursionError:
        return None, (f"{whose} notebook is JSON nested too deeply to read (deeper than any "
                      "notebook): it was damaged or built by hand")
    except (OSError, ValueError) as exc:
        return None, f"{whose} notebook could not be read ({type(exc).__name__})"
    raw = None
    if isinstance(data, dict):
        raw = data.get("cells")
        sheets = data.get("worksheets")
        if raw is None and isinstance(sheets, list) and sheets and isinstance(sheets[0], dict):
            raw = sheets[0].get("cells")  # nbformat 3
    if not isinstance(raw, list):
        return None, f"{whose} file is JSON but not a Jupyter notebook (it has no cells)"
    if len(raw) > MAX_CELLS:
        return None, (f"{whose} notebook has {len(raw)} cells, more than {MAX_CELLS} cells: it "
                      "was not graded; ask for the notebook as the student wrote it")
    cells = []
    for item in raw:
        if not isinstance(item, dict):
            continue
        text = item.get("source", item.get("input", ""))
        if isinstance(text, list):
            text = "".join(t for t in text if isinstance(t, str))
        text = clean_text(text) or ""  # lone surrogates could not be sent to the kernel or saved
        kind = item.get("cell_type") if isinstance(item.get("cell_type"), str) else "code"
        gid = nbgrader_meta(item).get("grade_id")
        cells.append(_Cell(kind, text, gid if isinstance(gid, str) else ""))
    return cells, ""


def merge(source: nbformat.NotebookNode, cells: list[_Cell] | None) -> Merged:
    """The trusted ``source`` with answers from ``cells`` (None: every answer is the stub)."""
    problems: list[str] = []
    cells = cells or []
    src = source.cells
    answers: dict[int, list[int]] = {}  # source index -> student indices
    anchor: dict[int, int] = {}  # source index of a trusted cell -> student index
    used: set[int] = set()
    by_gid: dict[str, list[int]] = {}
    for j, c in enumerate(cells):
        if c.grade_id:
            by_gid.setdefault(c.grade_id, []).append(j)
    texts: dict[str, list[int]] = {}
    for j, c in enumerate(cells):
        texts.setdefault(plain_text(c.source), []).append(j)
    for i, cell in enumerate(src):
        gid = nbgrader_meta(cell).get("grade_id", "")
        found = by_gid.get(gid, []) if gid else []
        if is_answer(cell):
            if found:
                answers[i] = found
                used.update(found)
            continue
        if found:
            anchor[i] = found[0]
        elif cell.source.strip():
            same = next((j for j in texts.get(_release_text(cell), []) if j not in used), None)
            if same is not None:
                anchor[i] = same
        if i in anchor:
            used.add(anchor[i])
    _by_position(src, cells, answers, anchor, used, problems)
    return _assemble(source, cells, answers, anchor, problems)


def _by_position(src, cells, answers, anchor, used, problems) -> None:
    """Find answers that lost their grade_id between the trusted cells around them."""
    missing = [i for i, c in enumerate(src) if is_answer(c) and i not in answers]
    known = sorted(list(anchor.items()) + [(i, js[0]) for i, js in answers.items()])
    found: set[int] = set()
    for i in missing:
        prev = max((k for k in known if k[0] < i), default=(-1, -1))
        nxt = min((k for k in known if k[0] > i), default=(len(src), len(cells)))
        gap = [s for s in missing if prev[0] < s < nxt[0]]
        loose = [j for j in range(prev[1] + 1, nxt[1]) if j not in used
                 and cells[j].cell_type == src[i].cell_type and cells[j].source.strip()]
        gid = nbgrader_meta(src[i]).get("grade_id", "?")
        if gap == [i] and loose:
            answers[i] = loose
        elif len(gap) > 1 and len(loose) == len(gap):
            answers[i] = [loose[gap.index(i)]]
        else:
            continue
        used.update(answers[i])
        found.add(i)
        problems.append(f"answer cell {gid!r} had lost its nbgrader metadata; it was "
                        "found by its position")
    for i in missing:
        if i not in found:
            gid = nbgrader_meta(src[i]).get("grade_id", "?")
            problems.append(f"answer cell {gid!r} was not found in the submission; it was "
                            "graded as left unanswered")


def _assemble(source, cells, answers, anchor, problems) -> Merged:
    nb = nbformat.v4.new_notebook(metadata=source.metadata)
    roles: list[Role] = []
    position = {}  # student index -> source index it stands for
    for i, js in answers.items():
        for j in js:
            position[j] = i
    for i, j in anchor.items():
        position[j] = i
    added: dict[int, list[int]] = {}  # source index -> the student's added cells after it
    after = -1  # the last source cell a student cell before this one stands for
    for j, c in enumerate(cells):
        if j in position:
            after = max(after, position[j])
        elif c.source.strip() and (c.cell_type == "code" or _answers_task(source, after, c)):
            added.setdefault(after, []).append(j)
    for j in added.get(-1, []):
        nb.cells.append(_code_cell(cells[j].source))
        roles.append(Role("added"))
    for i, cell in enumerate(source.cells):
        gid = nbgrader_meta(cell).get("grade_id", "")
        if is_answer(cell):
            js = answers.get(i)
            texts = [cells[j].source for j in js] if js else [stub(cell.source, cell.cell_type)]
            for n, text in enumerate(texts):
                copy = nbformat.from_dict(json.loads(json.dumps(cell)))
                copy.source = text
                if cell.cell_type == "code":
                    copy.outputs, copy.execution_count = [], None
                if n:  # a second copy of a duplicated or split answer: its own id
                    copy.metadata = {}
                    copy.id = random_cell_id()
                nb.cells.append(copy)
                roles.append(Role("answer", gid))
        else:
            copy = nbformat.from_dict(json.loads(json.dumps(cell)))
            if copy.cell_type == "code":
                copy.outputs, copy.execution_count = [], None
            nb.cells.append(copy)
            roles.append(Role("test" if is_test(cell) else "trusted", gid))
        for j in added.get(i, []):
            nb.cells.append(_code_cell(cells[j].source) if cells[j].cell_type == "code" else _text_cell(cells[j].source))
            roles.append(Role("added"))
    for cell in nb.cells:  # a course notebook older than nbformat 4.5 has no cell ids; this one is 4.5
        cell.setdefault("id", random_cell_id())
    return Merged(nb, roles, problems)


def last_graded_cell(merged: Merged) -> int | None:
    """The last cell of ``merged.notebook`` that grading must run: the last graded test cell, with the student's
    cells added right after it. Cells after it decide no points and are not run while grading. None (run every
    cell) when no cell is graded, or when a hand-graded answer or a task comes after the last test: a person
    grades those, and may need what later cells show."""
    graded = [i for i, (role, cell) in enumerate(zip(merged.roles, merged.notebook.cells))
              if role.kind in ("test", "answer") or is_task(cell)]
    if not graded or merged.roles[graded[-1]].kind != "test":
        return None
    last = graded[-1]
    while last + 1 < len(merged.roles) and merged.roles[last + 1].kind == "added":
        last += 1
    return last


def store_written_answers(merged: Merged) -> None:
    """Each markdown cell of the student's (a written answer, an answer to a task) as it may be kept in
    the autograded notebook: rendered and cleaned (:func:`grader.engine.notebook.allowlist.markdown_cell`), since
    formgrader renders a notebook's markdown without cleaning it, in the instructor's Jupyter. The raw
    answer stays in ``submitted/``. Done after grading: the grader judges the student's own text."""
    from .allowlist import markdown_cell

    for role, cell in zip(merged.roles, merged.notebook.cells):
        if role.kind in ("answer", "added") and cell.cell_type == "markdown":
            cell.source = markdown_cell(cell.source)


def _answers_task(source, after: int, cell) -> bool:
    """A markdown cell the student added after an nbgrader *task* cell (before the next trusted cell): part of
    the answer the instructor grades by hand, so it is kept (never run). Other added markdown is dropped."""
    return cell.cell_type == "markdown" and 0 <= after < len(source.cells) and is_task(source.cells[after])


def _text_cell(source: str) -> nbformat.NotebookNode:
    return nbformat.from_dict({"id": random_cell_id(), "cell_type": "markdown", "metadata": {}, "source": source})


def _code_cell(source: str) -> nbformat.NotebookNode:
    """A new code cell (nbformat.v4.new_code_cell without its schema check, which costs a
    millisecond a cell: this one is valid by construction)."""
    return nbformat.from_dict({"id": random_cell_id(), "cell_type": "code", "metadata": {},
                               "execution_count": None, "source": source, "outputs": []})
