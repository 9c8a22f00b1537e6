"""hydra/launcher=ray without starting Ray: the preset, its typed keys, the launcher it builds.

Sweeps on Ray: tests/test_launchers.py (a local Ray), tests/test_cluster_ray.py (a cluster).
"""

from __future__ import annotations

import pytest
from hydra import compose, initialize_config_dir
from hydra.errors import ConfigCompositionException
from hydra.utils import instantiate

from attnsvm.config import register_configs
from conftest import CONF_DIR


def ray_launcher_config(*overrides: str):
    register_configs()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose(
            config_name="config",
            overrides=["hydra/launcher=ray", *overrides],
            return_hydra_config=True,
        )
    return cfg.hydra.launcher


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
