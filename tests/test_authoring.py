"""Gate check (f): a graded test cell's hidden part records results and compares nothing in the
kernel; its visible part runs without the grader. Each rule is shown breaking on a cell that
violates it and holding on a cell written as the course writes them."""
import nbformat
import pytest

from grader.authoring.graded_cells import graded_cell_problems

GOOD = '''"""scale doubles every element."""
x = torch.arange(6.0)
assert torch.equal(scale(x, 2.0), 2 * x), "scale(x, 2.0) should double every element"
### BEGIN HIDDEN TESTS
from grader.record import record
g = torch.Generator().manual_seed(1)
record("doubled", scale(torch.randn(4, 5, generator=g), 2.0), "a random float matrix, doubled", rtol=1e-6)
### END HIDDEN TESTS
print("All checks passed.")'''


def cell(source: str):
    made = nbformat.v4.new_code_cell(source)
    made.metadata["nbgrader"] = {"grade": True, "solution": False, "locked": True, "points": 1,
                                 "grade_id": "test_scale", "schema_version": 3}
    return made


def hidden(part: str) -> str:
    return GOOD.replace('record("doubled", scale(torch.randn(4, 5, generator=g), 2.0), "a random float matrix, '
                        'doubled", rtol=1e-6)', part)


def test_a_cell_written_by_the_rules_passes():
    assert graded_cell_problems(cell(GOOD)) == []


@pytest.mark.parametrize("part, complaint", [
    ('y = scale(torch.ones(3), 2.0)\nassert y.sum() == 6\nrecord("y", y, "ones doubled")', "asserts"),
    ('y = scale(torch.ones(3), 2.0)\nok = bool((y == 2).all())\nrecord("ok", ok, "ones doubled")', "compares values"),
    ('y = scale(torch.ones(3), 2.0)\ntorch.testing.assert_close(y, 2 * torch.ones(3))\nrecord("y", y, "doubled")',
     "calls torch.testing.assert_close"),
    ('record("y", torch.allclose(scale(torch.ones(3), 2.0), torch.full((3,), 2.0)), "doubled")',
     "calls torch.allclose"),
    ('record("y", scale(torch.ones(3), 2.0))', "has no description"),
    ('y = scale(torch.ones(3), 2.0)', "records nothing"),
])
def test_a_hidden_part_that_judges_in_the_kernel_is_refused(part, complaint):
    problems = graded_cell_problems(cell(hidden(part)))
    assert any(complaint in p for p in problems), problems


def test_the_hidden_part_starts_with_the_record_import():
    source = GOOD.replace("from grader.record import record\n", "").replace(
        "### BEGIN HIDDEN TESTS\n", "### BEGIN HIDDEN TESTS\nimport torch\nfrom grader.record import record\n")
    assert any("must start with" in p for p in graded_cell_problems(cell(source)))


def test_the_visible_part_may_not_import_the_grader():
    source = "from grader.record import record\n" + GOOD
    assert any("visible part imports the grader" in p for p in graded_cell_problems(cell(source)))


def test_markers_inside_a_block_are_refused():
    source = GOOD.replace("### BEGIN HIDDEN TESTS", "if True:\n    ### BEGIN HIDDEN TESTS")
    assert any("is indented" in p for p in graded_cell_problems(cell(source)))


def test_a_cell_without_a_hidden_part_is_refused():
    visible_only = GOOD.split("### BEGIN HIDDEN TESTS")[0] + 'print("All checks passed.")'
    assert any("no hidden part" in p for p in graded_cell_problems(cell(visible_only)))
