"""Invalid configs fail fast, naming the key and the accepted values, and leave no output
directory behind. Every row runs through the compose API (fast); a subset, and an invalid
sweep point, through ``python -m attnsvm.run`` in a subprocess (slow)."""

from __future__ import annotations

import importlib.util
import os

import pytest
import torch
from hydra import compose, initialize_config_dir

from attnsvm.composition import check_override_keys, register_configs, to_run_config
from attnsvm.experiments import builtin_names
from cli_helpers import REPO, SMALL, run_cli

NT = ["experiment=nexttoken", "dataset=nexttoken"]
SEQ = ["dataset.n=2", "dataset.T=2", "dataset.ids=[[0,1],[1,2]]"]  # your own sequences

# (overrides, what the message must contain: the key and (some of) the accepted values)
BAD = [
    (["dataset.d=0"], ["dataset.d", "integers >= 1"]),
    (["dataset.d=-3"], ["dataset.d", "integers >= 1"]),
    (["dataset.T=1"], ["dataset.T", "integers >= 2"]),
    (["dataset.n=0"], ["dataset.n", "integers >= 1"]),
    (["dataset.n=abc"], ["dataset.n", "Integer"]),
    (["+foo=1"], ["does not read foo", "drop it", "experiment=gd reads dataset.*"]),
    # 8 seeds x 6 sequences x (100000^2 + 100000 * 10) float64: terabytes, refused at once
    (["dataset.T=100000"], ["dataset.T=100000", "needs at least", "TiB", "lower dataset.T"]),
    (["optimizer.lr=0"], ["optimizer.lr", "floats > 0"]),
    (["optimizer.lr=-0.1"], ["optimizer.lr", "floats > 0"]),
    (["optimizer.steps=0"], ["optimizer.steps", "integers >= 1"]),
    (["optimizer.checkpoint_every=0"], ["optimizer.checkpoint_every", "integers >= 1"]),
    (["optimizer.eps=-1e-3"], ["optimizer.eps", "floats >= 0"]),
    (
        ["optimizer.kind=adagrad"],
        ["optimizer.kind", "ngd", "gd", "md", "sign", "adam", "signum", "adamw"],
    ),
    (["optimizer=md", "optimizer.p=0.5"], ["optimizer.p", "floats > 1"]),
    (["solver.norms=[fro,l0.5]"], ["solver.norms", "l<p> with p >= 1"]),
    (["optimizer=md", "parameterization=kq"], ["optimizer.kind=md", "parameterization=w"]),
    (["solver.norms=[fro,frob]"], ["solver.norms='frob'", "fro, nuc", "import path"]),
    (["parameterization=qk"], ["parameterization", "kq", "w"]),
    (["parameterization.m=0"], ["parameterization.m", "null or integers >= 1"]),
    (["parameterization.init=xavier"], ["parameterization.init", "torch", "zeros", "normal"]),
    (["dataset=mnist"], ["dataset", "random"]),
    (["dataset.generator=mnist"], ["dataset.generator", "random"]),
    (["dataset.dd=3"], ["dataset.dd", "generator", "query_index"]),
    (["foo=1"], ["foo", "seeds", "dataset"]),
    (["solver=mosek"], ["solver", "clarabel", "scs"]),
    (["solver.backend=MOSEK"], ["solver.backend", "CLARABEL", "SCS"]),
    (["solver.frobenius=qp"], ["solver.frobenius", "nnls", "cvxpy"]),
    (["solver.tol=0"], ["solver.tol", "floats in (0, 1)"]),
    (["solver.rank_rtol=1"], ["solver.rank_rtol", "floats in (0, 1)"]),
    (["solver.max_iters=0"], ["solver.max_iters", "integers >= 1"]),
    (["dataset.attention=self", "dataset.query_index=8"], ["dataset.query_index", "[-8, 8)"]),
    (["dataset.attention=self", "dataset.query_index=-9"], ["dataset.query_index", "[-8, 8)"]),
    (["metrics.delta=0"], ["metrics.delta", "floats in (0, 1)"]),
    (["metrics.epsilon=1.5"], ["metrics.epsilon", "floats in (0, 1)"]),
    (["head=mlp"], ["head", "linear"]),
    (["seeds=0"], ["seeds", "integers >= 1"]),
    (["seed=-1"], ["seed", "integers >= 0"]),
    (["batch_size=0"], ["batch_size", "integers >= 1"]),
    (["threads=0"], ["threads", "integers >= 1"]),
    (["dtype=float16"], ["dtype", "float64", "float32"]),
    (["device=tpu"], ["device", "cpu", "cuda"]),
    (["engine=numba"], ["engine", "auto", "fused", "torch"]),
    (["engine=fused", "dtype=float32"], ["engine=fused", "dtype=float32", "auto, torch"]),
    (
        ["experiment=gdd"],
        ["experiment='gdd'", ", ".join(sorted(builtin_names())), "run_job"],
    ),
    # rules across keys and groups: both keys named, and what to set
    (
        ["head=relu"],
        ["head=relu needs dataset in callable, file, relu", "dataset.generator=random"],
    ),
    (["head=relu", "dataset=paths"], ["head=relu", "dataset.generator=paths"]),
    (["dataset=paths", "dataset.T=4"], ["dataset.generator=paths", "dataset.T in [3, 5]"]),
    (["dataset=paths", "dataset.d=3"], ["dataset.generator=paths", "dataset.d=2", "d=3"]),
    (["dataset=paths", "dataset.n=6"], ["dataset.generator=paths", "dataset.n=2", "n=6"]),
    (["dataset=orthonormal", "dataset.T=7"], ["dataset.T <= dataset.d", "T=7", "d=6"]),
    # next-token prediction (experiment=nexttoken, dataset=nexttoken)
    (NT + ["dataset.K=1", "dataset.T=1"], ["dataset.T", "integers >= 2"]),
    (NT + ["dataset.K=1"], ["dataset.K", "integers >= 2"]),
    (NT + ["dataset.T=7"], ["dataset.T=7 > dataset.K=6", "without replacement", "T <= 6"]),
    (NT + ["dataset.embedding=ortho"], ["dataset.embedding", "orthonormal", "equicorr"]),
    (NT + ["dataset.embedding=equicorr", "dataset.d=6"], ["equicorr needs dataset.d >= 7"]),
    (NT + ["dataset.rho=1"], ["dataset.rho", "floats in [0, 1)"]),
    (NT + ["dataset.draws=notebook"], ["dataset.draws", "per_seed", "published"]),
    (NT + ["dataset.graphs=dag"], ["dataset.graphs", "cyclic", "acyclic", "any"]),
    (NT + ["nexttoken.loss=ce"], ["nexttoken.loss", "nll", "lsq2"]),
    (NT + ["nexttoken.local_threshold=0"], ["nexttoken.local_threshold", "floats in (0, 1)"]),
    (NT + ["parameterization.init=cone"], ["parameterization.init", "torch, zeros"]),
    (NT + ["optimizer.kind=optim_example.make"], ["invalid for experiment=nexttoken", "ngd, gd"]),
    (NT + SEQ + ["dataset.labels=[0,6]"], ["dataset.labels", "outside the vocabulary", "[0, "]),
    (NT + SEQ + ["dataset.labels=[0,3]"], ["dataset.labels", "sequences [1] lack theirs"]),
    (NT + SEQ + ["dataset.labels=[0]"], ["dataset.labels", "dataset.n=2"]),
    (
        NT + ["dataset.n=2", "dataset.T=2", "dataset.ids=[[0,6],[1,2]]", "dataset.labels=[0,1]"],
        ["dataset.ids", "ids in [0, 6)"],
    ),
    (
        NT + ["dataset.n=2", "dataset.T=2", "dataset.ids=[[0,1],[1,2]]"],
        ["dataset.ids and dataset.labels go together"],
    ),
    (["experiment=nexttoken", "dataset=random"], ["experiment=nexttoken needs dataset=nexttoken"]),
    (["dataset=nexttoken"], ["dataset=nexttoken is read by experiment=nexttoken only"]),
    # the p-model, the published max-margin examples and the loss (issue 12)
    (["loss=hinge"], ["loss", "logistic", "exponential", "correlation"]),
    (
        ["dataset=maxmargin", "parameterization=p", "dataset.example=triple"],
        ["dataset.example='triple'", "single, single_local, multi, joint, joint_relaxed, loss"],
    ),
    (["dataset=maxmargin", "seeds=6"], ["dataset=maxmargin", "parameterization=p"]),
    (
        ["dataset=maxmargin", "parameterization=p", "dataset.example=joint", "seeds=2"],
        ["seed/seeds", "seed + seeds <= 1", "dataset.example=joint"],
    ),
    (
        ["dataset=maxmargin", "parameterization=p", "dataset.d=2"],
        ["dataset.d=2", "dataset.example=single has d=3"],
    ),
    (
        ["parameterization=p", "parameterization.key_query=[[1,0],[0,1]]"],
        ["parameterization.key_query", "10x10", "2x2"],
    ),
    (
        ["parameterization=p", "parameterization.key_query=[[1,0],[0]]"],
        ["parameterization.key_query", "square matrix"],
    ),
    (["parameterization.key_query=[[1]]"], ["parameterization.key_query", "parameterization=p"]),
    (["parameterization=p", "parameterization.init=published"], ["dataset=maxmargin"]),
    (["parameterization=p", "dataset.attention=self"], ["parameterization=p", "cross"]),
    (["parameterization=p", "experiment=regpath"], ["parameterization=p", "experiment"]),
    (["parameterization=p", "engine=fused"], ["engine=fused", "parameterization=p"]),
    (["loss=exponential", "engine=fused"], ["engine=fused", "loss=exponential"]),
    (["loss=correlation", "experiment=regpath"], ["loss=correlation", "experiment=gd"]),
    (["dataset.example=single"], ["dataset.example", "dataset=maxmargin"]),
    (["dataset=digits", "dataset.classes=[3,3]"], ["dataset.classes", "two different digits"]),
    (["dataset=digits", "dataset.classes=[0,10]"], ["dataset.classes", "in 0-9"]),
    (["dataset=digits", "dataset.n=400"], ["dataset.n=400", "1..360", "digits 0 and 1"]),
    (["dataset=digits", "dataset.patch=3"], ["dataset.patch=3", "accepted values are 2, 4"]),
    (["dataset=digits", "dataset.T=8"], ["dataset.T=8", "gives T=4"]),
    # faults and extreme inputs (issue 22; files and generators: tests/test_faults.py)
    (["optimizer.lr=inf"], ["optimizer.lr=inf", "finite floats"]),
    (["optimizer.eps=inf"], ["optimizer.eps=inf", "finite floats"]),
    (["parameterization.init_scale=inf"], ["parameterization.init_scale", "finite floats"]),
    (["experiment=regpath", "regpath.lr=inf"], ["regpath.lr=inf", "finite floats"]),
    (["seed=" + "9" * 400], ["seed=999", "(400 characters)", "seed + seeds <= 2**32"]),
    (["dataset=callable", "dataset.target=faulty_userdata.nothing"], ["cannot be imported"]),
    (
        ["dataset=callable", "dataset.target=faulty_userdata.no_arguments"],
        ["dataset.target=", "cannot be called as make(seeds, n, T, d, **dataset.kwargs)"],
    ),
]
if not torch.cuda.is_available():
    BAD.append((["device=cuda"], ["device", "cpu (no CUDA device here)"]))


