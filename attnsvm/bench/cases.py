"""Benchmarks: attnsvm against the naive way of doing the same math, and whole experiments.

    python -m attnsvm.bench           # published settings, minutes; writes docs/benchmarks.md
    python -m attnsvm.bench --quick   # smaller samples, scaled up; about two minutes

The naive baselines are what the published notebooks do: one seed at a time, an nn-style model,
``loss.backward()``, normalize, step (autograd's gradient, the cancellation-prone form of
PAPER.md §6.1); and one cvxpy model per SVM built with a Python loop over the constraints
(i, t), in the full d x d space, default solver settings. Ratios come from the same process,
naive and ours interleaved. Whole experiments run in fresh worker processes, one per core as
the joblib launcher would, each reporting its CPU time and peak resident memory (ru_maxrss).
Benchmarks are never unit tests; tests/test_speed_paths.py checks that the fast paths agree.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import time
from dataclasses import dataclass, field
from multiprocessing import get_context
from pathlib import Path

import cvxpy as cp
import numpy as np
import torch
from threadpoolctl import threadpool_limits

from attnsvm.bench import scale as bench_scale
from attnsvm.config import (
    DatasetConfig,
    Engine,
    HeadConfig,
    NexttokenConfig,
    OptimizerConfig,
    Parameterization,
    ParameterizationConfig,
    RunConfig,
    SolverConfig,
)
from attnsvm.data.generators import make_instances
from attnsvm.experiments.gd.pipeline import run_job
from attnsvm.svm import solve as svm
from attnsvm.train import fused
from attnsvm.train.heads import make_head
from attnsvm.train.loop import train

RANK_NT = [(5, 5), (10, 5), (15, 5), (5, 10), (5, 15)]  # n in {5,10,15} @ T=5, T in {5,10,15} @ n=5
RANK_D = [1, 2, 3, 4, 5, 10, 15, 20]
MULTITOKEN_D = [4, 6, 8, 10]
NEXTTOKEN_D = [2, 3, 4, 6, 8, 12, 16, 24, 32]  # sweeps/nexttoken_d.yaml
ENGINES = (Engine.fused, Engine.torch)


# ---------------------------------------------------------------- naive baselines
class NaiveAttention(torch.nn.Module):
    """The published notebooks' model: W (or K, Q) as bias-free nn.Linear, linear head v."""

    def __init__(self, d: int, kq: bool):
        super().__init__()
        self.kq = kq
        if kq:
            self.K = torch.nn.Linear(d, d, bias=False)
            self.Q = torch.nn.Linear(d, d, bias=False)
        else:
            self.W = torch.nn.Linear(d, d, bias=False)

    def forward(self, X, Z, v):  # X (n, T, d), Z (n, d), v (d,)
        Wz = self.K(self.Q(Z)) if self.kq else self.W(Z)  # (n, d) rows (W z_i)^T
        s = torch.softmax(torch.einsum("ntd,nd->nt", X, Wz), dim=-1)
        return torch.einsum("nt,ntd,d->n", s, X, v)


def naive_train(X, Y, Z, v, kq: bool, steps: int, lr: float = 0.1, eps: float = 2.22e-16):
    """One seed, autograd, normalized GD: p <- p - lr * grad / (||grad|| + eps)."""
    model = NaiveAttention(X.shape[-1], kq).double()
    for _ in range(steps):
        loss = torch.log1p(torch.exp(-Y * model(X, Z, v))).mean()
        model.zero_grad()
        loss.backward()
        with torch.no_grad():
            for p in model.parameters():
                p -= lr * p.grad / (p.grad.norm() + eps)
    return model


def naive_svm(X: np.ndarray, Z: np.ndarray, alpha: np.ndarray, norm: str):
    """Per-constraint cvxpy model in the full d x d space, default solver settings."""
    n, T, d = X.shape
    W = cp.Variable((d, d))
    cons = []
    for i in range(n):
        for t in range(T):
            if t != alpha[i]:
                cons.append((X[i, alpha[i]] - X[i, t]) @ W @ Z[i] >= 1)
    obj = cp.norm(W, "fro") if norm == "fro" else cp.normNuc(W)
    prob = cp.Problem(cp.Minimize(obj), cons)
    prob.solve()
    return prob.status, W.value


# ---------------------------------------------------------------- measurement helpers
@dataclass
class Timing:
    wall: float  # in-process compute (the slowest worker), imports and process start excluded
    cpu: float
    peak_mib: float = float("nan")
    outer: float = float("nan")  # wall including worker start and imports


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _timed(fn, *args, **kwargs) -> Timing:
    t0, c0 = time.perf_counter(), _cpu()
    fn(*args, **kwargs)
    return Timing(time.perf_counter() - t0, _cpu() - c0)


