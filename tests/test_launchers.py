"""One sweep on every launcher -> identical rows (Ray's own launcher on a local Ray included);
the Slurm path end to end through hydra-submitit-launcher's local executor
(hydra/launcher=submitit_local), resume included. Ray on a cluster: tests/test_cluster_ray.py."""

from __future__ import annotations

import importlib.util

import pandas as pd
import pytest

from cli_helpers import SMALL, job_dirs, read_job_json, run_cli, sweep_table

# two jobs: submitit_local starts every job of a sweep at once
SWEEP = ["dataset.d=4", "parameterization=w,kq", *SMALL]
HAS_SUBMITIT = importlib.util.find_spec("hydra_plugins.hydra_submitit_launcher") is not None
HAS_RAY = importlib.util.find_spec("ray") is not None
LAUNCHERS = {
    "basic, batch_size=1": ["hydra/launcher=basic", "batch_size=1"],
    "joblib n_jobs=1": ["hydra/launcher=local", "hydra.launcher.n_jobs=1"],
    "joblib n_jobs=2, batch_size=2": [
        "hydra/launcher=local",
        "hydra.launcher.n_jobs=2",
        "batch_size=2",
    ],
}
if HAS_SUBMITIT:
    LAUNCHERS["submitit_local"] = ["hydra/launcher=submitit_local", "hydra.launcher.timeout_min=10"]
if HAS_RAY:  # address null: the launcher starts a local Ray of its own; one job at a time
    LAUNCHERS["ray, local"] = [
        "hydra/launcher=ray",
        "+hydra.launcher.init.num_cpus=2",
        "hydra.launcher.max_concurrent=1",
    ]


@pytest.fixture(scope="module")
def sweeps(tmp_path_factory):
    """Each launcher's sweep directory, run once for the module."""
    out = {}
    for name, args in LAUNCHERS.items():
        sweep_dir = tmp_path_factory.mktemp(name.split()[0].strip(","))
        res = run_cli(*SWEEP, *args, f"hydra.sweep.dir={sweep_dir}", multirun=True)
        assert res.returncode == 0, f"{name}:\n{res.stdout}"
        sweep_dir.with_name(f"{sweep_dir.name}.out").write_text(res.stdout)
        out[name] = sweep_dir
    return out


@pytest.mark.slow
def test_every_launcher_gives_identical_rows(sweeps):
    tables = {name: sweep_table(d) for name, d in sweeps.items()}
    trajectories = {name: sweep_table(d, "trajectory.parquet") for name, d in sweeps.items()}
    first = next(iter(tables))
    assert len(tables[first]) == 2 * 3
    for name in tables:
        pd.testing.assert_frame_equal(tables[name], tables[first], check_exact=True, obj=name)
        pd.testing.assert_frame_equal(
            trajectories[name], trajectories[first], check_exact=True, obj=name
        )


@pytest.mark.slow
@pytest.mark.skipif(not HAS_SUBMITIT, reason="hydra-submitit-launcher not installed (.[slurm])")
def test_submitit_sweep_resumes_and_records_its_jobs(sweeps):
    sweep_dir = sweeps["submitit_local"]
    assert len(list(sweep_dir.glob(".submitit/*/*_result.pkl"))) == 2  # ran through submitit
    jobs = {p: p.read_bytes() for p in sweep_dir.glob("*/job.json")}
    res = run_cli(
        *SWEEP, *LAUNCHERS["submitit_local"], f"hydra.sweep.dir={sweep_dir}", multirun=True
    )
    assert res.returncode == 0, res.stdout
    assert "2 finished" in res.stdout
    assert {p: p.read_bytes() for p in sweep_dir.glob("*/job.json")} == jobs  # nothing rerun
    logs = "".join(p.read_text() for p in sweep_dir.glob(".submitit/*/*_log.*"))
    assert logs.count("already finished") == 2, logs


