"""Stock ``nbgrader autograde`` on this course: the same comparison course-grader makes.

A graded test cell's hidden part only *records* what the student's code computed
(:func:`grader.record.record`); it asserts nothing. Under stock nbgrader a cell scores full marks
when it raises nothing, so without help every recorded value would pass. ``nbgrader_config.py``
puts :class:`CheckRecords` right after nbgrader's ``Execute`` step: it compares each graded test
cell's records with the reference values of the instructor's solution
(``references/<assignment>.json``, computed once and reused, exactly as ``course-grader autograde``
does) and gives every cell that does not match an error output, which nbgrader scores 0 (a cell that matches
but whose answer's source holds a finding keeps its score and is flagged for review by
:class:`FlagReviews`, after nbgrader's SaveAutoGrades); a cell whose
keys carry shares (:mod:`grader.engine.notebook.shares`) gets the shares it earned as its ``execute_result``,
which nbgrader reads as partial credit. A test cell's
stderr text becomes stdout: stock nbgrader would score a warning as a failure, course-grader does not.

Stock nbgrader runs students' code unsandboxed, as the instructor, in the course directory: a
submission can rewrite every grade in ``gradebook.db`` and read the solutions in ``source/``. So
``nbgrader_config.py`` makes :class:`GuardedExporter` the exporter of ``nbgrader autograde`` (and of
formgrader's Autograde button): it refuses before anything is converted, graded or written, unless
the instructor opts in with ``COURSE_GRADER_ALLOW_UNSANDBOXED=1`` in the environment or
``c.GuardedExporter.allow_unsandboxed = True`` in the config. course-grader is the sandboxed,
tamper-proof path (``grader/THREAT_MODEL.md``).
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import nbformat
from nbconvert.exporters import NotebookExporter
from nbconvert.preprocessors import Preprocessor
from traitlets import Bool, Unicode

from .authoring.coursedir import CourseDir
from .authoring.invocation import command
from .engine.notebook.cells import is_test, nbgrader_meta
from .engine.notebook.shares import earned, has_shares
from .engine.reading.bounds import bounded_readings
from .engine.reading.rules import REVIEW_REASON, review_note
from .engine.verdict.compare import check_records, key_problems, test_reason
from .engine.verdict.references import References, sha256_of
from .engine.verdict.seal import course_key
from .record import MIME_TYPE

__all__ = ["CheckRecords", "FlagReviews", "GuardedExporter", "autograde_preprocessors", "ERROR_NAME", "OPT_IN"]

ERROR_NAME = "RecordedValueMismatch"
OPT_IN = "COURSE_GRADER_ALLOW_UNSANDBOXED"  # =1: let stock `nbgrader autograde` run students' code


def refusal(assignment: str = "ASSIGNMENT", root: Path | str | None = None) -> str:
    """What stock ``nbgrader autograde`` says when it refuses: the risk, the safe way, the opt-in."""
    return (f"nbgrader autograde refused: stock nbgrader runs every student's code unsandboxed, as you, "
            f"in this course directory, where a submission can rewrite every grade in gradebook.db and "
            f"read the solutions in source/. Grade with `{command('autograde ' + assignment, root)}` instead "
            f"(each kernel in a bubblewrap sandbox; same gradebook, same scores). To run stock nbgrader "
            f"anyway, on submissions you trust, set {OPT_IN}=1 in its environment or "
            f"c.GuardedExporter.allow_unsandboxed = True in nbgrader_config.py.")


class GuardedExporter(NotebookExporter):
    """nbgrader autograde's exporter (a notebook in, a notebook out) that exists only on opt-in.

    nbgrader builds its exporter before it touches any submission, the gradebook or the autograded
    folder, so refusing here (``NbGraderException``, which nbgrader turns into exit status 1) leaves
    them all as they were."""

    allow_unsandboxed = Bool(False, help="run students' code unsandboxed under stock nbgrader "
                             f"autograde (or set {OPT_IN}=1)").tag(config=True)

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        if not (self.allow_unsandboxed or os.environ.get(OPT_IN) == "1"):
            from nbgrader.converters.base import NbGraderException

            coursedir = getattr(self.parent, "coursedir", None)
            assignment = getattr(coursedir, "assignment_id", "") or "ASSIGNMENT"
            said = refusal(assignment, getattr(coursedir, "root", None))
            self.log.error(said)
            raise NbGraderException(said)


def autograde_preprocessors() -> list:
    """nbgrader's own autograde steps with :class:`CheckRecords` right after ``Execute``."""
    from nbgrader.converters import Autograde
    from nbgrader.preprocessors import Execute

    from nbgrader.preprocessors import SaveAutoGrades

    steps = list(Autograde.class_traits()["autograde_preprocessors"].default())
    steps = steps[: steps.index(Execute) + 1] + [CheckRecords] + steps[steps.index(Execute) + 1:]
    return steps[: steps.index(SaveAutoGrades) + 1] + [FlagReviews] + steps[steps.index(SaveAutoGrades) + 1:]


