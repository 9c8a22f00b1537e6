"""An experiment reads only what it declares (attnsvm/experiments/__init__.py: reads): a key it
does not read, set away from its default, is refused at composition naming what it reads
instead, and nothing is written (a single run, a sweep, the Python API). Every shipped sweep
file composes under the rule: tests/test_sweeps.py composes every value of every axis."""

from __future__ import annotations

import dataclasses

import pytest

import attnsvm
from attnsvm.config import ConfigError, OptimizerConfig
from attnsvm.config.checks import flatten, plain
from attnsvm.experiments import builtin_names, entry, group_of, reads_key, run_config_class
from cli_helpers import job_dirs, run_cli

NT = ["experiment=nexttoken", "dataset=nexttoken"]
REFUSED = {  # overrides -> what the message says
    "rankdyn": (
        ["experiment=rankdyn", "dataset.n=10", "optimizer.lr=0.5", "parameterization=kq"],
        "experiment=rankdyn reads rankdyn.n, not dataset.n; rankdyn.parameterization, not "
        "parameterization.kind; rankdyn.lr, not optimizer.lr",
    ),
    "icl": (
        ["experiment=icl", "optimizer.lr=0.5"],
        "experiment=icl reads icl.lr, not optimizer.lr",
    ),
    "icl_T": (["experiment=icl", "dataset.T=5"], "experiment=icl reads icl.N, not dataset.T"),
    "benign": (
        ["experiment=benign", "optimizer.lr=0.5"],
        "experiment=benign reads benign.lr, not optimizer.lr",
    ),
    "regpath": (
        ["experiment=regpath", "optimizer.lr=0.5"],
        "experiment=regpath reads regpath.lr, not optimizer.lr",
    ),
    "multitoken": (
        ["experiment=multitoken", "metrics.delta=0.01"],
        "experiment=multitoken does not read metrics.delta",
    ),
    "nexttoken": ([*NT, "head=lambda"], "experiment=nexttoken does not read head.kind"),
    "nexttoken_dtype": ([*NT, "dtype=float32"], "experiment=nexttoken does not read dtype"),
    "gd": (["icl.N=5"], "experiment=gd does not read icl.N (read by experiment=icl)"),
    "icl_train": (["experiment=icl", "train=false"], "experiment=icl does not read train"),
}
ACCEPTED = {  # its own keys, the core keys it declares, the common run keys, an unread default
    "rankdyn": ["experiment=rankdyn", "rankdyn.n=10", "solver.tol=1e-9", "dataset.n=6"],
    "icl": ["experiment=icl", "icl.lr=0.5", "seeds=2", "threads=2", "batch_size=5"],
    "benign": ["experiment=benign", "benign.lr=0.5", "device=cpu", "dtype=float32"],
    "regpath": ["experiment=regpath", "regpath.lr=0.5", "parameterization=kq", "dataset.d=4"],
    "multitoken": ["experiment=multitoken", "optimizer.lr=0.5", "head.lam=0.1"],
    "nexttoken": [*NT, "optimizer.lr=0.5", "metrics.epsilon=0.05", "solver.feas_tol=1e-5"],
    "gd": ["train=false", "loss=correlation", "metrics.delta=0.01", "icl.N=20"],
}


def test_the_tables_cover_every_experiment():
    assert set(builtin_names()) <= {k.split("_")[0] for k in REFUSED}
    assert set(builtin_names()) == set(ACCEPTED)


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_an_unread_key_is_refused_naming_what_it_reads_instead(case):
    overrides, message = REFUSED[case]
    with pytest.raises(ConfigError) as exc:
        attnsvm.compose(overrides)
    assert message in str(exc.value)
    assert "drop" in str(exc.value)


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_its_own_keys_and_the_common_ones_are_accepted(name):
    run = attnsvm.compose(ACCEPTED[name])
    assert run.experiment == name


def test_a_run_config_built_by_hand_is_refused_before_it_runs():
    run = run_config_class()(experiment="icl", optimizer=OptimizerConfig(lr=0.5))
    with pytest.raises(ConfigError, match="experiment=icl reads icl.lr, not optimizer.lr"):
        attnsvm.run_job(run)


@pytest.mark.parametrize("name", builtin_names())
def test_every_declared_read_is_a_key_of_the_config(name):
    """A misspelt ``reads`` or ``instead`` entry fails here, not silently."""
    module = entry(name)
    keys = flatten(plain(run_config_class()()))
    core = {f.name for f in dataclasses.fields(run_config_class())}
    for read in module.reads or ():
        assert read == "*" or read in core or read in keys, f"{name}: reads {read!r}"
    for core_key, mine in module.instead.items():
        assert core_key in keys and not reads_key(module, core_key), f"{name}: {core_key}"
        assert mine.split(".")[0] == group_of(module) and mine in keys, f"{name}: {mine}"


def test_the_cli_refuses_an_unread_key_and_writes_nothing(tmp_path):
    overrides, message = REFUSED["rankdyn"]
    res = run_cli(*overrides, f"hydra.run.dir={tmp_path / 'job'}")
    assert res.returncode != 0, res.stdout
    assert f"attnsvm: invalid config: {message}" in res.stdout, res.stdout
    assert "Traceback" not in res.stdout and not (tmp_path / "job").exists()


def test_a_sweep_over_an_unread_key_is_refused_before_any_job_runs(tmp_path):
    """Per job: gd reads optimizer.lr, icl does not; no job of the sweep starts."""
    sweep = tmp_path / "sweep"
    res = run_cli(
        "experiment=gd,icl",
        "optimizer.lr=0.1,0.5",
        "seeds=1",
        f"hydra.sweep.dir={sweep}",
        multirun=True,
    )
    assert res.returncode != 0, res.stdout
    assert "experiment=icl reads icl.lr, not optimizer.lr" in res.stdout, res.stdout
    assert "no job was started" in res.stdout, res.stdout
    assert job_dirs(sweep) == []


def test_a_sweep_file_with_an_unread_key_on_the_command_line_is_refused(tmp_path):
    sweep = tmp_path / "sweep"
    res = run_cli("+sweeps=icl_N", "dataset.n=3,4", f"hydra.sweep.dir={sweep}", multirun=True)
    assert res.returncode != 0, res.stdout
    assert "experiment=icl does not read dataset.n" in res.stdout, res.stdout
    assert job_dirs(sweep) == []