def _worker(job: tuple) -> Timing:
    """Run one experiment part in this (fresh) process with one thread; time and peak memory."""
    kind, payload = job
    torch.set_num_threads(1)
    with threadpool_limits(limits=1):
        t0, c0 = time.perf_counter(), _cpu()
        if kind == "jobs":
            for cfg in payload:
                run_job(cfg)
        elif kind == "train":
            inst, pcfg, ocfg = payload
            train(inst, make_head(HeadConfig(), inst), pcfg, ocfg)
        wall, cpu = time.perf_counter() - t0, _cpu() - c0
    return Timing(wall, cpu, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)


def parallel(jobs: list[tuple], workers: int = 2) -> Timing:
    """Jobs in ``workers`` fresh spawned processes, one thread each: wall, summed CPU, max peak."""
    t0 = time.perf_counter()
    with get_context("spawn").Pool(processes=workers, maxtasksperchild=1) as pool:
        parts = pool.map(_worker, jobs, chunksize=1)
    return Timing(
        max(p.wall for p in parts),
        sum(p.cpu for p in parts),
        max(p.peak_mib for p in parts),
        time.perf_counter() - t0,
    )


def _split(items: list, k: int) -> list[list]:
    return [items[i::k] for i in range(k)]


# ---------------------------------------------------------------- benchmarks
def _naive_runs(inst, seeds, kq: bool, steps: int) -> None:
    for s in seeds:
        naive_train(inst.X[s], inst.Y[s], inst.Z[s], inst.v[s], kq, steps)


def _each(fn, probs, *args) -> list:
    return [fn(*pr, *args) for pr in probs]


def bench_training_ratio(quick: bool) -> dict:
    """Per seed-run CPU time at (6,8,10): naive autograd loop vs each engine, interleaved."""
    steps = 300 if quick else 2000
    n_naive, n_ours = (2, 100) if quick else (4, 100)
    out = {}
    for kind in (Parameterization.w, Parameterization.kq):
        inst = make_instances(DatasetConfig(), list(range(n_ours)))
        head = make_head(HeadConfig(), inst)
        pcfg, ocfg = ParameterizationConfig(kind=kind), OptimizerConfig(steps=steps)
        times = {"naive": [], **{e: [] for e in ENGINES}}
        for rep in range(2):
            seeds = range(rep * n_naive, (rep + 1) * n_naive)
            t = _timed(_naive_runs, inst, seeds, kind == Parameterization.kq, steps)
            times["naive"].append(t.cpu / n_naive)
            for e in ENGINES:
                times[e].append(_timed(train, inst, head, pcfg, ocfg, engine=e).cpu / n_ours)
        out[kind.value] = {k: statistics.median(v) * 2000 / steps for k, v in times.items()}
    return out


def bench_svm_ratio(quick: bool) -> dict:
    """Per-SVM CPU time, naive per-constraint full-space cvxpy vs ours, same instances."""
    out = {}
    k = 10 if quick else 20  # ours solves the k nuclear SVMs as one batch, as a job does
    scfg = SolverConfig()
    for n, T, d in [(6, 8, 10), (15, 5, 20)]:
        inst = make_instances(DatasetConfig(n=n, T=T, d=d), list(range(k)))
        probs = [(inst.X[r].numpy(), inst.Z[r].numpy(), inst.opt[r].numpy()) for r in range(k)]
        _each(naive_svm, probs[:1], "nuc")  # warm-up: cvxpy's first-call costs
        res = {}
        for norm in ("fro", "nuc"):
            naive = _timed(_each, naive_svm, probs, norm).cpu / k
            if norm == "fro":
                ours = _timed(_each, svm.w_mm, probs, scfg).cpu / k
            else:
                ours = _timed(svm.w_mm_nuc_batch, probs, scfg).cpu / k
            res[norm] = (naive, ours)
        out[(n, T, d)] = res
    return out


def naive_rank_estimate(quick: bool) -> float:
    """CPU seconds the naive way would take for the rank experiment (sampled, extrapolated)."""
    per_point = 1
    ds = [2, 10, 20] if quick else RANK_D
    total = 0.0
    for n, T in RANK_NT:
        per_d = []
        for d in ds:
            inst = make_instances(DatasetConfig(n=n, T=T, d=d), list(range(per_point)))
            X, Z, opt = inst.X[0].numpy(), inst.Z[0].numpy(), inst.opt[0].numpy()
            fro = _timed(_each, naive_svm, [(X, Z, opt)], "fro").cpu
            per_d.append(fro + _timed(_each, naive_svm, [(X, Z, opt)], "nuc").cpu)
        total += statistics.mean(per_d) * len(RANK_D) * 100
    return total


