"""The bench's whole-experiment cases: the rank and local experiments in fresh worker
processes, the idle worker's memory, and each registered experiment's own cases (its entry's
``bench_cases(quick)``: batched vs one seed at a time; ``bench_jobs(quick, JOB_BENCH)``: whole
jobs of it, attnsvm/experiments/__init__.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from attnsvm.api import compose
from attnsvm.bench.svm_cases import RANK_D, RANK_NT
from attnsvm.bench.timing import Timing, cpu_seconds, parallel, split
from attnsvm.composition import DatasetConfig, RunConfig
from attnsvm.config import OptimizerConfig, ParameterizationConfig
from attnsvm.config.enums import Parameterization
from attnsvm.data.generators import make_instances
from attnsvm.experiments import builtin_names, entry
from attnsvm.job import run_job


@dataclass(frozen=True)
class JobBench:
    """What an experiment's ``bench_jobs(quick, bench)`` times its whole jobs with, handed down
    by the bench: an experiment imports nothing of the layers above it (the bench, the API)."""

    parallel: Callable  # (jobs, workers) -> Timing: ("jobs", [run configs]) in fresh workers
    split: Callable  # (items, k) -> k round-robin parts
    cpu_seconds: Callable  # () -> this process's CPU seconds so far
    compose: Callable  # (overrides) -> the run config (attnsvm.api.compose)
    run_job: Callable  # (run) -> JobResult (attnsvm.job.run_job)


JOB_BENCH = JobBench(parallel, split, cpu_seconds, compose, run_job)


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


def experiment_jobs(quick: bool, names: tuple[str, ...] | None = None) -> dict:
    """experiment -> its entry's ``bench_jobs(quick, JOB_BENCH)`` (rows of whole jobs: what,
    target, wall, CPU and, where measured, wall with worker start and peak memory), for every
    built-in experiment (or those of ``names``) that declares it, in registry order."""
    names = builtin_names() if names is None else names
    jobs = {n: entry(n).bench_jobs for n in names}
    return {n: run(quick, JOB_BENCH) for n, run in jobs.items() if run is not None}