def _error(overrides: list[str]) -> str:
    """The message the CLI's checks raise for ``overrides`` (key check, compose, validate)."""
    register_configs()
    try:
        check_override_keys(overrides)
        with initialize_config_dir(version_base="1.3", config_dir=str(REPO / "conf")):
            to_run_config(compose(config_name="config", overrides=overrides))
    except Exception as exc:  # Hydra, OmegaConf and our ConfigError; Hydra prints the chain
        chain = [exc]
        while chain[-1].__cause__ is not None:
            chain.append(chain[-1].__cause__)
        return "\n".join(map(str, chain))
    pytest.fail(f"{overrides} was accepted")


def test_the_table_is_big_enough():
    assert len(BAD) >= 20


@pytest.mark.parametrize("overrides,expected", BAD, ids=[" ".join(o) for o, _ in BAD])
def test_invalid_config_names_key_and_accepted_values(overrides, expected):
    message = _error(overrides)
    for text in expected:
        assert text in message, f"{text!r} missing from: {message}"


def test_valid_overrides_pass_the_key_check():
    check_override_keys(["dataset.d=3", "parameterization=kq", "+sweeps=rank", "hydra.verbose=1"])
    check_override_keys(["-m", "--config-name", "config", "hydra/launcher=basic", "~seed"])


