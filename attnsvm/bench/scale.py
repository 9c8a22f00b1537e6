"""Scale benchmarks (issue 16): whole jobs at transformer-like sizes, against the routes the
SVMs took before (every instance through the batched sequential interior point on all its
constraints, the Frobenius SVM by Lawson-Hanson NNLS), in the same run.

    python -m attnsvm.bench.scale     # alone (about 15 minutes); python -m attnsvm.bench runs it

Each job runs in a fresh spawned process (threads=2: training and the two SVM workers use both
cores), reporting wall time and peak resident memory (ru_maxrss). The old routes are the same
code with the large-instance thresholds set beyond reach (nuclear_ipm.LARGE_M, WORKING_SET_M), so
the ratio isolates them; the old cost at (100, 32, 128) is measured on fewer seeds and scaled by
seed count (training and SVMs are per seed), which the table says.
"""

from __future__ import annotations

import resource
import time
from multiprocessing import get_context

from attnsvm.composition import RunConfig

# (n, T, d), seeds, target wall (s), seeds the old routes are timed on (then scaled)
TARGETS = [((64, 16, 64), 16, 60.0, 16), ((100, 32, 128), 4, 300.0, 1)]
QUICK_TARGETS = [((64, 16, 64), 16, 60.0, 4), ((100, 32, 128), 4, 300.0, 1)]
BEYOND = 10**12


def job_config(shape: tuple[int, int, int], seeds: int) -> RunConfig:
    cfg = RunConfig(seeds=seeds, threads=2)
    cfg.dataset.n, cfg.dataset.T, cfg.dataset.d = shape
    return cfg


def _run(args: tuple) -> dict:
    """One job in this fresh process: wall, CPU, peak RSS, statuses. ``old``: before's routes."""
    from attnsvm.job import run_job
    from attnsvm.svm import nuclear_ipm as sdp

    shape, seeds, old = args
    if old:
        sdp.LARGE_M = sdp.WORKING_SET_M = BEYOND
    usage = lambda: resource.getrusage(resource.RUSAGE_SELF)  # noqa: E731
    t0, u0 = time.perf_counter(), usage()
    runs = run_job(job_config(shape, seeds)).runs
    u1 = usage()
    return {
        "wall": time.perf_counter() - t0,
        "cpu": u1.ru_utime + u1.ru_stime - u0.ru_utime - u0.ru_stime,
        "peak_mib": u1.ru_maxrss / 1024,
        "seeds": seeds,
        "status": runs.status.value_counts().to_dict(),
        "svm_seconds": float(runs.svm_seconds.sum()),
        "train_seconds": float(runs.train_seconds.max()),
    }


def _fresh(args: tuple) -> dict:
    with get_context("spawn").Pool(processes=1, maxtasksperchild=1) as pool:
        return pool.apply(_run, (args,))


def measure(quick: bool = False) -> list[dict]:
    """Every target: our job, then the old routes on ``old_seeds`` seeds, scaled."""
    rows = []
    for shape, seeds, target, old_seeds in QUICK_TARGETS if quick else TARGETS:
        ours = _fresh((shape, seeds, False))
        before = _fresh((shape, old_seeds, True))
        before_wall = before["wall"] * seeds / old_seeds
        rows.append(
            {"shape": list(shape), "seeds": seeds, "target_s": target, "ours": ours,
             "before": before, "before_wall_scaled": before_wall,
             "ratio": before_wall / ours["wall"]}
        )  # fmt: skip
    return rows


def emit_table(emit, rows: list[dict]) -> None:
    """The scale table of the bench report."""
    emit("## Large jobs (one fresh process, threads=2, training + the four SVMs per seed)")
    emit()
    emit("| (n,T,d) | seeds | target | wall | peak RSS | seed status | before (same run) | ratio |")
    emit("|---|---|---|---|---|---|---|---|")
    for r in rows:
        o, b = r["ours"], r["before"]
        scaled = "" if b["seeds"] == r["seeds"] else f" (measured on {b['seeds']}, scaled)"
        status = ", ".join(f"{k} {v}" for k, v in sorted(o["status"].items()))
        emit(
            f"| {tuple(r['shape'])} | {r['seeds']} | <= {r['target_s']:.0f} s | {o['wall']:.1f} s "
            f"| {o['peak_mib']:.0f} MiB | {status} | {r['before_wall_scaled']:.0f} s{scaled} "
            f"| {r['ratio']:.1f}× |"
        )
    emit()


def main() -> None:
    rows = measure()
    emit_table(print, rows)


if __name__ == "__main__":
    main()
