"""The new config options and sweep files compose and validate (Hydra compose API)."""

from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from attnsvm.composition import register_configs, to_run_config
from attnsvm.config import ConfigError, Head

ROOT = Path(__file__).resolve().parents[1]
register_configs()


def _compose(overrides):
    with initialize_config_dir(str(ROOT / "conf"), version_base="1.3"):
        return to_run_config(compose("config", overrides=overrides))


@pytest.mark.parametrize(
    "overrides,check",
    [
        (["head=relu", "dataset=relu"], lambda c: c.head.kind is Head.relu),
        (["head=lambda", "dataset=orthonormal", "head.lam=0.3"], lambda c: c.head.lam == 0.3),
        (["experiment=regpath"], lambda c: c.experiment == "regpath"),
        (["dataset.attention=sequential", "dataset.causal=true"], lambda c: c.dataset.causal),
        (["parameterization.init=cone"], lambda c: c.parameterization.init.value == "cone"),
    ],
)
def test_new_options_compose(overrides, check):
    assert check(_compose(overrides))


@pytest.mark.parametrize("name", ["multitoken", "regpath", "sequential"])
def test_sweep_files_compose(name):
    with initialize_config_dir(str(ROOT / "conf"), version_base="1.3"):
        overrides = [f"+sweeps={name}"]
        assert compose("config", overrides=overrides, return_hydra_config=True).hydra.sweeper.params
        run = to_run_config(compose("config", overrides=overrides))
    if name == "multitoken":
        assert run.head.kind is Head.relu and run.multitoken.target_accepted == 500


def test_bad_values_name_their_key():
    with pytest.raises(Exception, match="lambd"):
        _compose(["head.kind=lambd"])
    with pytest.raises(ConfigError, match="head.lam"):
        _compose(["head=lambda", "head.lam=-1"])
    with pytest.raises(ConfigError, match="multitoken"):
        _compose(["experiment=multitoken", "multitoken.threshold=1e-9"])
