"""Result files are written for collaborators too: their mode is 0666 less the umask, as for
any file the user writes (a shared sweep directory on a cluster must be readable)."""

from __future__ import annotations

import os
import stat

import pandas as pd
import pytest

from attnsvm.results.store import write_json, write_table
from cli_helpers import SMALL, run_cli


@pytest.fixture
def umask():
    def set_(mask):
        old = os.umask(mask)
        restore.append(old)

    restore = []
    yield set_
    if restore:
        os.umask(restore[0])


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.mark.parametrize("mask", [0o022, 0o077, 0o002])
def test_tables_and_job_files_respect_the_umask(tmp_path, umask, mask):
    umask(mask)
    write_table(pd.DataFrame({"a": [1]}), tmp_path / "runs.parquet")
    write_json({"status": "finished"}, tmp_path / "job.json")
    for name in ("runs.parquet", "job.json"):
        assert _mode(tmp_path / name) == 0o666 & ~mask, name
    assert not list(tmp_path.glob(".*.tmp"))


@pytest.mark.slow
def test_a_run_directory_is_readable_by_others_under_umask_022(tmp_path, umask):
    umask(0o022)  # inherited by the subprocess
    out = tmp_path / "run"
    res = run_cli(*SMALL, f"hydra.run.dir={out}")
    assert res.returncode == 0, res.stdout
    files = [p for p in out.rglob("*") if p.is_file()]
    assert {p.name for p in files} >= {"runs.parquet", "trajectory.parquet", "job.json"}
    assert {p.name: _mode(p) for p in files} == {p.name: 0o644 for p in files}
