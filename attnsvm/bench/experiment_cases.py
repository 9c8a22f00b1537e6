"""The bench's whole-experiment cases: the rank, local, multitoken and nexttoken experiments
in fresh worker processes, the idle worker's memory, and each registered experiment's own case
(its entry's ``bench_cases(quick)``, attnsvm/experiments/__init__.py)."""

from __future__ import annotations

from attnsvm.bench.svm_cases import RANK_D, RANK_NT
from attnsvm.bench.timing import Timing, cpu_seconds, parallel, split
from attnsvm.config import DatasetConfig, OptimizerConfig, ParameterizationConfig, RunConfig
from attnsvm.config.enums import Parameterization
from attnsvm.data.generators import make_instances
from attnsvm.experiments import builtin_names, entry
from attnsvm.experiments.nexttoken.config import NexttokenConfig
from attnsvm.job import run_job

MULTITOKEN_D = [4, 6, 8, 10]
NEXTTOKEN_D = [2, 3, 4, 6, 8, 12, 16, 24, 32]  # sweeps/nexttoken_d.yaml


def rank_experiment(quick: bool) -> Timing:
    seeds = 20 if quick else 100
    cfgs = [
        RunConfig(train=False, seeds=seeds, dataset=DatasetConfig(n=n, T=T, d=d))
        for n, T in RANK_NT
        for d in RANK_D
    ]
    return parallel([("jobs", part) for part in split(cfgs, 2)])


def local_experiment(quick: bool) -> Timing:
    steps = 500 if quick else 2000
    cfgs = [
        RunConfig(
            seeds=100,
            parameterization=ParameterizationConfig(kind=kind),
            optimizer=OptimizerConfig(steps=steps),
        )
        for kind in (Parameterization.w, Parameterization.kq)
    ]
    return parallel([("jobs", [c]) for c in cfgs])


def _nexttoken_cfg(loss: str, lr: float, steps: int, seeds: int, **dataset) -> RunConfig:
    ds = {**dict(generator="nexttoken", n=6, T=4, d=8, K=6, draws="published"), **dataset}
    return RunConfig(
        experiment="nexttoken",
        seeds=seeds,
        dataset=DatasetConfig(**ds),
        nexttoken=NexttokenConfig(loss=loss),
        optimizer=OptimizerConfig(lr=lr, steps=steps, checkpoint_every=20 if seeds == 10 else 100),
    )


def nexttoken_experiments(quick: bool) -> dict:
    """The two published notebooks' settings (10 instances, W), each one job in one worker, and
    the d sweep (sweeps/nexttoken_d.yaml, cyclic and acyclic) on 2 workers."""
    seeds = 20 if quick else 100
    sweep = [
        _nexttoken_cfg("nll", 0.01, 4000, seeds, d=d, draws="per_seed", graphs=g)
        for d in NEXTTOKEN_D
        for g in ("cyclic", "acyclic")
    ]
    return {
        "global": parallel([("jobs", [_nexttoken_cfg("nll", 0.01, 4000, 10)])], workers=1),
        "local": parallel(
            [("jobs", [_nexttoken_cfg("lsq2", 0.1, 2000, 10, notebook="local")])], workers=1
        ),
        "d_sweep": parallel([("jobs", part) for part in split(sweep, 2)]),
    }


def multitoken_experiment(quick: bool) -> tuple[float, int]:
    """CPU seconds of the real multitoken experiment (sweeps/multitoken.yaml: ReLU head, published
    filters, 2001 steps) at a small accepted target per d, scaled to 500 accepted per d: the cost
    per trained seed times the seeds 500 acceptances need (the rows up to the last accepted seed,
    scaled by 500 / target). Seeds are drawn in batches of 250, so the last batch's overshoot is
    charged per trained seed, not to the estimate."""
    from attnsvm.api import compose

    target, batch = (5, 250) if quick else (25, 250)
    cpu = 0.0
    for d in MULTITOKEN_D:
        overrides = [
            "+sweeps=multitoken",
            f"dataset.d={d}",
            f"multitoken.target_accepted={target}",
            f"batch_size={batch}",
        ]
        cfg = compose(overrides)
        t0 = cpu_seconds()
        needed = len(run_job(cfg).runs)  # seeds up to the target-th accepted one
        trained = -(-needed // batch) * batch
        cpu += (cpu_seconds() - t0) / trained * needed * 500 / target
    return cpu, target


def naive_training_memory() -> float:
    """Baseline peak RSS (MiB) of a fresh worker that imports attnsvm and trains 1 seed."""
    inst = make_instances(DatasetConfig(), [0])
    return parallel(
        [("train", (inst, ParameterizationConfig(), OptimizerConfig(steps=10)))], 1
    ).peak_mib


def experiment_benches(quick: bool, names: tuple[str, ...] | None = None) -> dict:
    """experiment -> its entry's ``bench_cases(quick)`` ({case: {"batched", "alone", ...}}),
    for every built-in experiment (or those of ``names``) that declares it, in registry order."""
    names = builtin_names() if names is None else names
    cases = {n: entry(n).bench_cases for n in names}
    return {n: run(quick) for n, run in cases.items() if callable(run)}
