"""The pieces resume stands on: atomic writes, the sweep's index of finished hashes, and the
clean-up of temporary files that a killed writer leaves."""

from __future__ import annotations

import pandas as pd
import pytest

from attnsvm.results.store import (
    JOB,
    RUNS,
    TRAJECTORY,
    _atomic,
    find_finished,
    mark_finished,
    remove_stale_temps,
    write_json,
    write_table,
)


def _finished_job(job_dir, chash: str) -> None:
    job_dir.mkdir(parents=True)
    write_table(pd.DataFrame({"seed": [0]}), job_dir / RUNS)
    write_table(pd.DataFrame({"seed": [0], "step": [0]}), job_dir / TRAJECTORY)
    write_json({"config_hash": chash, "status": "finished"}, job_dir / JOB)


def test_a_writer_that_dies_midway_leaves_the_old_file(tmp_path, monkeypatch):
    write_json({"status": "running"}, tmp_path / JOB)
    written = []

    def interrupted(tmp, path):  # the new file written in full, then Ctrl-C before the rename
        written.append(open(tmp).read())
        raise KeyboardInterrupt

    monkeypatch.setattr("attnsvm.results.store.os.replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        _atomic(tmp_path / JOB, b'{"status": "finished"}')
    assert written == ['{"status": "finished"}']
    assert (tmp_path / JOB).read_text().count("running") == 1
    assert not list(tmp_path.glob(".*.tmp"))


def test_stale_temp_files_are_removed(tmp_path):
    (tmp_path / ".runs.parquet.abc123.tmp").write_bytes(b"PAR1 half")
    (tmp_path / "runs.parquet.keep").write_bytes(b"")
    removed = remove_stale_temps(tmp_path)
    assert [p.name for p in removed] == [".runs.parquet.abc123.tmp"]
    assert [p.name for p in tmp_path.iterdir()] == ["runs.parquet.keep"]


def test_finished_results_are_found_by_hash_in_any_job_dir(tmp_path):
    _finished_job(tmp_path / "1", "aaaa")
    mark_finished(tmp_path, "aaaa", tmp_path / "1")
    assert find_finished("aaaa", tmp_path / "1", tmp_path) == tmp_path / "1"
    assert find_finished("aaaa", tmp_path / "5", tmp_path) == tmp_path / "1"
    assert find_finished("aaaa", tmp_path / "5") is None  # no sweep dir: own directory only
    assert find_finished("bbbb", tmp_path / "1", tmp_path) is None


def test_a_marker_is_checked_not_trusted(tmp_path):
    _finished_job(tmp_path / "1", "aaaa")
    mark_finished(tmp_path, "aaaa", tmp_path / "1")
    write_json({"config_hash": "aaaa", "status": "running"}, tmp_path / "1" / JOB)
    assert find_finished("aaaa", tmp_path / "5", tmp_path) is None
    (tmp_path / "1" / JOB).unlink()
    assert find_finished("aaaa", tmp_path / "5", tmp_path) is None


def test_keys_added_later_leave_earlier_hashes_unchanged():
    """dataset.path/sha256/target/kwargs at their defaults stay out of the hash: these are the
    hashes the code before them gave (sweeps written then are still found on resume)."""
    from attnsvm.composition import RunConfig
    from attnsvm.composition.identity import config_hash
    from attnsvm.config import ParameterizationConfig

    assert config_hash(RunConfig(engine="torch")) == "17345ad0b5095551"  # any build or none
    kq = RunConfig(engine="torch", parameterization=ParameterizationConfig(kind="kq"))
    assert config_hash(kq) == "f875d56a5c093790"
