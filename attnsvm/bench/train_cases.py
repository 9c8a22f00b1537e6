"""The bench's training cases: ours against the naive autograd loop, throughput by engine and
threads, by kernel build, and joint training of the head batched against one seed at a time."""

from __future__ import annotations

import os
import statistics
from multiprocessing import get_context

import torch

import attnsvm.kernel as kernel
from attnsvm.bench.naive import naive_train
from attnsvm.bench.timing import timed
from attnsvm.composition import DatasetConfig
from attnsvm.config import HeadConfig, OptimizerConfig, ParameterizationConfig
from attnsvm.config.enums import Engine, Parameterization
from attnsvm.data.generators import make_instances
from attnsvm.train.heads import make_head
from attnsvm.train.loop import train

ENGINES = (Engine.fused, Engine.torch)


def _naive_runs(inst, seeds, kq: bool, steps: int) -> None:
    for s in seeds:
        naive_train(inst.X[s], inst.Y[s], inst.Z[s], inst.v[s], kq, steps)


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
            t = timed(_naive_runs, inst, seeds, kind == Parameterization.kq, steps)
            times["naive"].append(t.cpu / n_naive)
            for e in ENGINES:
                times[e].append(timed(train, inst, head, pcfg, ocfg, engine=e).cpu / n_ours)
        out[kind.value] = {k: statistics.median(v) * 2000 / steps for k, v in times.items()}
    return out


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
        batched = timed(train, inst, head, pcfg, ocfg, train_head=True)
        one = [make_instances(DatasetConfig(), [s]) for s in range(alone)]
        single = timed(_train_each, one, pcfg, ocfg)
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
                    t = timed(train, inst, head, pcfg, ocfg, engine=engine, threads=threads)
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
        t = timed(train, inst, head, pcfg, ocfg, engine=Engine.fused)
        out[kind.value] = 1000 * steps / 2000 / t.cpu
    return kernel.describe(), out


def build_throughput(quick: bool) -> dict:
    """The throughput of every kernel build this CPU runs (AVX-512 and portable, say)."""
    out = {}
    before = os.environ.get(kernel.BUILD_ENV)
    for name in kernel.BUILDS:
        os.environ[kernel.BUILD_ENV] = name
        try:
            with get_context("spawn").Pool(processes=1) as pool:
                desc, res = pool.apply(_build_worker, (200 if quick else 500,))
        except Exception as exc:  # not built, or this CPU cannot run it
            desc, res = f"{name}: {type(exc).__name__}", {}
        finally:
            os.environ.pop(kernel.BUILD_ENV)
            if before is not None:
                os.environ[kernel.BUILD_ENV] = before
        if res:
            out[desc] = res
    return out
