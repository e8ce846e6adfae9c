"""Attacks on the verdicts, each a real submission that must earn nothing (grader/THREAT_MODEL.md).

Every attacker answers WRONGLY and then tries to make the grader believe otherwise. Each test
also carries its positive control: the same payload, from the same sandboxed run, DOES earn points
on a grader with the one defence it targets taken out (tests/undefended.py: stock nbgrader's "no
error output" rule, tolerances the record states for itself, first record wins, only the keys the
kernel sent, records of answer cells; or the real grader without the sandbox, or trusting the
submission's own test cells), while the same wrong answers without the payload earn nothing there.
So each 0 below is earned by a defence, not by an attack that could not have worked anyway.
The payloads are in tests/attack_payloads.py.
"""
from __future__ import annotations

import json
import re
import socket
import sys
import threading
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "engine"))
from submissions import PLAIN, TENSOR, references, submission, write  # noqa: E402
from attack_payloads import (CONTROLS, PLAINLY_WRONG, asserting_variant, attacks,  # noqa: E402
                             edited_tests, importing_variant)
from undefended import (every_cells_records, first_record_wins, grade_watched,  # noqa: E402
                        only_keys_sent, stock_points, trusting_kernel_tolerances)

from grader.record import MIME_TYPE  # noqa: E402


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """name -> (NotebookResult, Watched); ``refs`` under the key "refs": source name -> cells."""
    tmp = tmp_path_factory.mktemp("attacks")
    sources = {"plain": PLAIN, "tensor": TENSOR, "importing": importing_variant(tmp)}
    ref_files = references(list(sources.values()), tmp_path_factory)
    refs = {name: json.loads(ref_files[src].read_text())["cells"] for name, src in sources.items()}
    sources["asserting"] = asserting_variant(tmp)
    ref_files[sources["asserting"]] = ref_files[PLAIN]  # it records nothing: graded for stock's rule
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    threading.Thread(target=_serve, args=(server,), daemon=True).start()
    jobs = {}
    for name, (which, answers) in attacks(refs["plain"], ref_files[PLAIN], server.getsockname()[1]).items():
        src = sources[which]
        sub = write(submission(src, answers), tmp / "subs" / f"{name}.ipynb")
        jobs[name] = src, sub, ref_files[src], False
    for name, (attack, which, unsafe) in CONTROLS.items():
        jobs[name] = sources[which], jobs[attack][1], ref_files[sources[which]], unsafe
    edited = write(submission(PLAIN, PLAINLY_WRONG, mutate=edited_tests(refs["plain"])),
                   tmp / "subs" / "edited_test_cell.ipynb")
    jobs["edited_test_cell"] = PLAIN, edited, ref_files[PLAIN], False
    jobs["edited_test_cell trusted"] = edited, edited, ref_files[PLAIN], False  # control
    try:
        return {**grade_watched(jobs, tmp), "refs": refs}
    finally:
        server.close()


def _serve(server):
    try:
        while True:
            conn, _ = server.accept()
            conn.sendall(b"def add(a, b):\n    return a + b")
            conn.close()
    except OSError:
        pass


def real(graded, name):
    return graded[name][0]


def undefended(graded, name, gid, comparator, source="plain"):
    """Points of ``gid`` for submission ``name`` on the grader without one defence."""
    watched = graded[name][1]
    if comparator is stock_points:
        return stock_points(watched, gid)
    return watched.points(gid, graded["refs"][source][gid], comparator)


def test_silencing_errors_with_excepthook_and_custom_exc_earns_nothing(graded):
    assert undefended(graded, "excepthook", "add_test", stock_points) == 1  # the failed assert is hidden
    assert undefended(graded, "plainly_wrong", "add_test", stock_points) == 0
    test = real(graded, "excepthook").tests["add_test"]
    assert (test.points, test.status) == (0, "error"), test


def test_input_transformer_rewriting_test_cells_earns_nothing(graded):
    assert undefended(graded, "input_transformer", "add_test", stock_points) == 1
    r = real(graded, "input_transformer")
    assert r.score == 0 and r.tests["add_test"].status == "failed"
    assert "recorded more than once" in r.tests["add_test"].reason  # the forged record, in two parts of the cell


def test_patched_builtins_in_the_recorder_earn_nothing(graded):
    """float() patched inside grader.record: the real recorder then claims a loose tolerance."""
    assert undefended(graded, "builtins", "mean_test", trusting_kernel_tolerances) == 2
    assert undefended(graded, "wrong", "mean_test", trusting_kernel_tolerances) == 0
    test = real(graded, "builtins").tests["mean_test"]
    assert test.points == 0 and "differs from the expected number" in test.reason, test


def test_objects_with_lying_eq_and_bool_earn_nothing(graded):
    """Graded against test cells that check in the kernel (stock's way), the liars pass them all."""
    gids = ("add_test", "mean_test", "shout_test")
    assert sum(undefended(graded, "lying_objects asserting", g, stock_points) for g in gids) == 4
    assert sum(undefended(graded, "plainly_wrong asserting", g, stock_points) for g in gids) == 0
    r = real(graded, "lying_objects")
    assert r.score == 0
    assert all(t.status in ("failed", "error") for t in r.tests.values())


def test_monkeypatched_torch_and_numpy_testing_earn_nothing(graded):
    gids = ("square_test", "row_mean_test")
    assert [undefended(graded, "patched_testing", g, stock_points, "tensor") for g in gids] == [1, 2]
    assert [undefended(graded, "plainly_wrong_tensor", g, stock_points, "tensor") for g in gids] == [0, 0]
    r = real(graded, "patched_testing")
    assert [r.tests[g].points for g in gids] == [0, 0]
    assert r.tests["square_test"].status == "failed"


