"""The bench case of rankdyn (for ``python -m attnsvm.bench``): its training loop with every seed
of a job in one batch against one seed at a time, seed-runs per CPU second.

    from .bench import bench_rankdyn
    bench_rankdyn(quick=True)   # {"batched": ..., "alone": ..., "ratio": ...}
"""

from __future__ import annotations

import json
import resource
import time

from attnsvm.data.dataset_config import DatasetConfig
from attnsvm.data.generators import make_instances
from attnsvm.runtime import limit_threads
from attnsvm.train.heads import LinearHead

from .config import Config
from .dynamics import train_rank


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _train_all(insts: list, cfg: Config) -> float:
    """CPU seconds to train every batch of ``insts``."""
    c0 = _cpu()
    for inst in insts:
        train_rank(inst, LinearHead(inst), cfg)
    return _cpu() - c0


def bench_rankdyn(quick: bool) -> dict:
    """(K, Q) plain GD from alpha = 1e-3 at (6, 8, 10), 2000 steps (1000 quick), one thread:
    R seeds batched vs a few seeds one at a time; the same numbers either way (tested)."""
    R, alone = (16, 2) if quick else (64, 8)
    cfg = Config(alpha=1e-3, steps=1000 if quick else 2000)
    data = DatasetConfig(n=cfg.n, T=cfg.T, d=cfg.d)
    with limit_threads(1):
        t0 = time.perf_counter()
        batched = _train_all([make_instances(data, list(range(R)))], cfg)
        one = _train_all([make_instances(data, [s]) for s in range(alone)], cfg)
        wall = time.perf_counter() - t0
    out = {"batched": R / batched, "alone": alone / one, "seeds": R, "steps": cfg.steps}
    return {**out, "ratio": out["batched"] / out["alone"], "wall": wall}


def bench_cases(quick: bool) -> dict:
    """Its case of ``python -m attnsvm.bench``: its training loop, all seeds in one batch vs
    one seed at a time."""
    r = bench_rankdyn(quick)
    return {f"(K,Q) plain GD from α=1e-3 at (6,8,10), {r['steps']} steps": r}


if __name__ == "__main__":  # python -m attnsvm.experiments.rankdyn.bench > rankdyn_bench.json
    print(json.dumps({"rankdyn": bench_rankdyn(quick=True)}, indent=2))
