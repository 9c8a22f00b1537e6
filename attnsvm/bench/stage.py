"""The bench's SVM-stage and job-start rows: what a job pays after training, per seed.

At each size the same instances are trained (the default gd step rule, fused engine, one
thread) and their SVMs at alpha = opt solved three ways: the reference (one seed at a time:
svm.w_mm, and the nuclear interior point on a batch of one), batched on one worker
(norms.solve_spread, workers=1) and batched on every core (workers=os.cpu_count()). The
batched answers are checked against the reference (statuses, 1 - corr) and the N-worker bits
against the 1-worker bits. Training and each batched stage count the least wall of up to
three runs within 20 s (timing.best_wall: neighbours on a shared machine only slow a run), the
threads job the least of two. The job-start row times whole processes: ``python -c "import
torch"`` against ``python -m attnsvm.run`` (the default job), the best of three each.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

import numpy as np

from attnsvm.bench.timing import best_wall, parallel_ceiling
from attnsvm.composition import DatasetConfig
from attnsvm.config import HeadConfig, OptimizerConfig, ParameterizationConfig, SolverConfig
from attnsvm.config.enums import Engine
from attnsvm.data.generators import make_instances
from attnsvm.runtime import limit_threads
from attnsvm.svm import norms
from attnsvm.svm import solve as svm
from attnsvm.svm.norm_names import FROBENIUS, NUCLEAR
from attnsvm.svm.nuclear_ipm import LARGE_M
from attnsvm.train.heads import make_head
from attnsvm.train.loop import train

SIZES = {  # (n, T, d): seeds (full, quick)
    (6, 8, 10): (256, 64),
    (64, 16, 64): (8, 2),
    (100, 32, 128): (2, 2),
}


def _reference(problems: list, cfg: SolverConfig) -> list[dict]:
    """One seed at a time: the exact Frobenius dual, then the interior point on a batch of one."""
    out = []
    for p in problems:
        fro = svm.w_mm(*p, cfg)
        if fro.ok:
            nuc = svm.w_mm_nuc_batch([p], cfg, [True], [fro])[0]
        else:
            nuc = norms.infeasible(NUCLEAR)
        out.append({FROBENIUS: fro, NUCLEAR: nuc})
    return out


def _worst(got: list[dict], want: list[dict]) -> tuple[int, float]:
    """Status disagreements and the largest 1 - corr of W between two answers."""
    diffs, worst = 0, 0.0
    for a, b in zip(got, want, strict=True):
        for name in (FROBENIUS, NUCLEAR):
            diffs += a[name].status != b[name].status
            if a[name].ok and b[name].ok:
                x, y = a[name].W, b[name].W
                worst = max(worst, 1 - float(np.sum(x * y) / np.linalg.norm(x) / np.linalg.norm(y)))
    return diffs, worst


def _same_bits(a: list[dict], b: list[dict]) -> bool:
    return all(
        (x[k].W is None and y[k].W is None) or np.array_equal(x[k].W, y[k].W)
        for x, y in zip(a, b, strict=True)
        for k in x
    )


def svm_stage(quick: bool) -> list[dict]:
    """One row per size: seconds per seed of training and of the SVMs each way, each under the
    thread limits a job of that many ``threads`` sets (runtime.limit_threads): numpy's BLAS is
    not left at its default, one thread per core, which a job never runs (on two busy cores a
    (960, 64) SVD took 20x longer on two BLAS threads than on one)."""
    rows = []
    for (n, T, d), counts in SIZES.items():
        with limit_threads(1):
            rows.append(_stage_row((n, T, d), counts[1] if quick else counts[0], quick))
    return rows


def _stage_row(size: tuple, seeds: int, quick: bool) -> dict:
    """``svm_stage``'s row of one size, its 1-worker parts under one thread."""
    (n, T, d), cfg, workers = size, SolverConfig(), os.cpu_count() or 1
    inst = make_instances(DatasetConfig(n=n, T=T, d=d), list(range(seeds)))
    ocfg = OptimizerConfig(steps=300 if quick else 2000)
    head, pcfg = make_head(HeadConfig(), inst), ParameterizationConfig()
    trained, _ = best_wall(train, inst, head, pcfg, ocfg, engine=Engine.fused)
    trained *= 2000 / ocfg.steps
    X, Z, opt = inst.X.double().numpy(), inst.Z.double().numpy(), inst.opt.numpy()
    problems = [(X[r], Z[r], opt[r]) for r in range(seeds)]
    make = lambda: norms.make_norms(cfg)  # noqa: E731
    t_one, one = best_wall(norms.solve_spread, make, problems, cfg, 1)
    alone = n * (T - 1) >= LARGE_M  # solved one instance at a time either way: one route
    t0 = time.perf_counter()
    ref = one if alone else _reference(problems, cfg)
    t_ref = t_one if alone else time.perf_counter() - t0
    with limit_threads(workers):  # as a job of threads=workers
        t_all, many = best_wall(norms.solve_spread, make, problems, cfg, workers)
    diffs, worst = _worst(one, ref)
    return dict(
        size=(n, T, d), seeds=seeds, workers=workers, train=trained / seeds,
        reference=t_ref / seeds, batched=t_one / seeds, spread=t_all / seeds,
        one_route=alone,
        status_diffs=diffs, one_minus_corr=worst, same_bits=_same_bits(one, many),
        batched_paths=sum(s[FROBENIUS].path == "batched" for s in one),
    )  # fmt: skip