def test_turning_recording_off_with_the_environment_earns_nothing(graded):
    """COURSE_GRADER_RECORD=0 set by the student silences record(); a missing key is a failure."""
    assert undefended(graded, "forged_env", "add_test", only_keys_sent) == 1
    assert undefended(graded, "wrong", "add_test", only_keys_sent) == 0
    test = real(graded, "forged_env").tests["add_test"]
    assert (test.points, test.status) == (0, "failed")
    assert test.reason.startswith("Wrong result: the test did not record"), test.reason


def test_shadow_grader_module_written_to_the_workdir_earns_nothing(graded):
    """The hidden part's own `from grader.record import record` loads the student's module."""
    watched = graded["shadow_module_in_workdir"][1]
    assert any(json.loads(text).get("shadow") for run in watched.test("mean_test").runs
               for text in run.records)  # the trusted import did load the shadow
    assert undefended(graded, "shadow_module_in_workdir", "mean_test", trusting_kernel_tolerances,
                      "importing") == 2
    assert undefended(graded, "wrong_importing", "mean_test", trusting_kernel_tolerances, "importing") == 0
    assert real(graded, "shadow_module_in_workdir").tests["mean_test"].points == 0


def test_early_exit_earns_nothing(graded):
    """Test cells that never ran show no error: stock's rule gives them every point."""
    gids = ("add_test", "mean_test", "shout_test")
    assert sum(undefended(graded, "early_exit", g, stock_points) for g in gids) == 4
    assert sum(undefended(graded, "plainly_wrong", g, stock_points) for g in gids) == 0
    r = real(graded, "early_exit")
    assert r.score == 0
    assert {t.status for t in r.tests.values()} <= {"crashed", "not run"}
    assert any("exit" in p for p in r.problems)


def printed(result, marker: str) -> str:
    answer = next(c for c in result.notebook.cells if marker in c.source)
    return "".join(o.get("text", "") for o in answer.outputs)


def test_instructor_files_cannot_be_read(graded):
    assert real(graded, "read_instructor_files unsafe").tests["add_test"].points == 1  # no sandbox
    r = real(graded, "read_instructor_files")
    assert r.tests["add_test"].points == 0
    assert printed(r, "print('unreadable'").count("unreadable") == 2, printed(r, "print('unreadable'")


def test_network_is_unreachable(graded):
    assert real(graded, "network unsafe").tests["add_test"].points == 1  # no sandbox: it connects
    r = real(graded, "network")
    assert r.tests["add_test"].points == 0
    assert "no network" in printed(r, "create_connection")


def test_correct_records_forged_by_an_answer_cell_are_ignored(graded):
    assert undefended(graded, "forged_records_in_answer_cell", "add_test", every_cells_records) == 1
    assert undefended(graded, "wrong", "add_test", every_cells_records) == 0
    r = real(graded, "forged_records_in_answer_cell")
    assert r.tests["add_test"].points == 0
    assert any("emitted grading records" in p for p in r.problems)
    assert not any(MIME_TYPE in json.dumps(c.get("outputs", [])) for c in r.notebook.cells)


def test_correct_records_forged_during_a_test_count_as_duplicates(graded):
    assert undefended(graded, "forged_records_during_test", "add_test", first_record_wins) == 1
    assert undefended(graded, "wrong", "add_test", first_record_wins) == 0
    r = real(graded, "forged_records_during_test")
    assert r.tests["add_test"].points == 0
    assert "'hidden' was recorded more than once" in r.tests["add_test"].reason


def test_a_thread_forging_records_in_the_background_earns_nothing(graded):
    assert undefended(graded, "thread_forging_records", "add_test", first_record_wins) == 1
    assert undefended(graded, "wrong", "add_test", first_record_wins) == 0
    test = real(graded, "thread_forging_records").tests["add_test"]
    assert test.points == 0 and "'hidden' was recorded more than once" in test.reason, test


def test_silencing_the_display_publisher_earns_nothing(graded):
    gids = ("add_test", "mean_test", "shout_test")
    assert sum(undefended(graded, "silenced_display", g, only_keys_sent) for g in gids) == 4
    assert sum(undefended(graded, "wrong", g, only_keys_sent) for g in gids) == 0
    r = real(graded, "silenced_display")
    assert r.score == 0 and all("did not record" in t.reason for t in r.tests.values())


def test_rebinding_record_earns_nothing(graded):
    """The test cell calls the student's record(): right visible value, a tolerance that fits all."""
    assert undefended(graded, "record_rebound", "mean_test", trusting_kernel_tolerances) == 2
    test = real(graded, "record_rebound").tests["mean_test"]
    assert test.points == 0 and "differs from the expected number" in test.reason, test


def test_edited_test_cells_in_the_submission_are_replaced_by_the_trusted_ones(graded):
    assert real(graded, "edited_test_cell trusted").score == 4  # if its own test cells were run
    r = real(graded, "edited_test_cell")
    assert r.score == 0
    test = next(c for c in r.notebook.cells if c.metadata.get("nbgrader", {}).get("grade_id")
                == "add_test")
    assert "BEGIN HIDDEN TESTS" in test.source


def test_reasons_never_show_hidden_test_source(graded):
    for name, value in graded.items():
        if name == "refs" or " " in name:  # "refs" and the controls
            continue
        for t in value[0].tests.values():
            assert "HIDDEN" not in t.reason and not re.search(r"\brng\b", t.reason), t.reason
