"""Bench case of experiment ``icl`` (for ``python -m attnsvm.bench``): seed-runs per CPU
second of one job with R seeds batched against one job per seed, one thread.

    from .bench import bench_icl
    bench_icl(quick=True)   # {'merged': {'batched': ..., 'alone': ..., 'ratio': ...}, ...}
"""

from __future__ import annotations

import resource
import time
from types import SimpleNamespace

import torch

from .config import Config
from .job import run_job


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _cpu_of(cfg: Config, seed_groups: list[tuple[int, int]]) -> float:
    """CPU seconds of one job per (first seed, seeds) group."""
    c0 = _cpu()
    for seed, seeds in seed_groups:
        run_job(SimpleNamespace(seed=seed, seeds=seeds, dtype="float64", device="cpu", icl=cfg))
    return _cpu() - c0


def bench_icl(quick: bool, parameterizations=("merged", "structured")) -> dict:
    """At the defaults (d=5, N=20, one layer, fresh prompts; 200 steps when quick): R seeds in
    one job vs ``alone`` jobs of one seed each, per parameterization."""
    R, alone = (8, 2) if quick else (32, 4)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    out = {}
    try:
        for kind in parameterizations:
            cfg = Config(parameterization=kind, steps=200 if quick else Config.steps)
            batched = R / _cpu_of(cfg, [(0, R)])
            single = alone / _cpu_of(cfg, [(s, 1) for s in range(alone)])
            out[kind] = {"batched": batched, "alone": single, "ratio": batched / single}
    finally:
        torch.set_num_threads(threads)
    return out


def bench_cases(quick: bool) -> dict:
    """Its cases of ``python -m attnsvm.bench``: the default job (d=5, N=20, one layer), R seeds
    in one job vs one job per seed."""
    return {f"{kind} A, default job": r for kind, r in bench_icl(quick).items()}


if __name__ == "__main__":
    t0 = time.perf_counter()
    for kind, r in bench_icl(quick=True).items():
        print(
            f"icl {kind}: {r['batched']:.2f} seed-runs per CPU s batched, {r['alone']:.2f} alone,"
        )
        print(f"  ratio {r['ratio']:.1f}x ({time.perf_counter() - t0:.0f} s)")
