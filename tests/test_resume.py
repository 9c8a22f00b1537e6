"""Resume: a sweep killed (SIGKILL) at random instants and re-run ends with exactly the tables
of an uninterrupted run; finished jobs are found by config hash, and a dry run tells what a
re-run would do without running it."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import time

import pandas as pd
import pytest

from cli_helpers import REPO, SMALL, attnsvm_cmd, cli_env, job_dirs, run_cli, sweep_table

# eight jobs, each long enough (1500 GD steps) that kills land inside jobs and their writes
SWEEP = [
    "dataset.d=2,3,4,5,6,7,8,9",
    "seeds=3",
    "dataset.n=4",
    "optimizer.steps=1500",
    "optimizer.checkpoint_every=100",
    "hydra.launcher.n_jobs=2",
]
KILLS = 3


def _writes_so_far(sweep_dir) -> int:
    """job.json writes made so far, read from the files' states (running = 1, finished = 2),
    so no write is missed however fast the jobs are."""
    states = []
    for p in sweep_dir.rglob("job.json"):
        try:
            states.append(json.loads(p.read_text())["status"])
        except (OSError, ValueError):  # replaced between listing and reading
            continue
    return sum(1 + (st == "finished") for st in states)


def _kill_at_random(sweep_dir, rng: random.Random) -> None:
    """Start the sweep in its own process group and SIGKILL the whole group at a random point
    of its progress: after a random number of job.json writes (each job writes `running`,
    then `finished`), plus a random fraction of a second."""
    unfinished = 8 - sum(
        json.loads(p.read_text())["status"] == "finished" for p in sweep_dir.rglob("job.json")
    )
    writes = _writes_so_far(sweep_dir) + rng.randint(1, max(1, 2 * unfinished - 1))
    proc = subprocess.Popen(
        attnsvm_cmd(*SWEEP, f"hydra.sweep.dir={sweep_dir}", multirun=True),
        cwd=REPO,
        env=cli_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 240
    while _writes_so_far(sweep_dir) < writes and proc.poll() is None:
        if time.monotonic() > deadline:
            break
        time.sleep(0.005)
    time.sleep(rng.uniform(0, 0.05))
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:  # the sweep had already finished
        pass
    proc.wait()
    for _ in range(100):  # joblib's workers belong to the group too: wait until all are gone
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    pytest.fail("worker processes of the killed sweep survived SIGKILL of its group")


def _assert_intact(sweep_dir) -> None:
    """Whatever a kill left: every table readable, every job.json valid JSON."""
    for d in job_dirs(sweep_dir):
        job = json.loads((d / "job.json").read_text())
        assert job["status"] in ("running", "finished", "failed")
        if job["status"] == "finished":
            assert len(pd.read_parquet(d / "runs.parquet")) == 3  # seeds=3
            pd.read_parquet(d / "trajectory.parquet")
    for table in sweep_dir.rglob("*.parquet"):
        pd.read_parquet(table)


@pytest.mark.slow
def test_sigkill_and_resume_gives_the_uninterrupted_tables(tmp_path):
    ref_dir, dir_ = tmp_path / "reference", tmp_path / "killed"
    ref = run_cli(*SWEEP, f"hydra.sweep.dir={ref_dir}", multirun=True)
    assert ref.returncode == 0, ref.stdout

    rng, unfinished = random.Random(6), []
    for _ in range(KILLS):
        _kill_at_random(dir_, rng)
        _assert_intact(dir_)
        statuses = [json.loads((d / "job.json").read_text())["status"] for d in job_dirs(dir_)]
        unfinished.append(8 - statuses.count("finished"))
    assert max(unfinished) > 0, "every kill came after the sweep had finished"

    resumed = run_cli(*SWEEP, f"hydra.sweep.dir={dir_}", multirun=True)
    assert resumed.returncode == 0, resumed.stdout
    _assert_intact(dir_)
    assert not [p for d in job_dirs(dir_) for p in d.glob(".*.tmp")], "temp files left"
    assert [json.loads((d / "job.json").read_text())["status"] for d in job_dirs(dir_)] == [
        "finished"
    ] * 8
    pd.testing.assert_frame_equal(sweep_table(dir_), sweep_table(ref_dir), check_exact=True)
    pd.testing.assert_frame_equal(
        sweep_table(dir_, "trajectory.parquet"),
        sweep_table(ref_dir, "trajectory.parquet"),
        check_exact=True,
    )


@pytest.mark.slow
def test_finished_jobs_are_found_by_hash_when_job_numbers_move(tmp_path):
    sweep = f"hydra.sweep.dir={tmp_path}"
    first = run_cli("dataset.d=2,4", *SMALL, sweep, multirun=True)
    assert first.returncode == 0, first.stdout
    before = {d.name: (d / "runs.parquet").read_bytes() for d in job_dirs(tmp_path)}

    plan = run_cli("dataset.d=2,3,4", *SMALL, sweep, "hydra/launcher=dryrun", multirun=True)
    assert plan.returncode == 0, plan.stdout
    assert "total: 1 run, 0 rerun, 2 skip, 0 invalid" in plan.stdout, plan.stdout
    assert not (tmp_path / "2").exists()  # the dry run ran nothing

    # d=3 is now job 1, whose directory holds d=4: it must go elsewhere, d=4 is skipped
    second = run_cli("dataset.d=2,3,4", *SMALL, sweep, multirun=True)
    assert second.returncode == 0, second.stdout
    assert second.stdout.count("already finished") == 2, second.stdout
    for name, data in before.items():
        assert (tmp_path / name / "runs.parquet").read_bytes() == data
    table = sweep_table(tmp_path)
    assert sorted(table.groupby("config_hash").d.first()) == [2, 3, 4]
    assert not (tmp_path / "2").exists()  # the skipped job left no empty directory


@pytest.mark.slow
def test_dry_run_lists_invalid_points_and_leaves_no_directory(tmp_path):
    sweep_dir = tmp_path / "new" / "sweep"
    plan = run_cli(
        "dataset.T=8,1",
        *SMALL,
        f"hydra.sweep.dir={sweep_dir}",
        "hydra/launcher=dryrun",
        multirun=True,
    )
    assert plan.returncode == 1
    assert "total: 1 run, 0 rerun, 0 skip, 1 invalid" in plan.stdout, plan.stdout
    assert "dataset.T=1 is invalid: accepted values are integers >= 2" in plan.stdout
    assert not (tmp_path / "new").exists()