def rank_experiment(quick: bool) -> Timing:
    seeds = 20 if quick else 100
    cfgs = [
        RunConfig(train=False, seeds=seeds, dataset=DatasetConfig(n=n, T=T, d=d))
        for n, T in RANK_NT
        for d in RANK_D
    ]
    return parallel([("jobs", part) for part in _split(cfgs, 2)])


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
        "d_sweep": parallel([("jobs", part) for part in _split(sweep, 2)]),
    }


def _train_each(insts: list, pcfg, ocfg) -> None:
    for inst in insts:
        train(inst, make_head(HeadConfig(), inst), pcfg, ocfg, train_head=True)


def joint_training(quick: bool) -> dict:
    """Joint training of the head (head.train=true, torch engine), W and the p-model at
    (6,8,10), 1000 NGD steps: seed-runs per CPU second, 100 seeds batched vs one at a time."""
    R, alone = (20, 4) if quick else (100, 10)
    out = {}
    for kind in (Parameterization.w, Parameterization.p):
        pcfg = ParameterizationConfig(kind=kind)
        ocfg = OptimizerConfig(steps=1000)
        inst = make_instances(DatasetConfig(), list(range(R)))
        head = make_head(HeadConfig(), inst)
        batched = _timed(train, inst, head, pcfg, ocfg, train_head=True)
        one = [make_instances(DatasetConfig(), [s]) for s in range(alone)]
        single = _timed(_train_each, one, pcfg, ocfg)
        out[kind.value] = {"batched": R / batched.cpu, "alone": alone / single.cpu}
    return out


def training_throughput(quick: bool) -> dict:
    """Seed-runs of 2000 steps per wall and per CPU second at (6,8,10), by engine and threads
    (torch threads for the torch engine; seed groups run at once for the fused one)."""
    steps = 200 if quick else 500
    out = {}
    for R in (100, 1000):
        inst = make_instances(DatasetConfig(), list(range(R)))
        head = make_head(HeadConfig(), inst)
        for kind in (Parameterization.w, Parameterization.kq):
            pcfg, ocfg = ParameterizationConfig(kind=kind), OptimizerConfig(steps=steps)
            for engine in ENGINES:
                for threads in (1, 2):
                    torch.set_num_threads(threads if engine == Engine.torch else 1)
                    t = _timed(train, inst, head, pcfg, ocfg, engine=engine, threads=threads)
                    runs = R * steps / 2000
                    out[(R, kind.value, engine.value, threads)] = (runs / t.wall, runs / t.cpu)
    torch.set_num_threads(1)
    return out


def _build_worker(steps: int) -> tuple[str, dict]:
    """Fused-engine seed-runs of 2000 steps per CPU second at (6,8,10), 1000 seeds, in a fresh
    process (so that $ATTNSVM_FUSED_BUILD picks the build)."""
    inst = make_instances(DatasetConfig(), list(range(1000)))
    head = make_head(HeadConfig(), inst)
    out = {}
    for kind in (Parameterization.w, Parameterization.kq):
        pcfg, ocfg = ParameterizationConfig(kind=kind), OptimizerConfig(steps=steps)
        t = _timed(train, inst, head, pcfg, ocfg, engine=Engine.fused)
        out[kind.value] = 1000 * steps / 2000 / t.cpu
    return fused.describe(), out


def build_throughput(quick: bool) -> dict:
    """The throughput of every kernel build this CPU runs (AVX-512 and portable, say)."""
    out = {}
    before = os.environ.get(fused.BUILD_ENV)
    for name in fused.BUILDS:
        os.environ[fused.BUILD_ENV] = name
        try:
            with get_context("spawn").Pool(processes=1) as pool:
                desc, res = pool.apply(_build_worker, (200 if quick else 500,))
        except Exception as exc:  # not built, or this CPU cannot run it
            desc, res = f"{name}: {type(exc).__name__}", {}
        finally:
            os.environ.pop(fused.BUILD_ENV)
            if before is not None:
                os.environ[fused.BUILD_ENV] = before
        if res:
            out[desc] = res
    return out


