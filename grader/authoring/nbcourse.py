"""A course in nbgrader's own layout, read for ``course-grader build --course DIR``.

nbgrader's layout: one folder per assignment, holding its notebooks and the files they use, and an
optional header (and footer) notebook that nbgrader's ``IncludeHeaderFooter`` puts around every
released notebook::

    DIR/header.ipynb              optional (or the one DIR/nbgrader_config.py names)
    DIR/ps1/problem1.ipynb        assignment "ps1": every notebook of the folder is graded
    DIR/ps1/problem2.ipynb
    DIR/ps1/jupyter.png           and every other file ships with it

DIR may also be an nbgrader course root: ``DIR/nbgrader_config.py`` beside ``DIR/source/<assignment>/``; there
a header or footer is used only when the configuration names it (``c.IncludeHeaderFooter.header``), as in nbgrader.
A folder with notebooks at its top level (other than the header and footer) is this project's own
layout, one assignment per notebook, and is not read here.

``DIR/nbgrader_config.py`` is NOT executed (build may be pointed at a course from elsewhere, and
reading a course runs no code): only literal string settings of the course id, header and footer are
read from it, with :mod:`ast`.
"""
from __future__ import annotations

import ast
import copy
import shutil
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["NbgraderCourse", "read_layout", "config_literals", "copy_assignment", "CONFIG_KEYS", "DELIMITER_KEYS"]

CONFIG_NAME = "nbgrader_config.py"
DELIMITER_KEYS = ("ClearSolutions.begin_solution_delimeter", "ClearSolutions.end_solution_delimeter",
                  "ClearHiddenTests.begin_test_delimeter", "ClearHiddenTests.end_test_delimeter")
CONFIG_KEYS = ("CourseDirectory.course_id", "IncludeHeaderFooter.header", "IncludeHeaderFooter.footer",
               *DELIMITER_KEYS)
STUB_KEYS = ("ClearSolutions.code_stub", "ClearSolutions.text_stub")  # not taken: said when not the default
SKIPPED = {".ipynb_checkpoints", "__pycache__"}


@dataclass(frozen=True)
class NbgraderCourse:
    """What build takes from a course in nbgrader's layout."""

    assignments: dict[str, Path]         # assignment id -> its folder
    header: Path | None = None
    footer: Path | None = None
    course_id: str | None = None         # a literal id in DIR/nbgrader_config.py
    markers: dict[str, str] = field(default_factory=dict)  # nbgrader's default marker -> the course's own
    ignored: list[str] = field(default_factory=list)  # settings of that file build could not read (sentences)


def config_literals(path: Path) -> tuple[dict[str, str], list[str]]:
    """The literal string values of :data:`CONFIG_KEYS` assigned in an nbgrader config file
    (``c.CourseDirectory.course_id = "ml101"``), without running it; and a sentence for each of those
    settings given by an expression build cannot evaluate. ({}, []) when the file is missing."""
    try:
        tree = ast.parse(Path(path).read_text(encoding="utf-8"), str(path))
    except FileNotFoundError:
        return {}, []
    except (OSError, SyntaxError, ValueError) as error:
        return {}, [f"{path} could not be read ({error}); its course id and header were not taken"]
    found, unread = {}, []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Assign):
            continue
        for target in node.targets:
            name = _dotted(target)
            if name is not None and name.startswith("c.") and name[2:] in STUB_KEYS and _not_default_stub(name[2:], node.value):
                unread.append(f"{path}, line {node.lineno}: build does not take {name}; the students' copy gets "
                              "nbgrader's default stub")
            if name is None or not name.startswith("c.") or name[2:] not in CONFIG_KEYS:
                continue
            if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                found[name[2:]] = node.value.value
            else:
                unread.append(f"{path}, line {node.lineno}: {name} is not a plain string, so build did not take it "
                              "(build does not run the file); write it as a string, or pass it to build")
    return found, unread


def _not_default_stub(key: str, value: ast.AST) -> bool:
    """Whether the stub a course sets differs from nbgrader's default (or cannot be read without running)."""
    from nbgrader.preprocessors import ClearSolutions

    try:
        given = ast.literal_eval(value)
    except ValueError:
        return True
    default = ClearSolutions.class_traits()[key.split(".")[1]].default()
    return given != default and not (isinstance(given, dict) and given.get("python") == default.get("python"))