REVIEWS = "course_grader_reviews"  # resources key: test grade_id -> (answer grade_id, review note)


class FlagReviews(Preprocessor):
    """After nbgrader's SaveAutoGrades: a test whose answer's source holds findings keeps its automatic score and
    needs a manual grade; the finding is the answer cell's automatic comment (as course-grader saves it,
    :mod:`grader.results.gradebook`)."""

    enabled = Bool(True, help="nbconvert runs a preprocessor only when enabled").tag(config=True)

    def preprocess(self, nb, resources):
        from nbgrader.api import Gradebook

        from .results.gradebook import flag_reviews

        reviews, info = resources.get(REVIEWS) or {}, resources.get("nbgrader") or {}
        if not reviews or not info.get("db_url"):
            return nb, resources
        with Gradebook(info["db_url"]) as gb:
            flag_reviews(gb, (info["notebook"], info["assignment"], info["student"]), reviews)
        return nb, resources


class CheckRecords(Preprocessor):
    """Turn each graded test cell whose records differ from the solution's into an error."""

    enabled = Bool(True, help="nbconvert runs a preprocessor only when enabled").tag(config=True)
    course_root = Unicode("", help="the course directory (holds source/ and references/)").tag(config=True)

    def preprocess(self, nb, resources):
        assignment = (resources.get("nbgrader") or {}).get("assignment")
        notebook = (resources.get("nbgrader") or {}).get("notebook")
        if not self.course_root or not assignment or not notebook:
            raise RuntimeError("CheckRecords needs the course directory (c.CheckRecords.course_root "
                               "in nbgrader_config.py) and nbgrader's assignment name; without them "
                               "no graded test could be scored")
        references = self.references(Path(self.course_root), assignment, notebook)
        source = CourseDir(Path(self.course_root)).source(assignment) / f"{notebook}.ipynb"
        read = bounded_readings(self.roles(nb, nbformat.read(str(source), as_version=4)))
        reviews = resources.setdefault(REVIEWS, {})
        for index, cell in enumerate(nb.cells):
            if cell.cell_type == "code" and is_test(cell):
                answers, reading = read.get(index, ([], None))
                problems = reading.problems if reading else []
                self.check_cell(cell, references.cells.get(nbgrader_meta(cell).get("grade_id", "")), problems)
                if problems and not any(o.get("output_type") == "error" for o in cell.outputs):
                    exercise = next((nbgrader_meta(nb.cells[a]).get("grade_id") for a in answers
                                     if nbgrader_meta(nb.cells[a]).get("grade_id")), "")
                    reviews[nbgrader_meta(cell)["grade_id"]] = (exercise, review_note(exercise, reading))
        return nb, resources

    @staticmethod
    def roles(nb, source) -> list[tuple[str, str]]:
        """(role, source) of every cell, as :func:`grader.engine.reading.rules.test_cell_problems` reads
        them: a code cell without nbgrader metadata is the instructor's when the source notebook
        has the same text, else the student's ("added")."""
        trusted = {cell.source for cell in source.cells if cell.cell_type == "code"}
        roles = []
        for cell in nb.cells:
            meta = nbgrader_meta(cell)
            role = ("markdown" if cell.cell_type != "code" else "test" if is_test(cell)
                    else "answer" if meta.get("solution") else "trusted" if cell.source in trusted else "added")
            roles.append((role, cell.source))
        return roles

    def references(self, root: Path, assignment: str, notebook: str) -> References:
        """The solution's recorded values, computed now when missing or older than the source."""
        from .engine.grade import save_reference
        from .engine.isolation.sandbox import Limits, sandbox_status

        source = CourseDir(root).source(assignment) / f"{notebook}.ipynb"
        target = CourseDir(root).references(assignment, notebook)
        key = course_key(CourseDir(root).key)
        try:
            cached = References.load(target, key)
            if cached.source_sha256 == sha256_of(source):
                return cached
        except (OSError, ValueError):
            pass
        if not sandbox_status()[0]:
            raise RuntimeError(f"no up-to-date reference values in {target} and bubblewrap is not "
                               "available to compute them: run "
                               f"`{command('autograde ' + assignment, root)}` once on a grading machine (or apt-get install bubblewrap)")
        self.log.info("Running the solution of %s once for its reference values", assignment)
        target.parent.mkdir(parents=True, exist_ok=True)
        references = save_reference(source, target, limits=Limits())
        references.save(target, key)  # sealed, as course-grader writes it
        return references

    @staticmethod
    def check_cell(cell, expected: dict | None, read: list[str] = ()) -> None:
        payloads = [json.loads(json.dumps(o["data"][MIME_TYPE])) for o in cell.outputs  # plain types
                    if o.get("output_type") == "display_data" and MIME_TYPE in o.get("data", {})]
        cell.outputs = [o for o in cell.outputs
                        if not (o.get("output_type") == "display_data" and MIME_TYPE in o.get("data", {}))]
        for output in cell.outputs:  # a warning is not a failure (course-grader agrees); nbgrader
            if output.get("output_type") == "stream" and output.get("name") == "stderr":
                output["name"] = "stdout"  # scores any stderr text 0: keep the text, not the penalty
        if expected is not None and has_shares(expected):
            CheckRecords.score_shares(cell, expected, payloads)
            if read and not any(o.get("output_type") == "error" for o in cell.outputs):
                cell.outputs.append(nbformat.v4.new_output("stream", name="stdout", text=REVIEW_REASON + "\n"))
            return
        if any(o.get("output_type") == "error" for o in cell.outputs):
            return  # nbgrader already scores it 0
        if expected is None:
            reason = "This test could not be graded (no reference values)."
        else:
            ok, why = check_records(expected, payloads)
            if ok:  # a finding in the source keeps the score and asks a person (FlagReviews)
                if read:
                    cell.outputs.append(nbformat.v4.new_output("stream", name="stdout", text=REVIEW_REASON + "\n"))
                return
            reason = test_reason("failed", "hidden", "", why)
        cell.outputs.append(nbformat.v4.new_output("error", ename=ERROR_NAME, evalue=reason,
                                                   traceback=[f"{ERROR_NAME}: {reason}"]))

    @staticmethod
    def score_shares(cell, expected: dict, payloads: list) -> None:
        """A cell whose keys carry shares (grader.engine.notebook.shares), scored as course-grader scores it.

        nbgrader reads a partial score from a test cell's ``execute_result`` (a number as text/plain,
        nbgrader.utils.determine_grade): that output is added here, after a line saying which checks
        failed, and the cell's error (the hidden part stopped) becomes that line's last sentence."""
        errors = [o for o in cell.outputs if o.get("output_type") == "error"]
        problems, recorded = key_problems(expected, payloads)
        share, keys = earned(expected, problems, recorded, bool(errors))
        points = float(cell.metadata["nbgrader"]["points"])
        if not errors and len(keys) == len(expected):
            return
        wrong = "; ".join(why for why in problems.values() if why)
        reason = (f"Partly right: {len(keys)} of {len(expected)} hidden checks passed. "
                  f"{test_reason('failed', 'hidden', '', wrong) if wrong else ''}").strip()
        if errors:
            reason += f" The test stopped with {errors[0].get('ename', 'an error')}."
        if share <= 0:
            if not errors:
                cell.outputs.append(nbformat.v4.new_output("error", ename=ERROR_NAME, evalue=reason,
                                                           traceback=[f"{ERROR_NAME}: {reason}"]))
            return
        cell.outputs = [o for o in cell.outputs if o.get("output_type") not in ("error", "execute_result")]
        cell.outputs.append(nbformat.v4.new_output("stream", name="stdout", text=reason + "\n"))
        cell.outputs.append(nbformat.v4.new_output("execute_result", data={"text/plain": repr(min(share, points))},
                                                   execution_count=cell.get("execution_count")))
