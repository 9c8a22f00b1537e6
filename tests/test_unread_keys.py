"""An experiment's job config holds only what it reads (attnsvm/experiments/<name>/config.py):
a key outside it is refused at composition naming what it reads instead, and nothing is written
(a single run, a sweep, the Python API). Every shipped sweep file composes under the rule:
tests/test_sweeps.py composes every value of every axis."""

from __future__ import annotations

import dataclasses

import pytest

import attnsvm
from attnsvm.config import ConfigError
from attnsvm.config.checks import flatten, plain
from attnsvm.config.enums import Optimizer
from attnsvm.experiments import builtin_names, entry, group_of, has_key, names
from cli_helpers import job_dirs, run_cli

NT = ["experiment=nexttoken"]
REFUSED = {  # overrides -> what the message says
    "rankdyn": (
        ["experiment=rankdyn", "dataset.n=10"],
        "experiment=rankdyn reads rankdyn.n, not dataset.n",
    ),
    "rankdyn_lr": (
        ["experiment=rankdyn", "optimizer.lr=0.5"],
        "experiment=rankdyn reads rankdyn.lr, not optimizer.lr",
    ),
    "rankdyn_group": (
        ["experiment=rankdyn", "parameterization=kq"],
        "experiment=rankdyn reads rankdyn.parameterization, not parameterization",
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
    "nexttoken": ([*NT, "head=lambda"], "experiment=nexttoken does not read head"),
    "gd": (["icl.N=5"], "experiment=gd does not read icl.N (read by experiment=icl)"),
    "icl_train": (["experiment=icl", "train=false"], "experiment=icl does not read train"),
    "ocr": (
        ["experiment=ocr", "optimizer.lr=0.5"],
        "experiment=ocr reads ocr.lr, not optimizer.lr",
    ),
    "ocr_T": (["experiment=ocr", "dataset.T=5"], "experiment=ocr reads ocr.T, not dataset.T"),
}
ACCEPTED = {  # its own keys, the groups it reads, the common run keys
    "rankdyn": ["experiment=rankdyn", "rankdyn.n=10", "solver.tol=1e-9"],
    "icl": ["experiment=icl", "icl.lr=0.5", "seeds=2", "threads=2", "batch_size=5"],
    "benign": ["experiment=benign", "benign.lr=0.5", "device=cpu", "dtype=float32"],
    "regpath": ["experiment=regpath", "regpath.lr=0.5", "parameterization=kq", "dataset.d=4"],
    "multitoken": ["experiment=multitoken", "optimizer.lr=0.5", "head=lambda", "head.lam=0.1"],
    "nexttoken": [*NT, "optimizer.lr=0.5", "metrics.epsilon=0.05", "solver.feas_tol=1e-5"],
    "gd": ["train=false", "loss=correlation", "metrics.delta=0.01"],
    "ocr": ["experiment=ocr", "ocr.lr=0.5", "solver.tol=1e-9", "batch_size=3"],
}
# no row of these has a column of gd's groups or of another experiment's
OWN_ONLY = {"rankdyn": ["rankdyn.steps=20"], "icl": ["icl.steps=10"], "benign": []}
FOREIGN = ("dataset.", "optimizer.", "parameterization.", "head.", "metrics.", "regpath.")
FOREIGN += ("multitoken.",)


def test_the_tables_cover_every_experiment():
    assert set(names()) == set(builtin_names())
    assert set(builtin_names()) <= {k.split("_")[0] for k in REFUSED}
    assert set(builtin_names()) == set(ACCEPTED)


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_an_unread_key_is_refused_naming_what_it_reads_instead(case):
    overrides, message = REFUSED[case]
    with pytest.raises(ConfigError) as exc:
        attnsvm.compose(overrides)
    assert message in str(exc.value)
    assert "drop" in str(exc.value)
    assert "\n" not in str(exc.value)  # one line


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_its_own_keys_and_the_common_ones_are_accepted(name):
    run = attnsvm.compose(ACCEPTED[name])
    assert run.experiment == name
    assert type(run) is entry(name).job_config


def test_a_plugin_optimizers_arguments_are_refused_for_a_builtin():
    said = (
        r"optimizer.kwargs=\{'decay': 0.5\} is invalid: accepted values are \{\} \(its "
        r"default\): only your own optimizer.kind reads it; here optimizer.kind=ngd"
    )
    with pytest.raises(ConfigError, match=said):
        attnsvm.compose(["optimizer=ngd", "+optimizer.kwargs.decay=0.5"])


@pytest.mark.parametrize("name", builtin_names())
def test_its_job_config_holds_its_own_group_and_declared_keys(name):
    """A misspelt ``instead`` entry fails here, not silently; the job config of an experiment
    with its own group has it."""
    module = entry(name)
    keys = flatten(plain(module.job_config()))
    group = group_of(module)
    assert group is None or any(k.startswith(f"{group}.") for k in keys)
    for core_key, mine in module.instead.items():
        assert not has_key(module, core_key), f"{name}: {core_key}"
        assert mine.split(".")[0] == group and mine in keys, f"{name}: {mine}"
    fields = [f.name for f in dataclasses.fields(module.job_config)]
    assert fields[: len(fields)] and "experiment" in fields


@pytest.mark.parametrize("name", sorted(OWN_ONLY))
def test_its_rows_carry_only_what_it_read(name):
    overrides = {
        "rankdyn": ["rankdyn.steps=20", "rankdyn.checkpoints=4", "rankdyn.parameterization=w"],
        "icl": ["icl.steps=10", "icl.checkpoint_every=5", "icl.batch=20", "icl.d=5"]
        + ["icl.test_prompts=20", "icl.fit_prompts=40"],
        "benign": ["benign.steps=10", "benign.n=10", "benign.d=40", "benign.test=20"],
    }[name]
    runs = attnsvm.run_job(attnsvm.compose([f"experiment={name}", "seeds=2", *overrides])).runs
    assert not [c for c in runs if c.startswith(FOREIGN)], list(runs)
    if name == "rankdyn":  # its parameterization is what ran, in its own column only
        assert "parameterization" not in runs and set(runs["rankdyn.parameterization"]) == {"w"}
    if name == "icl":  # no n, T, d of a data set it never drew
        assert not {"n", "T", "d"} & set(runs) and set(runs["icl.d"]) == {5}


def test_the_cli_refuses_an_unread_key_and_writes_nothing(tmp_path):
    overrides, message = REFUSED["rankdyn"]
    res = run_cli(*overrides, f"hydra.run.dir={tmp_path / 'job'}")
    assert res.returncode != 0, res.stdout
    assert f"attnsvm: invalid config: {message}" in res.stdout, res.stdout
    assert "Traceback" not in res.stdout and not (tmp_path / "job").exists()


def test_a_sweep_over_an_unread_key_is_refused_before_any_job_runs(tmp_path):
    """gd reads optimizer.lr, icl does not; no job of the sweep starts."""
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
    assert job_dirs(sweep) == []


def test_a_sweep_file_with_an_unread_key_on_the_command_line_is_refused(tmp_path):
    sweep = tmp_path / "sweep"
    res = run_cli("+sweeps=icl_N", "dataset.n=3,4", f"hydra.sweep.dir={sweep}", multirun=True)
    assert res.returncode != 0, res.stdout
    assert "experiment=icl does not read dataset.n" in res.stdout, res.stdout
    assert job_dirs(sweep) == []


def test_the_job_config_of_rankdyn_shows_none_of_gds_groups():
    res = run_cli("experiment=rankdyn", "--cfg", "job")
    assert res.returncode == 0, res.stdout
    top = {line.split(":")[0] for line in res.stdout.splitlines() if line and line[0] != " "}
    assert {"rankdyn", "solver", "experiment", "seeds"} <= top, res.stdout
    assert not top & {"dataset", "parameterization", "optimizer", "head", "metrics", "train"}


def test_a_key_one_experiment_of_a_sweep_files_grid_lacks_is_refused(tmp_path):
    """sequential's grid runs gd and regpath: optimizer.steps is gd's alone."""
    sweep = tmp_path / "sweep"
    res = run_cli("+sweeps=sequential", "optimizer.steps=40", f"hydra.sweep.dir={sweep}",
                  multirun=True)  # fmt: skip
    assert res.returncode != 0, res.stdout
    assert "experiment=regpath reads regpath.steps, not optimizer.steps" in res.stdout, res.stdout
    assert not sweep.exists()


# Within a group: a key some values of another key leave unread (a step rule's own keys, the
# schedule's exponent, the search's keys): refused away from its default, in no row or job.json.
UNREAD_HERE = {
    "beta_under_ngd": (["optimizer.beta=0.5"], "only optimizer.kind in signum"),
    "eps_under_gd": (["optimizer=gd", "optimizer.eps=1e-8"], "here optimizer.kind=gd"),
    "p_under_adam": (["optimizer=adam", "optimizer.p=3"], "only optimizer.kind in md"),
    "decay_a": (["optimizer.decay_a=0.3"], "only optimizer.schedule=poly reads it"),
    "replacement": (["optimizer.replacement=true"], "here optimizer.minibatch=null"),
    "lam": (["head.lam=0.5"], "only head.kind=lambda (or your own) reads it"),
    "min_rate": (
        ["experiment=multitoken", "multitoken.min_rate=0.01"],
        "only a set multitoken.target_accepted reads it",
    ),
    "max_tried": (["experiment=multitoken", "multitoken.max_tried=50"], "target_accepted=null"),
    "rankdyn_eps": (["experiment=rankdyn", "rankdyn.eps=1e-8"], "only rankdyn.rule=ngd"),
}


@pytest.mark.parametrize("case", sorted(UNREAD_HERE))
def test_a_key_its_other_keys_leave_unread_is_refused(case):
    overrides, said = UNREAD_HERE[case]
    with pytest.raises(ConfigError) as exc:
        attnsvm.compose(overrides)
    message = str(exc.value)
    assert said in message and "(its default)" in message and "\n" not in message, message
    key = overrides[-1].split("=")[0]
    assert message.startswith(f"{key}="), message


def test_the_same_keys_are_accepted_where_they_are_read():
    attnsvm.compose(["optimizer=signum", "optimizer.beta=0.5"])
    attnsvm.compose(["optimizer=adam", "optimizer.schedule=poly", "optimizer.decay_a=0.3"])
    attnsvm.compose(["optimizer.minibatch=2", "optimizer.replacement=true"])
    attnsvm.compose(["experiment=rankdyn", "rankdyn.rule=ngd", "rankdyn.eps=1e-8"])
    attnsvm.compose(
        ["experiment=multitoken", "multitoken.target_accepted=3", "multitoken.min_rate=0.01"]
    )


class _Reads:
    """An OptimizerConfig that records which of its keys are read."""

    def __init__(self, cfg):
        self._cfg, self.read = cfg, set()

    def __getattr__(self, name):
        self.read.add(name)
        return getattr(self._cfg, name)


@pytest.mark.parametrize("kind", [k.value for k in Optimizer])
def test_each_step_rule_reads_exactly_the_keys_its_config_declares(kind):
    """The declarations of OptimizerConfig.READ_ONLY against the step rules' code: a key a rule's
    class reads while training is declared read by it, and each key declared read by it is read."""
    import torch

    from attnsvm.config.constraints import unread
    from attnsvm.config.schema import OptimizerConfig
    from attnsvm.train.step_rules import OPTIMIZERS

    cfg = OptimizerConfig(kind=kind, weight_decay=0.1 if kind == "adamw" else 0.0)
    proxy = _Reads(cfg)
    rule = OPTIMIZERS[cfg.kind](proxy)
    X, G = torch.ones(2, 3, 3, dtype=torch.float64), torch.full((2, 3, 3), 0.5, dtype=torch.float64)
    extra = (
        {"loss": torch.ones(2, dtype=torch.float64)} if getattr(rule, "needs_loss", False) else {}
    )
    for _ in range(2):
        X = rule.update(X, G, torch.full((2,), 1.5, dtype=torch.float64), **extra)
    own = {r.key for r in OptimizerConfig.READ_ONLY if r.on == "kind"}
    assert proxy.read & own == own - set(unread(cfg)), proxy.read


@pytest.mark.parametrize(
    ("overrides", "carried", "left_out"),
    [
        (["optimizer=signum"], {"optimizer.beta"}, {"optimizer.eps", "optimizer.betas"}),
        (["optimizer=ngd"], {"optimizer.eps"}, {"optimizer.beta", "optimizer.weight_decay"}),
        (
            ["optimizer=adam", "optimizer.schedule=poly"],
            {"optimizer.betas", "optimizer.eps", "optimizer.decay_a"},
            {"optimizer.p", "optimizer.normalize", "optimizer.replacement", "head.lam"},
        ),
    ],
)
def test_a_row_and_job_json_carry_only_the_keys_that_acted(tmp_path, overrides, carried, left_out):
    import json

    from attnsvm.composition.identity import config_hash

    run = attnsvm.compose([*overrides, "seeds=1", "optimizer.steps=20", "dataset.d=4"])
    result = attnsvm.run_job(run, tmp_path)
    job = json.loads((tmp_path / "job.json").read_text())
    in_job = set(flatten(job["config"]))
    for keys in (set(result.runs.columns), in_job):
        assert carried <= keys and not keys & left_out, sorted(keys)
    assert job["config_hash"] == config_hash(run) == result.config_hash
