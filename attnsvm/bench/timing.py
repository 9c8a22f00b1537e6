"""How the bench measures: CPU and wall time in this process, and whole experiment parts in
fresh single-threaded worker processes (as the joblib launcher runs them) with their peak
resident memory; and the machine line every report starts with."""

from __future__ import annotations

import os
import platform
import resource
import time
from dataclasses import dataclass
from multiprocessing import get_context

import numpy as np
import torch
from threadpoolctl import threadpool_limits

import attnsvm.kernel as kernel
from attnsvm.config.schema import HeadConfig
from attnsvm.job import run_job
from attnsvm.train.heads import make_head
from attnsvm.train.loop import train


@dataclass
class Timing:
    wall: float  # in-process compute (the slowest worker), imports and process start excluded
    cpu: float
    peak_mib: float = float("nan")
    outer: float = float("nan")  # wall including worker start and imports


def cpu_seconds() -> float:
    """User + system CPU seconds of this process so far."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def timed(fn, *args, **kwargs) -> Timing:
    """Wall and CPU seconds of ``fn(*args, **kwargs)`` in this process."""
    t0, c0 = time.perf_counter(), cpu_seconds()
    fn(*args, **kwargs)
    return Timing(time.perf_counter() - t0, cpu_seconds() - c0)


def best_wall(fn, *args, repeats: int = 3, budget_s: float = 20.0, **kwargs) -> tuple:
    """(the least wall seconds of up to ``repeats`` calls, the first call's result): calls
    stop once ``budget_s`` is spent. On a shared machine a call is slowed by its neighbours,
    never sped up, so the least of a few is the best estimate of the code's own cost (timeit's
    reasoning); a ratio takes it for both its sides."""
    walls, results, start = [], [], time.perf_counter()
    while len(walls) < repeats and time.perf_counter() - start <= budget_s:
        t0 = time.perf_counter()
        results.append(fn(*args, **kwargs))
        walls.append(time.perf_counter() - t0)
    return min(walls), results[0]


def _worker(job: tuple) -> Timing:
    """Run one experiment part in this (fresh) process with one thread; time and peak memory."""
    kind, payload = job
    torch.set_num_threads(1)
    with threadpool_limits(limits=1):
        t0, c0 = time.perf_counter(), cpu_seconds()
        if kind == "jobs":
            for cfg in payload:
                run_job(cfg)
        elif kind == "train":
            inst, pcfg, ocfg = payload
            train(inst, make_head(HeadConfig(), inst), pcfg, ocfg)
        wall, cpu = time.perf_counter() - t0, cpu_seconds() - c0
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


def split(items: list, k: int) -> list[list]:
    """``items`` dealt round-robin into ``k`` parts (one per worker)."""
    return [items[i::k] for i in range(k)]


def cpu_name() -> str:
    """The CPU's model name: what a row measured apart from the others (``--only``) names."""
    return next(
        (
            ln.split(":", 1)[1].strip()
            for ln in open("/proc/cpuinfo")
            if ln.startswith("model name")
        ),
        platform.processor(),
    )


def machine() -> str:
    cpu = cpu_name()
    return (
        f"{os.cpu_count()} cores ({cpu}), torch {torch.__version__}, numpy {np.__version__}, "
        f"fused kernel {kernel.describe()}"
    )


def load() -> str:
    return "load average " + " ".join(f"{x:.1f}" for x in os.getloadavg())


def _python_work(_) -> float:
    """Seconds of a fixed pure-Python loop (the interpreter, no library call)."""
    t0, total = time.perf_counter(), 0
    for i in range(3_000_000):
        total += i * i
    return time.perf_counter() - t0


def _blas_work(_) -> float:
    """Seconds of a fixed run of 300 x 300 matrix products on one BLAS thread."""
    a = np.random.default_rng(0).random((300, 300))
    with threadpool_limits(limits=1):
        t0 = time.perf_counter()
        for _ in range(150):
            a @ a
        return time.perf_counter() - t0


def parallel_ceiling(workers: int) -> dict:
    """What ``workers`` forked processes doing the same work side by side give against one, in
    throughput (workers x one's seconds / the slowest's): the most a job spread over that many
    processes can gain here. A virtual machine's cores may give far less than their count
    (2 vCPUs that ran two interpreter loops at 1.1x one)."""
    out = {}
    for kind, work in (("python", _python_work), ("blas", _blas_work)):
        with get_context("fork").Pool(1) as pool:
            one = pool.map(work, [0])[0]
        with get_context("fork").Pool(workers) as pool:
            slowest = max(pool.map(work, range(workers)))
        out[kind] = workers * one / slowest
    return out