SUBPROCESS = [
    ["dataset.d=0"],
    ["parameterization=qk"],
    ["dataset.dd=3"],
    ["solver.backend=MOSEK"],
    ["dataset.attention=self", "dataset.query_index=8"],
    ["metrics.epsilon=1.5"],
    ["head=relu"],
    ["dataset=paths", "dataset.T=4"],
    ["dataset.T=100000"],
    ["+foo=1"],
]


@pytest.mark.slow
@pytest.mark.parametrize("overrides", SUBPROCESS, ids=[" ".join(o) for o in SUBPROCESS])
def test_cli_exits_nonzero_and_leaves_no_output_dir(tmp_path, overrides):
    expected = dict((" ".join(o), e) for o, e in BAD)[" ".join(overrides)]
    res = run_cli(*overrides, f"hydra.run.dir={tmp_path}/run", timeout=120)
    assert res.returncode != 0
    for text in expected:
        assert text in res.stdout, res.stdout
    assert not (tmp_path / "run").exists()


@pytest.mark.slow
def test_invalid_sweep_point_stops_the_sweep_with_a_clear_message(tmp_path):
    res = run_cli(
        "dataset.T=8,1",
        *SMALL,
        f"hydra.sweep.dir={tmp_path}",
        "hydra/launcher=basic",
        multirun=True,
    )
    assert res.returncode != 0
    assert "dataset.T=1 is invalid: accepted values are integers >= 2" in res.stdout
    assert not (tmp_path / "1").exists()  # the invalid job's directory is removed
    assert (tmp_path / "0" / "job.json").exists()


