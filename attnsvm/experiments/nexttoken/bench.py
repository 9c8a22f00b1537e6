"""Whole-experiment rows of experiment ``nexttoken`` for ``python -m attnsvm.bench``: the two
published notebooks' settings (10 instances, W), each one job in one worker, and the d sweep
(sweeps/nexttoken_d.yaml, cyclic and acyclic) on 2 workers.

    from .bench import bench_jobs
    bench_jobs(quick=True, bench=JOB_BENCH)   # [{"key": "global", "what": ..., ...}, ...]

``bench`` (attnsvm/bench/experiment_cases.py's JobBench) runs the jobs in timed workers: the
bench hands its tools down, so this module imports nothing above the experiments.
"""

from __future__ import annotations

from dataclasses import asdict

from attnsvm.config import OptimizerConfig
from attnsvm.data.dataset_config import DatasetConfig

from .config import Config, NexttokenRun

NEXTTOKEN_D = [2, 3, 4, 6, 8, 12, 16, 24, 32]  # sweeps/nexttoken_d.yaml


def _cfg(loss: str, lr: float, steps: int, seeds: int, **dataset) -> NexttokenRun:
    ds = {**dict(generator="nexttoken", n=6, T=4, d=8, K=6, draws="published"), **dataset}
    return NexttokenRun(
        experiment="nexttoken",
        seeds=seeds,
        dataset=DatasetConfig(**ds),
        nexttoken=Config(loss=loss),
        optimizer=OptimizerConfig(lr=lr, steps=steps, checkpoint_every=20 if seeds == 10 else 100),
    )


def bench_jobs(quick: bool, bench) -> list[dict]:
    """The notebooks' jobs and the d sweep: wall, CPU, peak memory (``bench.parallel``)."""
    seeds = 20 if quick else 100
    sweep = [
        _cfg("nll", 0.01, 4000, seeds, d=d, draws="per_seed", graphs=g)
        for d in NEXTTOKEN_D
        for g in ("cyclic", "acyclic")
    ]
    timings = {
        "global": bench.parallel([("jobs", [_cfg("nll", 0.01, 4000, 10)])], workers=1),
        "local": bench.parallel(
            [("jobs", [_cfg("lsq2", 0.1, 2000, 10, notebook="local")])], workers=1
        ),
        "d_sweep": bench.parallel([("jobs", part) for part in bench.split(sweep, 2)]),
    }
    what = {
        "global": "nexttoken global notebook: 10 instances, nll, 4000 steps, 1 worker",
        "local": "nexttoken local notebook: 10 instances, lsq2, 2000 steps, 1 worker",
        "d_sweep": f"nexttoken d sweep: 9 d x 2 graph kinds x {seeds} instances, 2 workers",
    }
    target = {"global": "seconds", "local": "seconds", "d_sweep": "a few min"}
    return [
        {"key": key, "what": what[key], "target": target[key], **asdict(t)}
        for key, t in timings.items()
    ]