def bytecode_env() -> dict:
    """This process's environment as Python's default has it: bytecode caches written and
    read ($PYTHONDONTWRITEBYTECODE dropped), for the processes whose start a row measures."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def job_start(repeats: int = 3, quick: bool = False) -> dict:
    """Best-of-``repeats`` wall seconds of ``import torch`` and of the default job's process,
    as Python runs them by default: bytecode cached (an untimed first run of each writes the
    caches, and $PYTHONDONTWRITEBYTECODE is dropped for the measured processes: where it is
    set, attnsvm's own modules are compiled anew in every process); and a (K,Q) job on one
    thread against all cores (``threads_job``)."""
    env = bytecode_env()

    def best(cmd: list[str], runs: int) -> float:
        times = []
        for _ in range(runs):
            with tempfile.TemporaryDirectory() as tmp:
                t0 = time.perf_counter()
                subprocess.run(
                    cmd + ([f"hydra.run.dir={tmp}/job"] if "attnsvm.run" in cmd else []),
                    check=True, capture_output=True, cwd=tmp, env=env,
                )  # fmt: skip
                times.append(time.perf_counter() - t0)
        return min(times)

    torch_cmd = [sys.executable, "-c", "import torch"]
    job_cmd = [sys.executable, "-m", "attnsvm.run"]
    best(torch_cmd, 1), best(job_cmd, 1)  # the bytecode caches written, as a first run does
    torch_s, job_s = best(torch_cmd, repeats), best(job_cmd, repeats)
    out = {"import_torch": torch_s, "default_job": job_s, "ratio": job_s / torch_s}
    out["bytecode"] = "cached (Python's default)"
    return {**out, "threads": threads_job(64 if quick else 512)}


def threads_job(seeds: int) -> dict:
    """A (K,Q) job of ``seeds`` seeds in-process at threads=1 and threads=all cores: wall
    seconds each, and whether their rows are the same bits (timing columns aside)."""
    from attnsvm.composition import RunConfig
    from attnsvm.job import run_job

    workers, walls, runs = os.cpu_count() or 1, {}, {}
    for threads in (1, workers):
        cfg = RunConfig(seeds=seeds, threads=threads, parameterization=ParameterizationConfig(
            kind="kq"))  # fmt: skip
        walls[threads], res = best_wall(run_job, cfg, repeats=2)
        runs[threads] = res.runs.drop(columns=[c for c in res.runs if "seconds" in c])
    same = runs[1].equals(runs[workers])  # threads is no result column (composition.identity)
    return {"seeds": seeds, "workers": workers, "one": walls[1], "all": walls[workers],
            "speedup": walls[1] / walls[workers], "identical": bool(same),
            "ceiling": parallel_ceiling(workers)}  # fmt: skip


def emit_stage(emit, rows: list[dict], start: dict) -> None:
    """The SVM-stage table and the job-start line."""
    emit("SVM stage per seed (Frobenius + nuclear SVM at alpha = opt; wall seconds per seed; "
         "training and the batched stages the least of up to 3 runs within 20 s):")  # fmt: skip
    emit()
    emit("| (n,T,d) | seeds | training | reference | batched, 1 worker | batched, "
         "all workers | SVMs / training (1 worker) | reference / batched | 1 / all workers "
         "| checks |")  # fmt: skip
    emit("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        checks = (
            ("one route (per instance above LARGE_M constraints); " if r["one_route"] else "")
            + f"{r['status_diffs']} status diffs, 1-corr <= {r['one_minus_corr']:.1e}, "
            f"bits {'identical' if r['same_bits'] else 'DIFFER'} across workers, "
            f"{r['batched_paths']}/{r['seeds']} Frobenius batched"
        )
        emit(
            f"| {r['size']} | {r['seeds']} | {r['train'] * 1e3:.2f} ms | "
            f"{r['reference'] * 1e3:.2f} ms | {r['batched'] * 1e3:.2f} ms | "
            f"{r['spread'] * 1e3:.2f} ms ({r['workers']}) | {r['batched'] / r['train']:.2f}x | "
            f"{r['reference'] / r['batched']:.2f}x | {r['batched'] / r['spread']:.2f}x | {checks} |"
        )
    emit()
    emit(
        f"Job start: `python -c 'import torch'` {start['import_torch']:.2f} s, the default job's "
        f"whole process (`python -m attnsvm.run`) {start['default_job']:.2f} s: "
        f"{start['ratio']:.2f}x (best of 3 each, bytecode cached as Python's default)."
    )
    t = start.get("threads")
    if t:
        emit(
            f"A {t['seeds']}-seed (K,Q) job in-process: threads=1 {t['one']:.2f} s, "
            f"threads={t['workers']} {t['all']:.2f} s (the least of 2 each): "
            f"{t['speedup']:.2f}x; rows "
            f"{'identical' if t['identical'] else 'DIFFER'}. This machine's ceiling: "
            f"{t['workers']} processes side by side run {t['ceiling']['python']:.2f}x one's "
            f"throughput of pure Python, {t['ceiling']['blas']:.2f}x of BLAS."
        )
    emit()