@pytest.mark.parametrize("override", ["dataset=nope", "dataset=random,nope", "+sweeps=nope"])
def test_a_misspelt_group_option_on_the_command_line_is_one_line(override, tmp_path):
    """``python -m attnsvm.run dataset=nope``: the group's options in one line and exit 1, not
    Hydra's message with its config search path; nothing written."""
    done = run_cli(override, f"hydra.run.dir={tmp_path}/run", timeout=120)
    group = override.lstrip("+").partition("=")[0]
    options = ", ".join(sorted(p.stem for p in (REPO / "conf" / group).glob("*.yaml")))
    assert done.returncode == 1
    assert done.stdout.strip().splitlines() == [
        f"attnsvm: invalid config: {override}: no option 'nope' in group '{group}'; "
        f"accepted: {options}"
    ]
    assert not (tmp_path / "run").exists()


def test_the_memory_estimate_is_the_batch_and_refuses_only_what_cannot_fit(monkeypatch):
    """A lower bound of the batch's largest tensors: (R, n, T, T + d) items of its dtype, R the
    seeds trained together; a job that fits is composed as ever."""
    import attnsvm
    from attnsvm.config.checks import ConfigError
    from attnsvm.experiments.gd import memory

    run = attnsvm.compose(["dataset.T=50", "seeds=20", "batch_size=4", "dtype=float32"])
    assert memory.batch_bytes(run) == 4 * 6 * 50 * (50 + 10) * 4
    monkeypatch.setattr(memory, "physical_memory", lambda: memory.batch_bytes(run) - 1)
    with pytest.raises(ConfigError, match="a batch of 4 seeds needs at least 281 KiB"):
        attnsvm.compose(["dataset.T=50", "seeds=20", "batch_size=4", "dtype=float32"])
    monkeypatch.setattr(memory, "physical_memory", lambda: memory.batch_bytes(run))
    attnsvm.compose(["dataset.T=50", "seeds=20", "batch_size=4", "dtype=float32"])


@pytest.mark.slow
def test_a_refused_sweep_point_writes_nothing_and_keeps_an_earlier_sweeps_record(tmp_path):
    """Hydra's sweeper writes multirun.yaml before the grid is checked: a refused point removes
    it with the folders made for it, and a finished sweep's record is left as it was."""
    sweep = tmp_path / "multirun" / "s"
    refused = run_cli("dataset.d=2,0", *SMALL, f"hydra.sweep.dir={sweep}", multirun=True)
    assert refused.returncode != 0
    assert "dataset.d=0 is invalid: accepted values are integers >= 1" in refused.stdout
    assert list(tmp_path.iterdir()) == []

    done = run_cli("dataset.d=2", *SMALL, f"hydra.sweep.dir={sweep}", multirun=True)
    assert done.returncode == 0, done.stdout
    record, entries = (sweep / "multirun.yaml").read_bytes(), sorted(os.listdir(sweep))
    refused = run_cli("dataset.d=2,0", *SMALL, f"hydra.sweep.dir={sweep}", multirun=True)
    assert refused.returncode != 0
    assert (sweep / "multirun.yaml").read_bytes() == record
    assert sorted(os.listdir(sweep)) == entries


@pytest.mark.slow
@pytest.mark.skipif(
    importlib.util.find_spec("hydra_plugins.hydra_submitit_launcher") is None,
    reason="hydra-submitit-launcher not installed (.[slurm])",
)
def test_slurm_without_a_controller_is_one_line_and_leaves_nothing(tmp_path):
    """sbatch failing as it does where no slurmctld answers (this sbatch says what a real one
    says): one attnsvm: line with sbatch's reason, no traceback, no sweep directory."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    sbatch = bin_dir / "sbatch"
    reason = "Batch job submission failed: Unable to contact slurm controller (connect failure)"
    sbatch.write_text(f"#!/bin/sh\necho 'sbatch: error: {reason}' >&2\nexit 1\n")
    sbatch.chmod(0o755)
    sweep = tmp_path / "multirun" / "s"
    res = run_cli(
        "dataset.d=2,3",
        *SMALL,
        "hydra/launcher=slurm",
        f"hydra.sweep.dir={sweep}",
        multirun=True,
        timeout=120,
        PATH=f"{bin_dir}:{os.environ['PATH']}",
    )
    assert res.returncode == 1, res.stdout
    assert "Traceback" not in res.stdout, res.stdout
    last = res.stdout.strip().splitlines()[-1]
    assert last.startswith("attnsvm: hydra/launcher=slurm could not submit"), res.stdout
    assert reason in last and last.endswith("(no job was started)")
    assert res.stdout.count(reason) == 1, res.stdout  # said once, in that line
    assert not (tmp_path / "multirun").exists()
