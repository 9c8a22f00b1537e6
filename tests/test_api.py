"""The Python API as the README shows it: compose (the CLI's validation), run_job (with and
without writing), load_sweep; enum fields accept their names."""

from __future__ import annotations

import json

import pandas as pd
import pytest

import attnsvm
from attnsvm.composition import RunConfig
from attnsvm.config import ConfigError, Parameterization, ParameterizationConfig
from attnsvm.experiments import builtin_names
from bits import assert_frames_identical
from cli_helpers import SMALL, run_cli


def test_compose_validates_like_the_cli():
    cfg = attnsvm.compose(["parameterization=kq", "seeds=16"])
    assert cfg.parameterization.kind == Parameterization.kq and cfg.seeds == 16
    with pytest.raises(ConfigError, match="unknown key 'dataset.dd'"):
        attnsvm.compose(["dataset.dd=3"])
    with pytest.raises(ConfigError, match="head=relu needs dataset in callable, file, relu"):
        attnsvm.compose(["head=relu"])


def test_enum_fields_accept_their_names():
    assert ParameterizationConfig(kind="kq").kind == Parameterization.kq
    with pytest.raises(ConfigError, match="parameterization.kind='qk'.*w, kq"):
        ParameterizationConfig(kind="qk")


def test_run_job_returns_the_tables_and_writes_only_when_asked(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cfg = attnsvm.compose([*SMALL, "parameterization=kq"])
    res = attnsvm.run_job(cfg)
    assert len(res.runs) == 3 and set(res.trajectory.seed) == {0, 1, 2}
    assert list(tmp_path.iterdir()) == []  # nothing written
    by_hand = RunConfig(
        seeds=3,
        dataset=cfg.dataset,
        optimizer=cfg.optimizer,
        parameterization=ParameterizationConfig(kind="kq"),
    )
    assert attnsvm.run_job(by_hand).config_hash == res.config_hash
    out = tmp_path / "mine"
    written = attnsvm.run_job(cfg, out_dir=out)
    job = json.loads((out / "job.json").read_text())
    assert job["status"] == "finished" and job["config_hash"] == res.config_hash
    drop = [c for c in res.runs.columns if "seconds" in c]
    assert_frames_identical(
        pd.read_parquet(out / "runs.parquet").drop(columns=drop), res.runs.drop(columns=drop)
    )
    assert_frames_identical(written.trajectory, res.trajectory, "trajectory")


@pytest.mark.slow
def test_load_sweep_sees_what_the_aggregator_sees(tmp_path):
    res = run_cli("dataset.d=2,3", *SMALL, f"hydra.sweep.dir={tmp_path}", multirun=True)
    assert res.returncode == 0, res.stdout
    sweep = attnsvm.load_sweep(tmp_path)
    assert len(sweep.runs) == 6 and set(sweep.runs.d) == {2, 3}
    assert list(sweep.summary.d) == [2, 3] and (sweep.summary.seeds == 3).all()
    assert set(sweep.jobs.status) == {"finished"}


def test_an_experiment_of_ones_own_runs_like_a_built_in(tmp_path):
    """A module declaring ``EXPERIMENT = Experiment(...)`` (tests/experiment_example.py) named
    in config: the framework gives it validation, threads, the result contract and its summary."""
    cfg = attnsvm.compose(["experiment=experiment_example", *SMALL])
    res = attnsvm.run_job(cfg, out_dir=tmp_path / "mine")
    assert set(res.runs.status) == {"ok"} and res.runs.selected_opt_share.between(0, 1).all()
    assert json.loads((tmp_path / "mine" / "job.json").read_text())["status"] == "finished"
    builtins = ", ".join(sorted(builtin_names()))  # the registry's, not a list kept here
    accepted = f"accepted values are {builtins}, or"
    with pytest.raises(ConfigError, match=accepted):
        attnsvm.compose(["experiment=gradient_descent"])
    with pytest.raises(
        ConfigError, match=r"experiment='bits' is invalid.*bits must declare EXPERIMENT = Exp"
    ):
        attnsvm.compose(["experiment=bits"])  # a module, but not an experiment


@pytest.mark.parametrize(
    ("override", "group", "options"),
    [("dataset=nope", "dataset", "callable, digits"), ("+sweeps=locl", "sweeps", "local")],
)
def test_a_misspelt_group_option_names_the_group_and_the_accepted_options(override, group, options):
    with pytest.raises(ConfigError) as info:
        attnsvm.compose([override])
    msg = str(info.value)
    assert msg.startswith(f"{override}: no option") and f"in group '{group}'" in msg, msg
    assert options in msg and "search path" not in msg and "\n" not in msg, msg


@pytest.mark.parametrize(
    "override",
    ["rankdyn.lr=inf", "rankdyn.lr=nan", "rankdyn.lr=-1", "rankdyn.lr=0", "rankdyn.alpha=inf"],
)
def test_a_non_finite_or_non_positive_rankdyn_step_is_refused_naming_its_key(override):
    with pytest.raises(ConfigError, match=override.split("=")[0].replace(".", r"\.") + "="):
        attnsvm.compose(["experiment=rankdyn", override])


@pytest.mark.parametrize("override", ["icl.lr=inf", "icl.lr=nan", "icl.lr=-0.1", "icl.lr=0"])
def test_a_non_finite_or_non_positive_icl_step_is_refused_naming_its_key(override):
    with pytest.raises(ConfigError, match=r"icl\.lr=.*finite floats > 0"):
        attnsvm.compose(["experiment=icl", override])


def test_the_cli_refuses_rankdyn_lr_inf_before_writing_anything(tmp_path):
    res = run_cli("experiment=rankdyn", "rankdyn.lr=inf", f"hydra.run.dir={tmp_path / 'job'}")
    assert res.returncode != 0 and "rankdyn.lr=inf" in res.stdout, res.stdout
    assert "Traceback" not in res.stdout and not (tmp_path / "job").exists()
