"""The bench case of ocr (for ``python -m attnsvm.bench``): its training loop with every seed of
a job in one batch against one seed at a time, seed-runs per CPU second, one thread (the same
numbers either way: tests/test_ocr.py).

    from .bench import bench_ocr
    bench_ocr(quick=True)   # {"batched": ..., "alone": ..., "ratio": ...}
"""

from __future__ import annotations

import json
import resource
import time

from attnsvm.runtime import limit_threads

from .config import Config
from .train import train


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _train_all(groups: list[list[int]], cfg: Config) -> float:
    """CPU seconds to train every group of seeds."""
    c0 = _cpu()
    for seeds in groups:
        train(cfg, seeds)
    return _cpu() - c0


def bench_ocr(quick: bool) -> dict:
    """The factorized model at the defaults, 100 steps (the default's when not quick): R seeds
    batched vs a few seeds one at a time."""
    R, alone = (8, 2) if quick else (16, 4)
    cfg = Config(steps=100 if quick else Config.steps, checkpoint_every=50)
    with limit_threads(1):
        t0 = time.perf_counter()
        batched = _train_all([list(range(R))], cfg)
        one = _train_all([[s] for s in range(alone)], cfg)
        wall = time.perf_counter() - t0
    out = {"batched": R / batched, "alone": alone / one, "seeds": R, "steps": cfg.steps}
    return {**out, "ratio": out["batched"] / out["alone"], "wall": wall}


def bench_cases(quick: bool) -> dict:
    """Its case of ``python -m attnsvm.bench``: its training loop, all seeds in one batch vs
    one seed at a time."""
    r = bench_ocr(quick)
    return {f"factorized W_O W_V, AdamW at the defaults, {r['steps']} steps": r}


if __name__ == "__main__":  # python -m attnsvm.experiments.ocr.bench
    print(json.dumps({"ocr": bench_ocr(quick=True)}, indent=2))
