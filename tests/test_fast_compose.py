"""Planning in milliseconds (issue #31) without changing what is planned: the sweep composer's
configs are Hydra's ``load_sweep_config`` ones, the fast conversion gives the full merge's
RunConfig, the sweeper's check raises Hydra's errors, and the result files' records are the
files' own. Counted, never timed (timings: python -m attnsvm.bench, its sweep-overhead row)."""

from __future__ import annotations

import itertools

import pandas as pd
import pytest
from hydra import initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.errors import ConfigCompositionException
from hydra.types import RunMode
from omegaconf import OmegaConf, open_dict

import hydra_plugins.attnsvm_local  # noqa: F401  (its launcher, sweeper and resolver)
from attnsvm.composition import compose as conversion
from attnsvm.composition.compose import register_configs, run_config_from_plain
from attnsvm.composition.identity import config_hash, plain
from attnsvm.results.integrity import record_files
from attnsvm.results.store import write_table
from conftest import CONF_DIR
from hydra_plugins.attnsvm_local.compose import SweepComposer

JOBS = [
    ["dataset.d=3", "parameterization=kq", "seeds=2"],
    ["dataset.d=5", "parameterization=w", "optimizer.lr=1", "seeds=2"],
    ["head=relu", "dataset=relu", "dataset.d=4"],
    ["dataset.d=7", "dataset.d=8"],  # one key twice: composed by Hydra
    ["engine=torch", "optimizer.steps=${seeds}"],  # an interpolation
    ["hydra.job.name=other", "seeds=3", "metrics.delta=0.5"],
    ["solver.norms=[fro]", "dataset.generator=random"],
]


@pytest.fixture(scope="module")
def hydra_sweep(tmp_path_factory):
    """(config loader, master config) of a multirun, as the local launcher gets them."""
    register_configs()
    sweep_dir = tmp_path_factory.mktemp("sweep")
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        loader = GlobalHydra.instance().config_loader()
        master = loader.load_configuration(
            "config", [f"hydra.sweep.dir={sweep_dir}"], run_mode=RunMode.MULTIRUN
        )
        yield loader, master, sweep_dir


def _hydra(loader, master, overrides, num):
    cfg = loader.load_sweep_config(master, overrides)
    with open_dict(cfg):
        cfg.hydra.job.id = f"{cfg.hydra.job.name}_{num}"
        cfg.hydra.job.num = num
    return cfg


@pytest.mark.parametrize("overrides", JOBS)
def test_a_composed_job_is_hydras(hydra_sweep, overrides):
    loader, master, sweep_dir = hydra_sweep
    composer = SweepComposer(loader, master)
    want = _hydra(loader, master, overrides, 7)
    got = composer.compose(overrides, 7)
    assert OmegaConf.to_yaml(got) == OmegaConf.to_yaml(want)
    for key in ("hydra", "dataset", "optimizer"):  # the copy's node types and flags are Hydra's
        assert OmegaConf.get_type(got, key) is OmegaConf.get_type(want, key)
        assert OmegaConf.is_struct(got[key]) == OmegaConf.is_struct(want[key])
    assert OmegaConf.is_struct(got) == OmegaConf.is_struct(want)
    task = OmegaConf.to_container(
        OmegaConf.masked_copy(want, [k for k in want if k != "hydra"]), resolve=True
    )
    plain_got, out = composer.plan_inputs(overrides, 7, sweep_dir)
    assert out == sweep_dir / "7"
    a, b = run_config_from_plain(plain_got), run_config_from_plain(task)
    assert plain(a) == plain(b) and config_hash(a) == config_hash(b)


def test_a_grid_is_composed_once_per_set_of_groups(hydra_sweep):
    loader, master, sweep_dir = hydra_sweep
    composer = SweepComposer(loader, master)
    grid = [
        [f"dataset.d={d}", f"parameterization={p}", "seeds=2", "optimizer.steps=200"]
        for d, p in itertools.product(range(2, 22), ("w", "kq"))
    ]
    for num, overrides in enumerate(grid):
        composer.check(overrides)
        composer.plan_inputs(overrides, num, sweep_dir)
    assert composer.compositions == 2  # parameterization=w and =kq; nothing per job


@pytest.mark.parametrize(
    "overrides", [["dataset.d=x"], ["dataset.nope=1"], ["parameterization=nope"], ["seeds=[1]"]]
)
def test_the_check_raises_hydras_error(hydra_sweep, overrides):
    loader, master, _ = hydra_sweep
    with pytest.raises(ConfigCompositionException) as want:
        loader.load_sweep_config(master, overrides)
    with pytest.raises(ConfigCompositionException) as got:
        SweepComposer(loader, master).check(overrides)
    assert str(got.value) == str(want.value)


def test_the_fast_conversion_is_the_full_merge(hydra_sweep):
    loader, master, _ = hydra_sweep
    composer = SweepComposer(loader, master)
    before = dict(conversion.STATS)
    grids = itertools.product([2, 5], ["w", "kq"], [200, 300], ["1", "0.5"], [4, 6])
    for d, p, steps, lr, n in grids:
        overrides = [f"dataset.d={d}", f"parameterization={p}", f"optimizer.steps={steps}"]
        overrides += [f"optimizer.lr={lr}", f"dataset.n={n}"]
        cfg = composer.compose(overrides, 0)
        task = OmegaConf.to_container(
            OmegaConf.masked_copy(cfg, [k for k in cfg if k != "hydra"]), resolve=True
        )
        fast = run_config_from_plain(task)
        full = conversion.resolve(conversion._full(dict(task)))
        assert fast == full and plain(fast) == plain(full)
        assert config_hash(fast) == config_hash(full)
    assert conversion.STATS["fast"] - before["fast"] >= 30  # most took the leaf route


def test_a_tables_record_is_the_written_files_own(tmp_path):
    df = pd.DataFrame({"seed": range(5), "x": [0.1 * i for i in range(5)], "s": list("abcde")})
    record = write_table(df, tmp_path / "runs.parquet")
    assert record == record_files(tmp_path, ["runs.parquet"])["runs.parquet"]
    df.to_parquet(tmp_path / "direct.parquet", index=False)  # as it was written before
    assert (tmp_path / "direct.parquet").read_bytes() == (tmp_path / "runs.parquet").read_bytes()
