"""Every sweep definition in sweeps/ composes, job by job, into a valid RunConfig at the
published settings (docs/experiments.md)."""

from __future__ import annotations

import functools
import math
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.override_parser.overrides_parser import OverridesParser

import attnsvm
from attnsvm.composition import Generator, RunConfig
from attnsvm.composition.identity import config_hash
from attnsvm.config import Init, Parameterization
from attnsvm.run import register_configs

REPO = Path(__file__).resolve().parents[1]
CONF_DIR = str(REPO / "conf")
SWEEPS = sorted(p.stem for p in (REPO / "sweeps").glob("*.yaml"))
PUBLISHED_SWEEPS = ["rank", "local", "overparam", "paths"]

register_configs()


@functools.cache
def sweep_jobs(name: str) -> tuple[dict, list[RunConfig]]:
    """The sweep's hydra settings and the RunConfig of jobs that together take every value of
    every sweep axis (each value once, the other axes at their first value)."""
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        hydra = compose("config", [f"+sweeps={name}"], return_hydra_config=True).hydra
        params = dict(hydra.sweeper.params or {})
        parser = OverridesParser.create()
        axes = []
        for key, value in params.items():
            override = parser.parse_override(f"{key}={value}")
            values = override.sweep_string_iterator() if override.is_sweep_override() else [value]
            axes.append([f"{key}={v}" for v in values])
        first = [axis[0] for axis in axes]
        combos = {tuple(first)} | {
            tuple(first[:k] + [v] + first[k + 1 :]) for k, axis in enumerate(axes) for v in axis
        }
    jobs = [attnsvm.compose([f"+sweeps={name}", *c]) for c in sorted(combos)]
    size = math.prod(len(axis) for axis in axes)
    return {"dir": hydra.sweep.dir, "params": params, "size": size}, jobs


def test_every_experiment_has_a_sweep():
    assert set(PUBLISHED_SWEEPS) <= set(SWEEPS)


@pytest.mark.parametrize("name", SWEEPS)
def test_sweep_composes_every_value_of_every_axis(name):
    hydra, jobs = sweep_jobs(name)
    assert hydra["params"], "a sweep declares its grid in hydra.sweeper.params"
    hashes = {config_hash(j) for j in jobs}
    assert len(hashes) == len(jobs), "every value of every axis is a distinct config point"


@pytest.mark.parametrize("name", PUBLISHED_SWEEPS)
def test_paper_sweep_resumes_in_a_stable_dir(name):
    hydra, _ = sweep_jobs(name)
    assert hydra["dir"] == f"outputs/sweeps/{name}"  # no time stamp: a re-run resumes


def test_rank_sweep_is_both_published_slices():
    hydra, jobs = sweep_jobs("rank")
    shapes = {(j.dataset.n, j.dataset.T) for j in jobs}
    assert shapes == {(5, 5), (10, 5), (15, 5), (5, 10), (5, 15)}
    assert {j.dataset.d for j in jobs} == {1, 2, 3, 4, 5, 10, 15, 20}
    assert hydra["size"] == 5 * 8
    assert all(not j.train and j.seeds == 100 for j in jobs)


def test_local_sweep_is_published_setting():
    _, jobs = sweep_jobs("local")
    assert {j.parameterization.kind for j in jobs} == {Parameterization.w, Parameterization.kq}
    for j in jobs:
        assert (j.dataset.n, j.dataset.T, j.dataset.d) == (6, 8, 10)
        assert j.seeds == 100 and j.train
        assert j.optimizer.steps == 2000 and j.optimizer.lr == 0.1
        assert j.optimizer.checkpoint_every <= 10


def test_overparam_sweep_covers_d_2_to_30():
    _, jobs = sweep_jobs("overparam")
    assert sorted(j.dataset.d for j in jobs) == list(range(2, 31))
    assert all(j.seeds >= 100 and (j.dataset.n, j.dataset.T) == (6, 8) for j in jobs)
    assert all(j.parameterization.kind == Parameterization.w for j in jobs)


def test_paths_sweep_is_published_setting():
    hydra, jobs = sweep_jobs("paths")
    assert {j.dataset.T for j in jobs} == {3, 5} and hydra["size"] == 4
    assert {j.parameterization.kind for j in jobs} == {Parameterization.w, Parameterization.kq}
    for j in jobs:
        assert j.dataset.generator == Generator.paths
        assert (j.dataset.n, j.dataset.d) == (2, 2)
        assert j.parameterization.init == Init.zeros
        assert j.optimizer.lr == 0.1 and j.optimizer.steps == 2000
        assert j.optimizer.checkpoint_every == 1


@pytest.mark.parametrize("launcher", ["basic", "submitit_slurm", "joblib", "ray"])
def test_sweeps_scale_out_by_swapping_the_launcher(launcher):
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        for name in SWEEPS:
            cfg = compose(
                "config",
                [f"+sweeps={name}", f"hydra/launcher={launcher}"],
                return_hydra_config=True,
            )
            assert cfg.hydra.runtime.choices["hydra/launcher"] == launcher
