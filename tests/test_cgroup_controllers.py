"""Which budgets a kernel's control group gets, decided from what the machine's cgroup offers.

A GPU machine seen here (an H100, cgroup v2) delegated ``memory`` but neither ``cpu`` nor ``pids``: the
grader then made no group at all, so kernels kept RLIMIT_AS and could not use the GPU. Memory alone is
enough for a group (and for the GPU); the missing budgets are named, never silently assumed.
These tests build a cgroup v2 tree in a temporary folder and point the grader at it.
"""
from __future__ import annotations

import errno
from types import SimpleNamespace

import pytest

from grader.engine.isolation import cgroups

LIMITS = SimpleNamespace(memory_mb=512, max_processes=40)


@pytest.fixture
def fake_v2(tmp_path, monkeypatch):
    """make(controllers): a cgroup v2 mount in tmp_path whose grader group offers ``controllers``."""
    def make(controllers: str):
        base = tmp_path / "cgroup" / "grader.slice"
        base.mkdir(parents=True)
        (base / "cgroup.controllers").write_text(controllers + "\n")
        (base / "cgroup.subtree_control").write_text("\n")
        monkeypatch.setattr(cgroups, "_mounts", lambda: (tmp_path / "cgroup", {}))
        monkeypatch.setattr(cgroups, "_own_paths", lambda: ("/grader.slice", {}))
        cgroups._bases.cache_clear()
        return base
    yield make
    cgroups._bases.cache_clear()


def test_a_memory_only_hierarchy_gives_each_kernel_a_memory_budget_and_names_what_it_lacks(fake_v2):
    base = fake_v2("memory io")
    ok, why = cgroups.cgroup_support()
    assert ok, why
    assert "memory only" in why and "no cpu controller" in why and "no pids controller" in why
    assert [gap.split(",")[0] for gap in cgroups.cgroup_gaps()] == ["no cpu controller", "no pids controller"]
    assert (base / "cgroup.subtree_control").read_text() == "+memory"  # only what is offered is asked for

    group = cgroups.KernelGroup.create(LIMITS, cores=1.0)
    folder = group.dirs["unified"]
    assert (folder / "memory.max").read_text() == str(512 * 1024 * 1024)
    assert not (folder / "cpu.max").exists() and not (folder / "pids.max").exists()
    assert group.stat("pids", "pids.events") == {}  # a budget it does not have reads as nothing, not an error


def test_a_full_hierarchy_bounds_memory_cpu_and_processes_and_reports_no_gaps(fake_v2):
    base = fake_v2("cpuset cpu io memory pids")
    ok, why = cgroups.cgroup_support()
    assert ok and "only" not in why, why
    assert cgroups.cgroup_gaps() == []
    assert (base / "cgroup.subtree_control").read_text() == "+memory +cpu +pids"

    folder = cgroups.KernelGroup.create(LIMITS, cores=0.5).dirs["unified"]
    assert (folder / "memory.max").read_text() == str(512 * 1024 * 1024)
    assert (folder / "cpu.max").read_text() == "50000 100000"
    assert (folder / "pids.max").read_text() == "40"


def test_without_memory_there_is_no_group_and_the_reason_says_so(fake_v2):
    fake_v2("cpu pids")
    ok, why = cgroups.cgroup_support()
    assert not ok and "does not offer memory" in why, why
    assert cgroups.KernelGroup.create(LIMITS, cores=1.0) is None
    assert cgroups.cgroup_gaps() == []  # no group at all is cgroup_support's to say


def test_where_the_graders_own_group_holds_processes_kernel_groups_go_beside_it(fake_v2, monkeypatch):
    """cgroup v2's rule: a group with processes in it hands no controller to children (EBUSY). The
    H100 machine refused so; its parent delegated memory, so the kernels' groups are made there."""
    base = _busy_grader_group(fake_v2, monkeypatch, refuse_parent=False, own="memory pids", parent_offers="memory pids",
                              parent_hands_on="memory pids")
    ok, why = cgroups.cgroup_support()
    assert ok and f"beside the grader in {base.parent}" in why, why
    assert cgroups.cgroup_gaps() == [cgroups._gap_sentences(("memory", "pids"))[0]]  # cpu only
    group = cgroups.KernelGroup.create(LIMITS, cores=1.0)
    assert group.dirs["unified"].parent == base.parent
    assert (group.dirs["unified"] / "memory.max").exists() and (group.dirs["unified"] / "pids.max").exists()


def test_a_busy_group_whose_parent_offers_no_memory_gets_no_group_and_both_reasons(fake_v2, monkeypatch):
    base = fake_v2("memory")
    (base.parent / "cgroup.controllers").write_text("pids\n")
    (base.parent / "cgroup.subtree_control").write_text("pids\n")
    def busy(path, value):
        raise OSError(errno.EBUSY, "Device or resource busy")

    monkeypatch.setattr(cgroups, "_write", busy)
    ok, why = cgroups.cgroup_support()
    assert not ok and "Device or resource busy" in why and "does not offer memory" in why, why


