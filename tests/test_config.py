"""Every config option composes; bad values fail at composition naming the key and options."""

from __future__ import annotations

import pytest
from hydra import compose, initialize_config_dir
from hydra.errors import ConfigCompositionException, MissingConfigException
from omegaconf.errors import ValidationError

import attnsvm
from attnsvm.composition import register_configs, to_run_config
from attnsvm.config import ConfigError
from attnsvm.config.schema import OptimizerConfig, RunBase
from attnsvm.experiments import entry, names
from conftest import CONF_DIR, REPO

register_configs()
GROUP_OPTIONS = {
    "dataset": [
        "random",
        "relu",
        "orthonormal",
        "paths",
        "file",
        "callable",
        "joint2d",
        "nexttoken",
        "maxmargin",
        "digits",
    ],  # fmt: skip
    "parameterization": ["w", "kq", "p"],
    "optimizer": ["ngd", "gd", "md", "md175", "md2", "md3", "sign", "adam", "spectral", "polyak"]
    + ["signum", "adamw"],
    "solver": ["ipm", "clarabel", "scs"],
    "head": ["linear", "relu", "lambda"],
    "metrics": ["default"],
    "experiment": ["gd", "rankdyn", "icl", "benign", "regpath", "multitoken", "nexttoken", "ocr"],
}


TINY_NPZ = REPO / "tests" / "data" / "tiny.npz"  # 8 instances, n=2, T=3, d=4 (test_docs.py)
NEEDS = {  # options that compose only with a partner
    "head=relu": ["dataset=relu"],
    "dataset=file": [f"dataset.path={TINY_NPZ}", "seeds=3"],
    "dataset=callable": ["dataset.target=userdata_example.make"],
    "dataset=nexttoken": ["experiment=nexttoken"],
    "dataset=maxmargin": ["parameterization=p", "seeds=6"],
}


def _compose(overrides: list[str]):
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return compose(config_name="config", overrides=overrides)


def test_groups_cover_conf_dir():
    assert sorted(GROUP_OPTIONS["experiment"]) == sorted(names())  # ls conf/experiment
    for group, options in GROUP_OPTIONS.items():
        on_disk = sorted(p.stem for p in (CONF_DIR / group).glob("*.yaml"))
        assert on_disk == sorted(options), group


@pytest.mark.parametrize(
    "override", [f"{g}={o}" for g, opts in GROUP_OPTIONS.items() for o in opts]
)
def test_every_option_composes(override):
    partner = NEEDS.get(override, [])  # rules across groups (tests/test_bad_input.py)
    run = to_run_config(_compose([override, *partner]))
    assert isinstance(run, RunBase) and type(run) is entry(run.experiment).job_config
    group, option = override.split("=")
    if group == "experiment":  # conf/experiment/<name>.yaml: its own job config
        assert run.experiment == option
    if group in ("parameterization", "optimizer"):  # md175: md with the published p = 1.75
        assert getattr(run, group).kind.value == option.rstrip("0123456789")


def test_default_is_the_published_setting():
    run = to_run_config(_compose([]))
    assert (run.dataset.n, run.dataset.T, run.dataset.d) == (6, 8, 10)
    assert run.optimizer.lr == 0.1 and run.optimizer.steps == 2000
    assert run.dtype.value == "float64" and run.threads == 1


@pytest.mark.parametrize(
    ("override", "fragment"),
    [
        ("solver.backend=SCSS", "CLARABEL, SCS"),
        ("dataset.attention=selff", "cross, self"),
        ("parameterization.init=zero", "torch, zeros, normal"),
    ],
)
def test_bad_enum_lists_accepted_values(override, fragment):
    with pytest.raises(ConfigCompositionException) as info:
        _compose([override])
    cause = info.value.__cause__
    assert isinstance(cause, ValidationError)
    assert fragment in str(cause) and override.split("=")[0] in str(cause)


def test_unknown_group_option_lists_options():
    with pytest.raises((ConfigCompositionException, MissingConfigException), match="kq"):
        _compose(["parameterization=wk"])


@pytest.mark.parametrize(
    ("override", "key"),
    [
        ("dataset.d=0", "dataset.d"),
        ("dataset.T=1", "dataset.T"),
        ("optimizer.lr=-1", "optimizer.lr"),
        ("optimizer.steps=0", "optimizer.steps"),
        ("metrics.delta=1.5", "metrics.delta"),
        ("solver.tol=0", "solver.tol"),
        ("dataset.query_index=8", "dataset.query_index"),
    ],
)
def test_bad_range_names_key(override, key):
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        to_run_config(_compose([override]))


def test_cuda_without_device_is_a_clear_error():
    import torch

    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present: device=cuda is valid here")
    with pytest.raises(ConfigError, match="device"):
        to_run_config(_compose(["device=cuda"]))


def test_validating_a_config_loads_neither_torch_nor_the_c_kernel():
    """config.py is the schema: composing the default config imports no engine."""
    import subprocess
    import sys

    code = (
        "import sys; from attnsvm.composition import RunConfig; RunConfig(); "
        "print(sorted(m for m in ('torch', 'attnsvm.train.fused', 'cvxpy') if m in sys.modules))"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert res.stdout.strip() == "[]", res.stdout + res.stderr


def test_registering_again_stores_nothing_unless_hydra_lost_a_node(monkeypatch):
    """An in-process compose registers the schemas; the same schemas are not stored again (a
    third of a compose), but a node a test or a user cleared or replaced is stored afresh."""
    from hydra.core.config_store import ConfigStore

    cs = ConfigStore.instance()
    register_configs()
    stores = []
    real_store = cs.store
    monkeypatch.setattr(cs, "store", lambda *a, **k: stores.append(k) or real_store(*a, **k))
    register_configs()
    assert stores == []
    cs.repo.pop("base_optimizer.yaml")
    register_configs()
    assert {"name": "base_optimizer", "node": OptimizerConfig} in stores
    assert "base_optimizer.yaml" in cs.repo
    assert attnsvm.compose(["optimizer.lr=0.5"]).optimizer.lr == 0.5
