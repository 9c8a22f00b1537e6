"""hydra/launcher=ray without starting Ray: the preset, its typed keys, the launcher it builds.

Sweeps on Ray: tests/test_launchers.py (a local Ray), tests/test_cluster_ray.py (a cluster).
"""

from __future__ import annotations

import pytest
from hydra import compose, initialize_config_dir
from hydra.errors import ConfigCompositionException
from hydra.utils import instantiate

from attnsvm.composition import register_configs
from conftest import CONF_DIR


def ray_config(*overrides: str):
    """The composed config (hydra's part included) with the Ray launcher."""
    register_configs()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return compose(
            config_name="config",
            overrides=["hydra/launcher=ray", *overrides],
            return_hydra_config=True,
        )


def ray_launcher_config(*overrides: str):
    return ray_config(*overrides).hydra.launcher


def test_the_preset_is_attnsvms_launcher_on_a_local_ray_one_cpu_per_job():
    launcher = ray_launcher_config()
    assert launcher._target_ == "hydra_plugins.attnsvm_ray.RayLauncher"
    assert launcher.address is None  # $RAY_ADDRESS, else a new local Ray
    assert (launcher.num_cpus, launcher.max_concurrent, launcher.max_retries) == (1, None, 0)


def test_the_keys_reach_the_launcher():
    cfg = ray_launcher_config(
        "hydra.launcher.address=ray://head:10001",
        "hydra.launcher.num_cpus=2",
        "hydra.launcher.max_concurrent=8",
        "+hydra.launcher.init.runtime_env={env_vars:{OMP_NUM_THREADS:'1'}}",
    )
    launcher = instantiate(cfg)
    assert (launcher.address, launcher.num_cpus, launcher.max_concurrent) == (
        "ray://head:10001",
        2,
        8,
    )
    assert launcher.init == {"runtime_env": {"env_vars": {"OMP_NUM_THREADS": "1"}}}


@pytest.mark.parametrize(
    "override",
    [
        "hydra.launcher.num_cpus=many",
        "hydra.launcher.max_retries=1.5",
        "hydra.launcher.adress=auto",
    ],
)
def test_a_bad_key_or_value_fails_when_the_config_is_composed(override):
    with pytest.raises(ConfigCompositionException, match=override.split("=")[0].split(".")[-1]):
        ray_launcher_config(override)


def test_max_concurrent_below_one_is_refused_naming_the_key():
    with pytest.raises(Exception, match="max_concurrent=0: accepted values are integers >= 1"):
        instantiate(ray_launcher_config("hydra.launcher.max_concurrent=0"))


def test_every_job_is_dispatched_with_its_sweep_number():
    launcher = instantiate(ray_launcher_config())
    jobs = launcher.jobs_to_dispatch([("dataset.d=2",), ("dataset.d=4",)], initial_job_idx=3)
    assert jobs == [(3, ["dataset.d=2"]), (4, ["dataset.d=4"])]


def planned_ray_options(*overrides: str, jobs=(("dataset.d=2",), ("dataset.d=4", "device=cpu"))):
    cfg = ray_config(*overrides)
    launcher = instantiate(cfg.hydra.launcher)
    launcher.config = cfg  # what Hydra's setup gives it; Ray is never started
    return [p["options"] for p in launcher.plan(jobs)]


def test_a_cuda_job_asks_ray_for_one_gpu_and_a_cpu_job_for_none():
    first, second = planned_ray_options("device=cuda")  # the second job overrides device=cpu
    assert first == {"num_cpus": 1, "num_gpus": 1, "max_retries": 0}
    assert second["num_gpus"] == 0
    assert [o["num_gpus"] for o in planned_ray_options()] == [0, 0]
    cuda_in_grid = planned_ray_options(jobs=[("device=cuda",), ("device=cpu",)])
    assert [o["num_gpus"] for o in cuda_in_grid] == [1, 0]
    set_by_hand = planned_ray_options("device=cuda", "hydra.launcher.num_gpus=0.5")
    assert [o["num_gpus"] for o in set_by_hand] == [0.5, 0]


def ray_runs_on_this_machine() -> bool:
    """Whether any user's Ray cluster runs here (a ``gcs_server`` process): ``address=auto``
    joins any cluster it finds on the machine, whoever started it and whatever its temp dir."""
    from pathlib import Path

    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if (proc / "comm").read_text().strip() == "gcs_server":
                return True
        except OSError:  # ended while we looked
            continue
    return False


def test_address_auto_without_a_cluster_is_one_line_and_leaves_nothing(tmp_path):
    """The README's Ray line on a machine with no Ray running: one attnsvm: line saying what to
    do, a non-zero exit, and no sweep directory (the sweeper's multirun.yaml removed). The
    suite's own clusters are down while it runs (tests/conftest.py's groups); another one on
    the machine, another user's too, would be joined."""
    import os
    import subprocess

    from cli_helpers import attnsvm_cmd, cli_env

    if ray_runs_on_this_machine():
        pytest.skip("a Ray cluster runs on this machine: address=auto would join it")
    env = cli_env(RAY_ADDRESS="")
    env.pop("RAY_ADDRESS")
    overrides = ["+sweeps=rank", "hydra/launcher=ray", "hydra.launcher.address=auto"]
    cmd = attnsvm_cmd(*overrides, multirun=True)
    res = subprocess.run(
        cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert res.returncode != 0
    lines = (res.stdout + res.stderr).strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("attnsvm: hydra.launcher.address=auto"), lines
    assert "ray start --head" in lines[0] and "drop hydra.launcher.address" in lines[0]
    assert os.listdir(tmp_path) == []