def _dotted(node: ast.AST) -> str | None:
    """``c.CourseDirectory.course_id`` for that attribute chain, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return ".".join([node.id, *reversed(parts)]) if isinstance(node, ast.Name) else None


def _notebook_folders(folder: Path) -> dict[str, Path]:
    return {p.name: p for p in sorted(folder.iterdir())
            if p.is_dir() and not p.is_symlink() and not p.name.startswith(".") and p.name not in SKIPPED
            and any(n.is_file() for n in p.glob("*.ipynb"))}


def read_layout(course: Path) -> NbgraderCourse | None:
    """``course`` read as nbgrader's layout, or None when it is not one (a notebook, or a folder with
    course notebooks at its top level)."""
    course = Path(course)
    if not course.is_dir():
        return None
    settings, unread = config_literals(course / CONFIG_NAME)
    root_layout = (course / CONFIG_NAME).is_file() and (course / "source").is_dir() \
        and bool(_notebook_folders(course / "source"))
    base = course / "source" if root_layout else course
    folders = _notebook_folders(base)
    if not folders:
        return None
    # beside the assignment folders, header.ipynb / footer.ipynb count by their names; in an nbgrader course
    # root only when its configuration names them (as nbgrader has it)
    header = _named(course, settings.get("IncludeHeaderFooter.header"), None if root_layout else base / "header.ipynb")
    footer = _named(course, settings.get("IncludeHeaderFooter.footer"), None if root_layout else base / "footer.ipynb")
    if not root_layout and [p for p in base.glob("*.ipynb") if p not in (header, footer)]:
        return None  # notebooks at the top level: this project's own layout
    return NbgraderCourse(folders, header, footer, settings.get("CourseDirectory.course_id"),
                          course_markers(settings), unread)


def course_markers(settings: dict[str, str]) -> dict[str, str]:
    """nbgrader's default marker -> the one the course configures instead (``c.ClearSolutions.begin_solution_
    delimeter = "BEGIN ANSWER"``), for those it changes."""
    from nbgrader.preprocessors import ClearHiddenTests, ClearSolutions

    markers = {}
    for key in DELIMITER_KEYS:
        kind, name = key.split(".")
        default = (ClearSolutions if kind == "ClearSolutions" else ClearHiddenTests).class_traits()[name].default()
        if settings.get(key, default) != default:
            markers[default] = settings[key]
    return markers


def with_default_markers(source: str, markers: dict[str, str]) -> str:
    """``source`` with the course's own markers written as nbgrader's defaults, line by line as nbgrader's
    ClearSolutions and ClearHiddenTests find them (a line that holds a begin marker is a begin, else one that
    holds an end marker is an end), so that nbgrader's release and course-grader read the regions the course
    means with the default settings."""
    if not markers:
        return source
    own = {default: mine for default, mine in markers.items()}
    order = [("BEGIN SOLUTION", "END SOLUTION"), ("BEGIN HIDDEN TESTS", "END HIDDEN TESTS")]
    lines = source.split("\n")
    for index, line in enumerate(lines):
        for begin, end in order:
            mine_begin, mine_end = own.get(begin, begin), own.get(end, end)
            if mine_begin in line:
                lines[index] = line.replace(mine_begin, begin)
                break
            if mine_end in line:
                lines[index] = line.replace(mine_end, end)
                break
    return "\n".join(lines)


def _named(course: Path, configured: str | None, default: Path | None) -> Path | None:
    """The header (footer) notebook: the configured path (relative to the course root, as nbgrader reads
    it), else ``default`` if it exists; None when there is none."""
    if configured:
        path = course / configured
        if not path.is_file():
            raise FileNotFoundError(f"{course / CONFIG_NAME} names the notebook {configured!r}, which is not at "
                                    f"{path}; put it there or correct the setting")
        return path
    return default if default is not None and default.is_file() else None


def copy_assignment(folder: Path, target: Path, header: Path | None = None, footer: Path | None = None,
                    markers: dict[str, str] | None = None) -> list[Path]:
    """Copy every file of an assignment folder into ``target`` (sub-folders too; no hidden files, no links,
    no checkpoints), each notebook with the header's cells before its own and the footer's after, as
    nbgrader's IncludeHeaderFooter releases it; the course's own region markers (:func:`course_markers`) are
    written as nbgrader's defaults. Return the copied notebooks."""
    import nbformat

    around = [nbformat.read(str(p), as_version=4) if p else None for p in (header, footer)]
    notebooks = []
    for path in sorted(Path(folder).rglob("*")):
        relative = path.relative_to(folder)
        if any(part.startswith(".") or part in SKIPPED for part in relative.parts) or path.is_symlink() \
                or not path.is_file():
            continue
        out = target / relative
        out.parent.mkdir(parents=True, exist_ok=True)
        if path.suffix == ".ipynb" and len(relative.parts) == 1:
            nb = nbformat.read(str(path), as_version=4)
            _surround(nb, *around)
            for cell in nb.cells:
                cell.source = with_default_markers(cell.source, markers or {})
            nbformat.write(nb, str(out))
            notebooks.append(out)
        else:
            shutil.copyfile(path, out)
    return notebooks


def _surround(nb, header, footer) -> None:
    """Put the header's cells before ``nb``'s and the footer's after, with cell ids unique in ``nb``."""
    if header is None and footer is None:
        return
    taken = {cell.get("id") for cell in nb.cells}
    before = [copy.deepcopy(c) for c in header.cells] if header else []
    after = [copy.deepcopy(c) for c in footer.cells] if footer else []
    for index, cell in enumerate(before + after):
        if nb.nbformat_minor < 5:  # cell ids exist from nbformat 4.5 on
            cell.pop("id", None)
            continue
        name = cell.get("id") or f"{'header' if index < len(before) else 'footer'}-{index}"
        while name in taken:
            name = f"{name}-{index}"
        cell["id"] = name
        taken.add(name)
    nb.cells = before + nb.cells + after
