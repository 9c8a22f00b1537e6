"""Whole-experiment row of experiment ``multitoken`` for ``python -m attnsvm.bench``: the real
experiment (sweeps/multitoken.yaml: ReLU head, published filters, 2001 steps) measured at a
small accepted target per d and scaled to the sweep's 500 accepted per d.

    from .bench import bench_jobs
    bench_jobs(quick=True, bench=JOB_BENCH)   # [{"key": "sweep", "what": ..., "cpu": ...}]

``bench`` (attnsvm/bench/experiment_cases.py's JobBench) composes, runs and times: the bench
hands its tools down, so this module imports nothing above the experiments.
"""

from __future__ import annotations

MULTITOKEN_D = [4, 6, 8, 10]
ACCEPTED = 500  # per d, in sweeps/multitoken.yaml


def sweep_cpu(quick: bool, bench) -> tuple[float, int]:
    """CPU seconds of the sweep at ``ACCEPTED`` per d, from a run at a small target per d: the
    cost per trained seed times the seeds the acceptances need (the rows up to the last accepted
    seed, scaled by ACCEPTED / target). Seeds are drawn in batches of 250, so the last batch's
    overshoot is charged per trained seed, not to the estimate."""
    target, batch = (5, 250) if quick else (25, 250)
    cpu = 0.0
    for d in MULTITOKEN_D:
        overrides = [
            "+sweeps=multitoken",
            f"dataset.d={d}",
            f"multitoken.target_accepted={target}",
            f"batch_size={batch}",
        ]
        cfg = bench.compose(overrides)
        t0 = bench.cpu_seconds()
        needed = len(bench.run_job(cfg).runs)  # seeds up to the target-th accepted one
        trained = -(-needed // batch) * batch
        cpu += (bench.cpu_seconds() - t0) / trained * needed * ACCEPTED / target
    return cpu, target


def bench_jobs(quick: bool, bench) -> list[dict]:
    """One row: the estimate's CPU seconds, and its wall on 2 cores (CPU / 2)."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1):
        cpu, target = sweep_cpu(quick, bench)
    return [
        {
            "key": "sweep",
            "what": f"multitoken sweep: {ACCEPTED} accepted per d, {len(MULTITOKEN_D)} values of "
            f"d (measured at {target} per d, scaled; wall: CPU / 2 cores)",
            "target": "<= 5 min",
            "wall": cpu / 2,
            "cpu": cpu,
        }
    ]