def multitoken_experiment(quick: bool) -> tuple[float, int]:
    """CPU seconds of the real multitoken experiment (sweeps/multitoken.yaml: ReLU head, published
    filters, 2001 steps) at a small accepted target per d, scaled to 500 accepted per d: the cost
    per trained seed times the seeds 500 acceptances need (the rows up to the last accepted seed,
    scaled by 500 / target). Seeds are drawn in batches of 250, so the last batch's overshoot is
    charged per trained seed, not to the estimate."""
    from hydra import compose, initialize_config_dir

    from attnsvm.config import register_configs, to_run_config

    register_configs()
    target, batch = (5, 250) if quick else (25, 250)
    cpu = 0.0
    conf = str(Path(__file__).resolve().parents[1] / "conf")
    with initialize_config_dir(config_dir=conf, version_base="1.3"):
        for d in MULTITOKEN_D:
            overrides = [
                "+sweeps=multitoken",
                f"dataset.d={d}",
                f"multitoken.target_accepted={target}",
                f"batch_size={batch}",
            ]
            cfg = to_run_config(compose("config", overrides))
            t0 = _cpu()
            needed = len(run_job(cfg).runs)  # seeds up to the target-th accepted one
            trained = -(-needed // batch) * batch
            cpu += (_cpu() - t0) / trained * needed * 500 / target
    return cpu, target


def large_svms() -> dict:
    out = {}
    scfg = SolverConfig()
    for name, (n, T, d) in [("fro", (20, 20, 1000)), ("nuc", (20, 20, 200))]:
        inst = make_instances(DatasetConfig(n=n, T=T, d=d), [0])
        X, Z, opt = inst.X[0].numpy(), inst.Z[0].numpy(), inst.opt[0].numpy()
        solve = svm.w_mm if name == "fro" else svm.w_mm_nuc
        t0, c0 = time.perf_counter(), _cpu()
        sol = solve(X, Z, opt, scfg)
        t = Timing(time.perf_counter() - t0, _cpu() - c0)
        out[name] = ((n, T, d), t, sol.status, sol.rank)
    return out


def naive_training_memory() -> float:
    """Baseline peak RSS (MiB) of a fresh worker that imports attnsvm and trains 1 seed."""
    inst = make_instances(DatasetConfig(), [0])
    return parallel(
        [("train", (inst, ParameterizationConfig(), OptimizerConfig(steps=10)))], 1
    ).peak_mib


# ---------------------------------------------------------------- report
def machine() -> str:
    cpu = next(
        (
            ln.split(":", 1)[1].strip()
            for ln in open("/proc/cpuinfo")
            if ln.startswith("model name")
        ),
        platform.processor(),
    )
    return (
        f"{os.cpu_count()} cores ({cpu}), torch {torch.__version__}, numpy {np.__version__}, "
        f"fused kernel {fused.describe()}"
    )


def load() -> str:
    return "load average " + " ".join(f"{x:.1f}" for x in os.getloadavg())


@dataclass
class _Results:
    """Everything one bench run measured: what the report's tables and the results file show."""

    train: dict  # bench_training_ratio
    svm: dict  # bench_svm_ratio
    naive_rank: float
    throughput: dict  # training_throughput
    multitoken_cpu: float
    multitoken_target: int
    large: dict  # large_svms
    builds: dict  # build_throughput
    rank: Timing
    local: Timing
    base_mem: float
    nexttoken: dict = field(default_factory=dict)  # nexttoken_experiments
    joint: dict = field(default_factory=dict)  # joint_training
    scale: list = field(default_factory=list)  # bench_scale.measure


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The bench's command line (``--help``)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller samples (about a minute)")
    ap.add_argument("--out", default="docs/benchmarks.md", help="markdown report ('' = none)")
    ap.add_argument(
        "--readme", default="", help="also rewrite this README's speed table from the results"
    )
    return ap.parse_args(argv)


def _measure(quick: bool, emit) -> _Results:
    """Run every benchmark; the ratio table is emitted as soon as it is measured (progress)."""
    with threadpool_limits(limits=1):
        tr = bench_training_ratio(quick)
        sv = bench_svm_ratio(quick)
        _emit_ratios(emit, tr, sv)
        naive_rank = naive_rank_estimate(quick)
        thr = training_throughput(quick)
        joint = joint_training(quick)
        mt_cpu, mt_target = multitoken_experiment(quick)
        big = large_svms()
    builds = build_throughput(quick)
    rank = rank_experiment(quick)
    local = local_experiment(quick)
    base_mem = naive_training_memory()
    nt = nexttoken_experiments(quick)
    scale = bench_scale.measure(quick)
    return _Results(
        tr, sv, naive_rank, thr, mt_cpu, mt_target, big, builds, rank, local, base_mem, nt, joint,
        scale,
    )  # fmt: skip


def _emit_ratios(emit, tr: dict, sv: dict) -> None:
    """The table of ours vs the naive way, training and SVMs."""
    emit("## Ours vs naive (same process, interleaved, CPU seconds)")
    emit()
    emit("| what | naive | attnsvm | speed-up |")
    emit("|---|---|---|---|")
    for k, t in tr.items():
        for e in ENGINES:
            what = f"train one seed-run, 2000 steps, (6,8,10), {k}, {e.value} engine"
            a, b = t["naive"], t[e]
            emit(f"| {what} | {a:.3f} s | {b * 1e3:.2f} ms | {a / b:.0f}x |")
    for shape, res in sv.items():
        for norm, (a, b) in res.items():
            what = f"one {norm} SVM at (n,T,d)={shape}"
            emit(f"| {what} | {a * 1e3:.1f} ms | {b * 1e3:.2f} ms | {a / b:.0f}x |")
    emit()


def _emit_experiments(emit, r: _Results, quick: bool) -> None:
    """The table of whole experiments (time, memory, the naive estimate) and the idle worker."""
    rank, local, tr = r.rank, r.local, r.train
    emit("## Whole experiments (2 worker processes, 1 thread each)")
    emit()
    emit("| experiment | target | wall | wall incl. start | CPU | peak RSS/worker | naive CPU |")
    emit("|---|---|---|---|---|---|---|")
    rseeds = "20 seeds/point (quick)" if quick else "100 seeds/point"
    lsteps = "500 steps (quick)" if quick else "2000 steps"
    emit(
        f"| rank: 8000 SVMs, {rseeds} | <= 20 s | {rank.wall:.1f} s | {rank.outer:.1f} s "
        f"| {rank.cpu:.1f} s "
        f"| {rank.peak_mib:.0f} MiB | {r.naive_rank:.0f} s |"
    )
    emit(
        f"| local: 100 seeds x (W, KQ), {lsteps}, 400 SVMs "
        f"| <= 3 s | {local.wall:.1f} s | {local.outer:.1f} s | {local.cpu:.1f} s "
        f"| {local.peak_mib:.0f} MiB | "
        f"{(tr['w']['naive'] + tr['kq']['naive']) * 100:.0f} s + SVMs |"
    )
    emit(
        f"| multitoken: 500 accepted per d (measured at {r.multitoken_target} per d, scaled) "
        f"| <= 5 min | {r.multitoken_cpu / 2:.0f} s on 2 cores | - | {r.multitoken_cpu:.0f} s "
        "| - | - |"
    )
    _emit_nexttoken(emit, r.nexttoken, quick)
    emit()
    emit(f"Idle worker after imports + 1 tiny run: {r.base_mem:.0f} MiB peak RSS.")
    emit()


def _emit_nexttoken(emit, nt: dict, quick: bool) -> None:
    """Rows of the nexttoken experiment: the published notebooks' settings and the d sweep."""
    rows = {
        "global": "nexttoken global notebook: 10 instances, nll, 4000 steps, 1 worker",
        "local": "nexttoken local notebook: 10 instances, lsq2, 2000 steps, 1 worker",
        "d_sweep": f"nexttoken d sweep: 9 d x 2 graph kinds x {20 if quick else 100} instances",
    }
    targets = {"global": "seconds", "local": "seconds", "d_sweep": "a few min"}
    for key, what in rows.items():
        t = nt[key]
        emit(
            f"| {what} | {targets[key]} | {t.wall:.1f} s | {t.outer:.1f} s | {t.cpu:.1f} s "
            f"| {t.peak_mib:.0f} MiB | - |"
        )


def _emit_joint(emit, joint: dict) -> None:
    """Joint training of the head: batched over seeds vs one seed at a time."""
    emit("## Joint training of the head (head.train=true, torch engine, 1000 steps, (6,8,10))")
    emit()
    emit("| model | seed-runs per CPU s, batched | one at a time | ratio |")
    emit("|---|---|---|---|")
    for kind, t in joint.items():
        emit(
            f"| {kind} | {t['batched']:.0f} | {t['alone']:.1f} | {t['batched'] / t['alone']:.0f}x |"
        )
    emit()


def _emit_throughput(emit, thr: dict, builds: dict) -> None:
    """The training throughput table, by batch, parameterization, engine and threads."""
    emit("## Training throughput at (6,8,10) (seed-runs of 2000 steps per second)")
    emit()
    emit("| seeds in batch | param | engine | threads | per wall s | per CPU s (per core) |")
    emit("|---|---|---|---|---|---|")
    for (R, kind, engine, th), (w, c) in thr.items():
        emit(f"| {R} | {kind} | {engine} | {th} | {w:.0f} | {c:.0f} |")
    emit()
    emit("Fused engine by kernel build (1000 seeds, 1 thread, per CPU second): " + "; ".join(
        f"{desc}: W {r['w']:.0f}, (K,Q) {r['kq']:.0f}" for desc, r in builds.items()
    ))  # fmt: skip
    emit()


def _emit_large_svms(emit, big: dict) -> None:
    """The table of one large Frobenius and one large nuclear SVM."""
    emit("## Large SVMs (one instance, 1 thread)")
    emit()
    emit("| SVM | (n,T,d) | target | wall | CPU | status | rank |")
    emit("|---|---|---|---|---|---|---|")
    for name, (shape, t, status, rk) in big.items():
        target = "<= 1 s" if name == "fro" else "<= 5 s"
        emit(f"| {name} | {shape} | {target} | {t.wall:.2f} s | {t.cpu:.2f} s | {status} | {rk} |")
    emit()


def _record(r: _Results, stamp: str, quick: bool) -> dict:
    """The results file (docs/benchmarks.json): what the README's speed table is rendered from."""
    return {
        "machine": machine(),
        "date": stamp,
        "quick": quick,
        "train_ms": {
            k: {e if isinstance(e, str) else e.value: v * 1e3 for e, v in t.items()}
            for k, t in r.train.items()
        },
        "throughput_per_core": {k: r.throughput[(1000, k, "fused", 1)][1] for k in ("w", "kq")},
        "builds": r.builds,
        "svm_ms": {
            str(shape): {norm: [a * 1e3, b * 1e3] for norm, (a, b) in res.items()}
            for shape, res in r.svm.items()
        },
        "rank": {"wall": r.rank.wall, "cpu": r.rank.cpu, "naive_cpu": r.naive_rank},
        "local": {"wall": r.local.wall, "cpu": r.local.cpu},
        "multitoken_cpu": r.multitoken_cpu,
        "nexttoken": {k: {"wall": t.wall, "cpu": t.cpu} for k, t in r.nexttoken.items()},
        "joint_per_cpu_s": r.joint,
        "large_s": {name: t.wall for name, (_, t, _, _) in r.large.items()},
        "scale": r.scale,
    }


def main(argv: list[str] | None = None) -> str:
    """Run the benchmarks, print the report, write it (--out) and the README table (--readme)."""
    args = _parse_args(argv)
    torch.set_num_threads(1)
    lines: list[str] = []

    def emit(s: str = "") -> None:
        print(s, flush=True)
        lines.append(s)

    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    emit(f"Machine: {machine()}; {load()} at start; {stamp}")
    emit(f"Mode: {'quick (samples scaled up)' if args.quick else 'published settings'}")
    emit()
    res = _measure(args.quick, emit)
    _emit_experiments(emit, res, args.quick)
    _emit_throughput(emit, res.throughput, res.builds)
    _emit_joint(emit, res.joint)
    _emit_large_svms(emit, res.large)
    bench_scale.emit_table(emit, res.scale)
    emit(f"Finished with {load()}.")
    text = "\n".join(lines) + "\n"
    record = _record(res, stamp, args.quick)
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(_report(text))
        out.with_suffix(".json").write_text(json.dumps(record, indent=1) + "\n")
    if args.readme:
        write_readme_table(Path(args.readme), record)
    return text


README_MARKERS = ("<!-- bench:speed -->", "<!-- /bench:speed -->")


def readme_table(r: dict) -> str:
    """The README's speed table, from the bench's results file (docs/benchmarks.json);
    tests/test_docs.py fails when the README's copy differs."""
    t, svm6 = r["train_ms"], r["svm_ms"]["(6, 8, 10)"]
    ratio = lambda a, b: f"{a / b:.0f}×"  # noqa: E731
    vs_naive = lambda e: " / ".join(ratio(t[k]["naive"], t[k][e]) for k in ("w", "kq"))  # noqa: E731
    rank = r["rank"]
    portable = next((v for k, v in r["builds"].items() if "_fused," in k), None)
    rows = [
        "| | attnsvm | naive | ratio |",
        "|---|---|---|---|",
        f"| one 2000-step training run at (6,8,10), W / (K,Q), fused engine "
        f"| {t['w']['fused']:.1f} / {t['kq']['fused']:.1f} ms "
        f"| {t['w']['naive']:.0f} / {t['kq']['naive']:.0f} ms "
        f"| {vs_naive('fused')} |",
        f"| the same, torch engine | {t['w']['torch']:.1f} / {t['kq']['torch']:.1f} ms | "
        f"| {vs_naive('torch')} |",
        f"| training throughput, seed-runs of 2000 steps per CPU second, W / (K,Q) "
        f"| {r['throughput_per_core']['w']:.0f} / {r['throughput_per_core']['kq']:.0f}"
        + (f" (portable build {portable['w']:.0f} / {portable['kq']:.0f})" if portable else "")
        + f" | ≈ {1e3 / t['w']['naive']:.2f} / {1e3 / t['kq']['naive']:.2f} | |",
        f"| one Frobenius SVM at (6,8,10) | {svm6['fro'][1]:.2f} ms | {svm6['fro'][0]:.0f} ms "
        f"| {ratio(*svm6['fro'])} |",
        f"| one nuclear SVM at (6,8,10), in a batch of 20 | {svm6['nuc'][1]:.1f} ms "
        f"| {svm6['nuc'][0]:.0f} ms | {ratio(*svm6['nuc'])} |",
        f"| rank experiment (8000 SVMs) | {rank['cpu']:.1f} CPU-s, {rank['wall']:.1f} s wall "
        f"| ≈ {rank['naive_cpu']:.0f} CPU-s | {ratio(rank['naive_cpu'], rank['cpu'])} |",
        f"| local experiment (100 seeds × W, (K,Q), 400 SVMs) | {r['local']['cpu']:.1f} CPU-s, "
        f"{r['local']['wall']:.1f} s wall | ≈ {(t['w']['naive'] + t['kq']['naive']) / 10:.0f} "
        f"CPU-s + SVMs | |",
        f"| multitoken sweep (500 accepted per d, 4 values of d), bench estimate "
        f"| {r['multitoken_cpu']:.0f} CPU-s | | |",
        f"| Frobenius SVM (20,20,1000) / nuclear SVM (20,20,200) | {r['large_s']['fro']:.2f} / "
        f"{r['large_s']['nuc']:.2f} s | – | – |",
    ]
    if r.get("nexttoken"):
        nt = r["nexttoken"]
        rows.append(
            f"| nexttoken: the global / local notebook's 10 instances, one worker; the d sweep "
            f"(18 jobs) on 2 | {nt['global']['wall']:.1f} / {nt['local']['wall']:.1f} s; "
            f"{nt['d_sweep']['wall']:.0f} s wall | | |"
        )
    if r.get("joint_per_cpu_s"):
        j = r["joint_per_cpu_s"]
        rows.append(
            "| joint training of the head (torch engine, 1000 steps), W / p-model: seed-runs "
            f"per CPU second, batched vs one seed at a time | {j['w']['batched']:.0f} / "
            f"{j['p']['batched']:.0f} | {j['w']['alone']:.1f} / {j['p']['alone']:.1f} | "
            f"{ratio(j['w']['batched'], j['w']['alone'])} / "
            f"{ratio(j['p']['batched'], j['p']['alone'])} |"
        )
    for job in r.get("scale", []):
        o = job["ours"]
        rows.append(
            f"| a {job['seeds']}-seed job at {tuple(job['shape'])}: 2000 steps and the four SVMs "
            f"per seed, threads=2 (target <= {job['target_s']:.0f} s) | {o['wall']:.0f} s, "
            f"{o['peak_mib']:.0f} MiB peak | {job['before_wall_scaled']:.0f} s (routes before "
            f"issue 16) | {job['ratio']:.1f}× |"
        )
    head = f"{r['machine']}; {r['date']}" + (" (quick mode)" if r["quick"] else "")
    return "\n".join([f"Measured on {head}:", "", *rows])


def write_readme_table(readme: Path, record: dict) -> None:
    """Replace the text between README_MARKERS in ``readme`` with ``readme_table(record)``."""
    text = readme.read_text()
    start, end = README_MARKERS
    before, rest = text.split(start, 1)
    _, after = rest.split(end, 1)
    readme.write_text(f"{before}{start}\n{readme_table(record)}\n{end}{after}")


NOTES = """
## Reading the tables

Workers are single-threaded and the two of an experiment run side by side, so on two idle
cores an experiment's wall time is about its CPU time / 2 (the rank grid is split evenly;
local is W on one core, (K,Q) on the other, so its wall is the (K,Q) worker's CPU time).
"wall incl. start" adds spawning the workers and importing torch and cvxpy (about 5-10 s on
a busy machine), which a Hydra multirun pays once per worker as well.

## Where the speed comes from

- **Training**: the fused engine (`engine=auto`, the default, for the linear and ReLU heads in
  float64 on the CPU) runs whole trajectories in C (`attnsvm/train/_fused.c`, built at install,
  called through ctypes): every array seed-last, so each formula of the hand-written stable
  gradient is one SIMD operation across 8 seeds (AVX-512 build) or 4 (AVX2 / baseline build),
  and the loops over n, T, d run once per group instead of once per seed and step; `exp` is a
  vectorised Cody-Waite + degree-13 polynomial within 1 ulp (a libm call per lane had taken
  half the time). The vector width must match the CPU's: 8-lane code on AVX2 ran 5x slower
  than 4-lane code, because GCC expands its comparisons lane by lane. The torch engine
  (`engine=torch`; the lambda head, float32, CUDA) batches all seeds of a job instead; its
  steps are dominated by torch's batched matmuls of tiny matrices (about 55 %) and
  log-softmax over rows of 8 (15 %).
  The naive baseline is one seed at a time through autograd. Threads: a second thread never
  lowers the CPU time per seed-run (table above); on an otherwise idle machine it shortens the
  wall time (torch about 1.9x at 1000 seeds, fused about 1.7x), but whenever anything else ran,
  two torch threads made training 3-30x slower (PAPER.md §6.5, and the previous version of this
  table). A sweep's workers already fill every core, so `threads: 1` is the default and
  parallelism comes from worker processes (joblib launcher); `threads: 2` suits one big job
  on an idle machine (same numbers with either engine).
- **BLAS threads**: `threads` also bounds numpy/scipy's OpenBLAS pools (threadpoolctl). With the
  default two BLAS threads on two busy cores, a 380 x 380 `eigh` took 6.9 s instead of 0.045 s
  and the (20,20,200) nuclear SVM 46 CPU-s instead of about 1.
- **Frobenius SVM**: the exact NNLS dual of the least-distance program, n(T-1) variables
  whatever d is (the solution lies in the span of the constraint matrices).
- **Nuclear SVM**: solved in the reduced (p x q) space, p <= n(T-1), q <= n, by a batched
  primal-dual interior point (`attnsvm/svm/nuclear_ipm.py`, HKM direction, Mehrotra
  predictor-corrector):
  each Newton step is an m x m Schur complement built from the rank-2 constraint matrices, so
  no modelling layer and no dense ((p+q)(p+q+1)/2)^2 KKT block; instances of one shape (all
  seeds of a grid point) go through one call. It stops at Clarabel's tolerance (`solver.tol`,
  1e-10: relative gap and max-norm residuals); the Schur solve is refined against the operator
  itself, which keeps degenerate instances (many active constraints at a low-rank solution, as
  in sequential attention) primal feasible to the end; an instance that still does not get
  there is re-solved by the per-instance cvxpy model (`solver=clarabel` selects that model for
  everything). Its products and sums run in the batch-invariant primitives below (the C
  kernel's sequential matmul), not in BLAS: slower than MKL's batched gemm at these sizes, the
  price of a result that does not depend on the batch.

## Found on the way (fixed)

- Seeds were not batch-invariant: torch's CPU kernels compute the last (numel mod 16) elements
  of `exp`/`sigmoid`/`softplus` with scalar libm calls and the rest with vectorised ones, which
  differ in the last bit, so a seed's trajectory depended on its position in the batch (a
  seed alone vs in a batch of 50 differed from step 21 on). `batchops.elementwise` pads those
  calls' inputs to a multiple of 64 so every element takes the vectorised path; trajectories are
  unchanged wherever the old code had no scalar tail (tested), and now bit-identical alone
  or in any batch (tested). Row reductions (`sum`, `mean`, long dot products) also round
  differently with the batch shape; `batchops.dot_last` reduces every row with the same
  small-matmul kernel.
- The fused engine is batch-invariant by construction: lane l of every SIMD operation is the
  same IEEE operation on seed l's numbers alone, sums run in an order fixed by (n, T, d, m), the
  last group is padded with copies of a real seed, and the build forbids FMA contraction
  (`-ffp-contract=off`). A seed alone, in a batch of 23, on one or two threads: the same bits
  (tested). Its rounding order differs from torch's kernels, so the engines agree to rounding
  error (W: 1e-15 relative after 2000 steps; (K,Q) amplifies it to about 1e-7 along the path,
  same tokens, direction correlation 1 - 1e-9; tested), and `engine` is part of the job hash.

- Correct on every CPU (found on an AMD EPYC, AVX2 and AVX-512 kernels): MKL's batched gemm
  (torch's BLAS) changed one seed's product with its batch mates at (5,5,25), and MKL's LAPACK
  (eigvalsh, cholesky_solve/inverse in the interior point) depended on an instance's memory
  alignment, i.e. its position in the batch. Every product now sums in a fixed sequential
  order in exactly rounded operations (`batchops.matmul`: torch's per-matrix loop, or the C
  kernel's `attnsvm_seq_matmul`, no FMA), the same bits on every kernel level; LAPACK runs in
  MKL's strict CNR mode on one thread.

## Known gaps

- The fused kernel covers the linear and ReLU heads; the lambda head trains with torch.
- The bench measures multitoken at 25 accepted instances per d and scales to 500; the real
  sweep (`+sweeps=multitoken`, 500 per d) took 55 s on 2 cores (docs/nonlinear.md).
- The naive rank time is extrapolated from one instance per (n,T,d) point (times 100).
"""


def _report(results: str) -> str:
    return (
        "# Benchmarks\n\n"
        "Produced by `python -m attnsvm.bench` (see the module docstring for what is measured).\n"
        "Wall times depend on what else runs on the machine; CPU times and ratios much less.\n\n"
        + results
        + NOTES
    )


if __name__ == "__main__":
    main()
