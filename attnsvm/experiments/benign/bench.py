"""The bench case of benign (for ``python -m attnsvm.bench``): the default two_token training
with every seed of a job in one batch against one seed at a time, seed-runs per CPU second.

    from .bench import bench_benign
    bench_benign(quick=True)   # {"batched": ..., "alone": ..., "ratio": ...}
"""

from __future__ import annotations

import json
import resource
import time

import torch

from attnsvm.runtime import limit_threads

from .config import Config
from .job import _draw
from .train import train_benign


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _train(cfg: Config, seeds: list[int]) -> float:
    """CPU seconds to train ``seeds`` as one batch."""
    train, test, gens = _draw(cfg, seeds, torch.float64, "cpu")
    c0 = _cpu()
    train_benign(cfg, train, test, gens)
    return _cpu() - c0


def bench_benign(quick: bool) -> dict:
    """The default two_token job (its n and d: Config's defaults, returned), 50 steps (100
    full), one thread: R seeds batched vs a few one at a time; the same numbers either way
    (tests/test_benign.py)."""
    R, alone = (8, 2) if quick else (32, 4)
    cfg = Config(steps=50 if quick else 100, test=200)
    with limit_threads(1):
        t0 = time.perf_counter()
        batched = _train(cfg, list(range(R)))
        one = sum(_train(cfg, [s]) for s in range(alone))
        wall = time.perf_counter() - t0
    out = {"batched": R / batched, "alone": alone / one, "seeds": R, "steps": cfg.n_steps}
    out |= {"n": cfg.n, "d": cfg.d}  # the case's label names them (never a stale copy)
    return {**out, "ratio": out["batched"] / out["alone"], "wall": wall}


def bench_cases(quick: bool) -> dict:
    """Its case of ``python -m attnsvm.bench``: the default two_token job, all seeds in one
    batch vs one seed at a time."""
    r = bench_benign(quick)
    return {f"two_token, default job (n={r['n']}, d={r['d']}), {r['steps']} steps": r}


if __name__ == "__main__":  # python -m attnsvm.experiments.benign.bench
    print(json.dumps({"benign": bench_benign(quick=True)}, indent=2))