def _busy_grader_group(fake_v2, monkeypatch, refuse_parent: bool | str, own: str = "memory",
                       parent_offers: str = "cpuset cpu io memory hugetlb pids", parent_hands_on: str = "memory",
                       asked: list | None = None):
    """A grader's group that holds processes, so it refuses to hand controllers to children (EBUSY). By default
    the H100 machine of the fourth GPU run: the grader's group was handed memory alone, while its parent offered
    cpuset, cpu, io, memory, hugetlb and pids and delegated only memory. ``refuse_parent``: the parent refuses
    to hand on more (True), or refuses this one write (a string such as "+cpu"). ``asked``: each write made to the
    parent's cgroup.subtree_control is appended there."""
    base = fake_v2(own)
    (base.parent / "cgroup.controllers").write_text(parent_offers + "\n")
    (base.parent / "cgroup.subtree_control").write_text(parent_hands_on + "\n")
    write = cgroups._write

    def refusing(path, value):
        if path == base / "cgroup.subtree_control":
            raise OSError(errno.EBUSY, "Device or resource busy")
        if path == base.parent / "cgroup.subtree_control":
            if asked is not None:
                asked.append(value)
            if refuse_parent is True or refuse_parent == value:
                raise OSError(errno.EACCES if refuse_parent is True else errno.EINVAL, "refused")
        write(path, value)

    monkeypatch.setattr(cgroups, "_write", refusing)
    return base


def test_beside_the_grader_the_parents_offered_cpu_and_pids_are_delegated_too(fake_v2, monkeypatch):
    """Groups beside the grader get every budget the parent offers, not only those it already hands to
    its children: the parent holds no processes, so cpu and pids can be turned on there."""
    asked = []
    base = _busy_grader_group(fake_v2, monkeypatch, refuse_parent=False, asked=asked)
    ok, why = cgroups.cgroup_support()
    assert ok and f"beside the grader in {base.parent}" in why and "only" not in why, why
    assert f"(turned on +cpu +pids in {base.parent / 'cgroup.subtree_control'})" in why, why  # the siblings get them too
    assert cgroups.cgroup_gaps() == []
    assert asked == ["+cpu", "+pids"]  # only what was missing, one at a time
    folder = cgroups.KernelGroup.create(LIMITS, cores=0.5).dirs["unified"]
    assert folder.parent == base.parent
    assert (folder / "cpu.max").read_text() == "50000 100000" and (folder / "pids.max").read_text() == "40"


def test_beside_the_grader_a_refused_delegation_leaves_memory_and_names_the_gaps(fake_v2, monkeypatch):
    base = _busy_grader_group(fake_v2, monkeypatch, refuse_parent=True)
    ok, why = cgroups.cgroup_support()
    assert ok and f"beside the grader in {base.parent}" in why and "memory only" in why, why
    assert [gap.split(",")[0] for gap in cgroups.cgroup_gaps()] == ["no cpu controller", "no pids controller"]
    folder = cgroups.KernelGroup.create(LIMITS, cores=1.0).dirs["unified"]
    assert (folder / "memory.max").exists() and not (folder / "pids.max").exists()


def test_beside_the_grader_a_controller_the_parent_refuses_costs_only_that_budget(fake_v2, monkeypatch):
    """Turning a controller on is all or nothing per write, and cpu alone can be refused (EINVAL where real-time
    tasks run): asked one at a time, pids is still handed on, and the gap named is cpu's alone."""
    base = _busy_grader_group(fake_v2, monkeypatch, refuse_parent="+cpu")
    ok, why = cgroups.cgroup_support()
    assert ok and "turned on +pids in" in why and "+cpu" not in why, why
    assert [gap.split(",")[0] for gap in cgroups.cgroup_gaps()] == ["no cpu controller"]
    folder = cgroups.KernelGroup.create(LIMITS, cores=1.0).dirs["unified"]
    assert folder.parent == base.parent and (folder / "pids.max").read_text() == "40"


def test_the_command_line_says_what_it_turned_on_outside_its_own_group(fake_v2, monkeypatch, capsys):
    """The parent's other children get a controller turned on there too: the command that did it says so, once,
    whatever its flags; a command that made no kernel group looks at nothing and says nothing."""
    from grader import cli
    from grader.results import table
    from grader.running import batch

    base = _busy_grader_group(fake_v2, monkeypatch, refuse_parent=False)
    monkeypatch.setattr(batch, "autograde", lambda *a, **k: batch.Outcomes([], pending=1))  # the printing alone
    monkeypatch.setattr(table, "grade_table", lambda *a, **k: "")
    monkeypatch.setattr(cli, "needs_course", lambda args: False)
    monkeypatch.setattr(cli, "_limits", lambda args: None)
    monkeypatch.setattr(cli, "cmd_export", lambda args: 0)  # a command that makes no kernel group
    assert cli.main(["export", "--root", str(base)]) == 0
    assert capsys.readouterr().err == "" and not cgroups._bases.cache_info().currsize

    assert cli.main(["autograde", "--unsafe", "--root", str(base)]) == 0
    said = capsys.readouterr().err
    assert said.count("turned on +cpu +pids in its cgroup.subtree_control") == 1 and str(base.parent) in said, said
    assert "the other groups there get these controllers too" in said

    (base.parent / "cgroup.subtree_control").write_text("memory cpu pids\n")  # as the kernel shows it now
    cgroups._bases.cache_clear()  # the next run finds them on: nothing changed, nothing said
    assert cli.main(["autograde", "--root", str(base)]) == 0
    assert "turned on" not in capsys.readouterr().err
