"""The bench's SVM cases: ours against one naive cvxpy model per SVM, the naive estimate of
the rank experiment, and one large Frobenius and one large nuclear SVM."""

from __future__ import annotations

import statistics
import time

from attnsvm.bench.naive import naive_svm
from attnsvm.bench.timing import Timing, cpu_seconds, timed
from attnsvm.composition import DatasetConfig
from attnsvm.config import SolverConfig
from attnsvm.data.generators import make_instances
from attnsvm.svm import solve as svm
from attnsvm.svm.norm_names import FROBENIUS, NUCLEAR

RANK_NT = [(5, 5), (10, 5), (15, 5), (5, 10), (5, 15)]  # n in {5,10,15} @ T=5, T in {5,10,15} @ n=5
RANK_D = [1, 2, 3, 4, 5, 10, 15, 20]


def _each(fn, probs, *args) -> list:
    return [fn(*pr, *args) for pr in probs]


def bench_svm_ratio(quick: bool) -> dict:
    """Per-SVM CPU time, naive per-constraint full-space cvxpy vs ours, same instances."""
    out = {}
    k = 10 if quick else 20  # ours solves the k nuclear SVMs as one batch, as a job does
    scfg = SolverConfig()
    for n, T, d in [(6, 8, 10), (15, 5, 20)]:
        inst = make_instances(DatasetConfig(n=n, T=T, d=d), list(range(k)))
        probs = [(inst.X[r].numpy(), inst.Z[r].numpy(), inst.opt[r].numpy()) for r in range(k)]
        _each(naive_svm, probs[:1], NUCLEAR)  # warm-up: cvxpy's first-call costs
        res = {}
        for norm in (FROBENIUS, NUCLEAR):
            naive = timed(_each, naive_svm, probs, norm).cpu / k
            if norm == FROBENIUS:
                ours = timed(_each, svm.w_mm, probs, scfg).cpu / k
            else:
                ours = timed(svm.w_mm_nuc_batch, probs, scfg).cpu / k
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
            fro = timed(_each, naive_svm, [(X, Z, opt)], FROBENIUS).cpu
            per_d.append(fro + timed(_each, naive_svm, [(X, Z, opt)], NUCLEAR).cpu)
        total += statistics.mean(per_d) * len(RANK_D) * 100
    return total


def large_svms() -> dict:
    out = {}
    scfg = SolverConfig()
    for name, (n, T, d) in [(FROBENIUS, (20, 20, 1000)), (NUCLEAR, (20, 20, 200))]:
        inst = make_instances(DatasetConfig(n=n, T=T, d=d), [0])
        X, Z, opt = inst.X[0].numpy(), inst.Z[0].numpy(), inst.opt[0].numpy()
        solve = svm.w_mm if name == FROBENIUS else svm.w_mm_nuc
        t0, c0 = time.perf_counter(), cpu_seconds()
        sol = solve(X, Z, opt, scfg)
        t = Timing(time.perf_counter() - t0, cpu_seconds() - c0)
        out[name] = ((n, T, d), t, sol.status, sol.rank)
    return out
