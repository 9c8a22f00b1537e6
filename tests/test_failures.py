"""A job that raises records status and traceback in its own job.json; the sweep goes on,
reports it at the end, and a re-run recomputes only that job."""

from __future__ import annotations

import os

import pytest

from cli_helpers import REPO, SMALL, job_dirs, read_job_json, run_cli, sweep_table

# Loaded by every Python process of the sweep (joblib's workers too) through PYTHONPATH:
# makes run_job raise for one value of dataset.d.
HOOK = """
import os
if os.environ.get("ATTNSVM_TEST_FAIL_D"):
    import attnsvm.experiments.gd.job as _pipeline
    _run_job = _pipeline.run_job

    def run_job(cfg, progress=None):
        if cfg.dataset.d == int(os.environ["ATTNSVM_TEST_FAIL_D"]):
            raise RuntimeError(f"injected failure at dataset.d={cfg.dataset.d}")
        return _run_job(cfg, progress)

    _pipeline.run_job = run_job
"""


@pytest.fixture
def failing(tmp_path):
    """Environment in which every job with dataset.d=3 raises."""
    (tmp_path / "hook").mkdir()
    (tmp_path / "hook" / "sitecustomize.py").write_text(HOOK)
    path = os.pathsep.join([str(tmp_path / "hook"), str(REPO)])
    return {"PYTHONPATH": path, "ATTNSVM_TEST_FAIL_D": "3"}


@pytest.mark.slow
def test_failed_job_is_recorded_the_sweep_goes_on_and_resume_reruns_it(tmp_path, failing):
    sweep = ["dataset.d=2,3,4", *SMALL, "hydra.launcher.n_jobs=2", f"hydra.sweep.dir={tmp_path}/s"]
    res = run_cli(*sweep, multirun=True, **failing)
    assert res.returncode == 1, res.stdout  # failed jobs: exit 1 after the summary line
    assert res.stdout.rstrip().endswith("attnsvm sweep: 2 run, 0 skipped, 1 failed, 0 not started")
    jobs = {
        read_job_json(d)["config"]["dataset"]["d"]: read_job_json(d) for d in job_dirs(tmp_path)
    }
    assert {d: j["status"] for d, j in jobs.items()} == {2: "finished", 3: "failed", 4: "finished"}
    assert "RuntimeError: injected failure at dataset.d=3" in jobs[3]["traceback"]
    assert "injected failure" in jobs[3]["error"] and jobs[3]["config_hash"]
    assert "1 failed, 2 finished" in res.stdout and "injected failure" in res.stdout
    # seed-level statuses: at d=2 some seeds have no W separating alpha = opt; rows say why
    rows = sweep_table(tmp_path)
    infeasible = rows[rows.status == "infeasible"]
    assert len(infeasible) and infeasible.reason.str.contains("infeasible").all()

    again = run_cli(*sweep, multirun=True)  # the failure is gone: only d=3 is computed
    assert again.returncode == 0, again.stdout
    assert again.stdout.count("already finished") == 2, again.stdout
    assert "3 finished" in again.stdout
    assert sorted(sweep_table(tmp_path).d.unique()) == [2, 3, 4]


@pytest.mark.slow
def test_single_run_that_raises_exits_nonzero_with_its_traceback_recorded(tmp_path, failing):
    res = run_cli("dataset.d=3", *SMALL, f"hydra.run.dir={tmp_path}/run", **failing)
    assert res.returncode != 0
    assert "injected failure" in res.stdout
    job = read_job_json(tmp_path / "run")
    assert job["status"] == "failed" and "injected failure" in job["traceback"]
    assert not (tmp_path / "run" / "runs.parquet").exists()


def test_a_lost_job_is_recorded_on_the_node_its_running_record_names(tmp_path):
    """A job whose node died (Ray's lost task, Slurm's failed node): the failed record names the
    node the job's own ``running`` record named; without one, the launcher's (Ray: null)."""
    from hydra import compose, initialize_config_dir

    from attnsvm.composition.compose import register_configs, to_run_config
    from attnsvm.composition.identity import config_hash
    from attnsvm.results.job_dir import record_lost_job
    from attnsvm.results.store import JOB, job_record, write_json
    from conftest import CONF_DIR

    register_configs()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose("config", overrides=SMALL)
    run = to_run_config(cfg)
    chash = config_hash(run)
    ran, never = tmp_path / "0", tmp_path / "1"
    ran.mkdir()
    running = {**job_record(run, chash), "status": "running", "node": "h/n1"}
    write_json(running, ran / JOB)
    for out in (ran, never):
        record_lost_job(run, chash, out, tmp_path, "lost", ray_error="NodeDiedError", node=None)
    assert read_job_json(ran)["node"] == "h/n1" and read_job_json(ran)["status"] == "failed"
    assert read_job_json(never)["node"] is None and read_job_json(never)["error"] == "lost"
