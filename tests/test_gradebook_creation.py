"""A gradebook the grader creates is stamped with nbgrader's schema version, and nbgrader asks alembic for it once.

nbgrader writes the version of its gradebook schema into every new gradebook (the ``alembic_version`` table,
which ``nbgrader db upgrade`` reads later); it learns it by running ``alembic heads``, a subprocess of about
2 s of CPU. The grader lets nbgrader ask once per process: the stamp must still be exactly what alembic says.
"""
from __future__ import annotations

import sqlite3
import subprocess
from pathlib import Path

import nbgrader.api

from grader.authoring.config import nbgrader_api, write_config


def schema_stamp(db: Path) -> list[str]:
    with sqlite3.connect(db) as connection:
        return [row[0] for row in connection.execute("SELECT version_num FROM alembic_version")]


def alembic_heads() -> str:
    """What ``alembic heads`` says for nbgrader's migration scripts, asked here in a separate process."""
    from nbgrader.dbutil import _temp_alembic_ini

    with _temp_alembic_ini("sqlite:////tmp/unused.db") as ini:
        out = subprocess.run(["alembic", "-c", ini, "heads"], capture_output=True, text=True, check=True).stdout
    return out.split()[0]


def test_new_gradebooks_carry_alembics_version_and_alembic_runs_once_per_process(tmp_path, monkeypatch):
    roots = [tmp_path / name for name in ("first", "second", "third")]
    for root in roots:
        root.mkdir()
        write_config(root)
    nbgrader_api(roots[0])  # from here on nbgrader's answer is kept
    nbgrader.api.get_alembic_version.cache_clear()  # as if this were the process's first gradebook
    runs = []
    real = subprocess.check_output

    def counted(args, *rest, **options):
        if args[0] == "alembic":
            runs.append(args)
        return real(args, *rest, **options)

    monkeypatch.setattr(nbgrader.api.sp, "check_output", counted)  # the subprocess module itself

    for root in roots:
        nbgrader_api(root).gradebook.close()

    assert len(runs) == 1
    monkeypatch.undo()
    assert [schema_stamp(root / "gradebook.db") for root in roots] == [[alembic_heads()]] * 3