@pytest.mark.slow
@pytest.mark.skipif(not HAS_RAY, reason="Ray not installed (.[ray], also in .[dev])")
def test_ray_ran_the_sweep_on_a_local_ray_one_job_at_a_time(sweeps):
    ray_dir = sweeps["ray, local"]
    out = ray_dir.with_name(f"{ray_dir.name}.out").read_text()
    assert "Started a local Ray instance" in out, out
    assert "(execute_job pid=" in out, out  # the jobs ran in Ray workers
    first, second = sorted(
        (read_job_json(d) for d in job_dirs(ray_dir)), key=lambda j: j["started"]
    )
    assert second["started"] >= first["started"] + first["seconds"]  # max_concurrent=1


@pytest.mark.skipif(not HAS_SUBMITIT, reason="hydra-submitit-launcher not installed (.[slurm])")
@pytest.mark.parametrize("timeout_min, delay_s", [(1, 6), (10, 60), (20, 120), (600, 120)])
def test_slurm_preset_signals_a_tenth_of_the_time_limit_before_it(timeout_min, delay_s):
    from hydra import compose, initialize_config_dir

    import hydra_plugins.attnsvm_slurm  # noqa: F401  its resolver, as Hydra's plug-in scan loads it
    from attnsvm.composition import register_configs
    from conftest import CONF_DIR

    register_configs()
    overrides = ["hydra/launcher=slurm", f"hydra.launcher.timeout_min={timeout_min}"]
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose(config_name="config", overrides=overrides, return_hydra_config=True)
    launcher = cfg.hydra.launcher
    assert launcher._target_ == "hydra_plugins.attnsvm_slurm.SlurmLauncher"
    assert launcher.signal_delay_s == delay_s
    assert launcher.max_num_timeout == 0


@pytest.mark.skipif(not HAS_SUBMITIT, reason="hydra-submitit-launcher not installed (.[slurm])")
def test_slurm_asks_for_one_gpu_for_a_cuda_sweep_in_its_plan():
    from hydra import compose, initialize_config_dir
    from hydra.utils import instantiate

    import hydra_plugins.attnsvm_slurm  # noqa: F401  its resolver, as Hydra's plug-in scan loads it
    from attnsvm.composition import register_configs
    from conftest import CONF_DIR

    def plan(*overrides, jobs=(("dataset.d=2",),)):
        register_configs()
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
            cfg = compose(
                config_name="config",
                overrides=["hydra/launcher=slurm", *overrides],
                return_hydra_config=True,
            )
        launcher = instantiate(cfg.hydra.launcher)
        launcher.config = cfg  # what Hydra's setup gives it; nothing is submitted
        return launcher.plan(jobs)

    cuda = plan("device=cuda")
    assert cuda["gpu"] and cuda["executor"]["slurm_gres"] == "gpu:1"
    assert cuda["executor"]["timeout_min"] == 60 and cuda["executor"]["cpus_per_task"] == 1
    cpu = plan()
    assert not cpu["gpu"] and not cpu["executor"].get("slurm_gres")
    assert plan(jobs=[("device=cuda",)])["executor"]["slurm_gres"] == "gpu:1"
    mine = plan("device=cuda", "hydra.launcher.gres=gpu:a100:2")
    assert mine["executor"]["slurm_gres"] == "gpu:a100:2"


@pytest.mark.skipif(not HAS_SUBMITIT, reason="hydra-submitit-launcher not installed (.[slurm])")
def test_slurm_waits_for_no_result_of_a_task_slurm_ended(tmp_path):
    """A task Slurm cancelled, timed out or lost with its node has written no result: the sweep
    records it at once instead of waiting submitit's 15 s per task for a result file; a task
    with a result file, or one that ended by itself, is read as submitit reads it."""
    from types import SimpleNamespace

    from hydra_plugins.attnsvm_slurm import no_result

    pickle = tmp_path / "12_3_result.pkl"

    def task(state):
        return SimpleNamespace(
            state=state, job_id="12_3", paths=SimpleNamespace(result_pickle=pickle)
        )

    for state in ("CANCELLED by 0", "NODE_FAIL", "TIMEOUT", "OUT_OF_MEMORY"):
        assert str(no_result(task(state))) == f"Slurm job 12_3 ended without a result: {state}"
    assert no_result(task("COMPLETED")) is None and no_result(task("FAILED")) is None
    pickle.write_bytes(b"")
    assert no_result(task("CANCELLED by 0")) is None  # written before the cancel: read it
