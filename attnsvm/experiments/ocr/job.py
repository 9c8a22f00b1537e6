"""One ``ocr`` job: its seeds trained in groups of ``batch_size`` (a seed's numbers never depend
on the group), the output-value SVMs of its training examples solved once, then per seed the
accuracies, W_OV's rank and norms, the SVMs' held-out predictions and corr(W_OV(t), each SVM).

from types import SimpleNamespace
run = SimpleNamespace(seed=0, seeds=2, batch_size=1000, dtype="float64", device="cpu",
                      solver=SolverConfig(), ocr=Config())
result = run_job(run)   # result.runs: one row per seed; result.trajectory: per checkpoint
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np
import pandas as pd
import torch

from attnsvm.results.contract import JobResult
from attnsvm.results.stack import with_constants
from attnsvm.svm.status import seed_status

from . import svm
from .config import Config
from .train import Record, train

SETS = ("fact", "impl", "heldout")


def _plain(value):
    return getattr(value, "value", value)


def config_columns(cfg: Config) -> dict:
    """Every ``ocr.*`` key (defaults resolved) and the vocabulary d, so tables carry their axes."""
    cols = {}
    for f in dataclasses.fields(cfg):
        value = getattr(cfg, f.name)
        cols[f"ocr.{f.name}"] = ",".join(map(str, value)) if isinstance(value, list) else value
    cols = {k: _plain(v) for k, v in cols.items()}
    cols |= {"ocr.rank": cfg.width, "ocr.lr": cfg.step_size, "ocr.weight_decay": cfg.decay}
    cols["ocr.init_scale"] = cfg.scale  # the resolved defaults
    return {"ocr.d": cfg.d, **cols}


def _spectrum(W: np.ndarray, rank_frac: float) -> dict:
    sv = np.linalg.svd(W, compute_uv=False)
    rank = int((sv > rank_frac * sv[0]).sum()) if sv[0] > 0 else 0
    return {"rank": rank, "norm_fro": float(np.sqrt((sv**2).sum())), "norm_nuc": float(sv.sum())}


def _svm_columns(cfg: Config, sols: dict) -> dict:
    """The SVMs' own numbers, the same on every seed's row."""
    cols = {}
    for k, sol in sols.items():
        value = None if sol.W is None else _spectrum(sol.W, 0.5)[f"norm_{k}"]
        cols |= {
            f"svm_{k}_status": sol.status,
            f"heldout_acc_{k}": svm.answer_accuracy(sol.W, cfg),
            f"margin_{k}": None if value is None else 1.0 / value,  # max margin at unit norm
            f"rank_{k}": sol.rank,
            f"eff_rank_{k}": None if sol.W is None else _spectrum(sol.W, cfg.rank_frac)["rank"],
        }
    return cols


def _seed_rows(cfg: Config, rec: Record, seeds: list[int], sols: dict) -> tuple[list, list]:
    Ws = rec.W_ov.double().numpy()  # (C, R, d, d)
    M = svm.effective(Ws, rec.q.double().numpy(), cfg)  # the block the SVMs constrain
    corr = svm.alignment(M, sols)  # (C, R) each
    least = svm.model_margins(M, cfg)  # (C, R)
    svm_cols = _svm_columns(cfg, sols)
    m = {k: v.double().numpy() for k, v in rec.metrics.items()}
    rows, trajs = [], []
    for r, seed in enumerate(seeds):
        finite = bool(rec.finite[r]) and bool(np.isfinite(Ws[:, r]).all())
        status, reason = seed_status(finite, {"training examples": list(sols.values())})
        spec = _spectrum(np.nan_to_num(Ws[-1, r]), cfg.rank_frac)
        row = {"seed": seed, "status": status, "reason": reason}
        row |= {k: float(v[-1, r]) for k, v in m.items()}
        row |= spec | {k: float(v[-1, r]) for k, v in corr.items()}
        block = _spectrum(np.nan_to_num(M[-1, r]), cfg.rank_frac)  # its margins' norms
        row |= {
            f"margin_model_{k}": float(least[-1, r] / block[f"norm_{k}"])
            if block[f"norm_{k}"] > 0
            else None
            for k in ("fro", "nuc")
        }
        rows.append(row | svm_cols)
        traj = {"seed": seed, "step": rec.steps, **{k: v[:, r] for k, v in m.items()}}
        traj |= {k: v[:, r] for k, v in corr.items()}
        traj["norm_fro"] = np.linalg.norm(Ws[:, r], axis=(-2, -1))
        trajs.append(pd.DataFrame(traj))
    return rows, trajs


def run_job(run, progress=None) -> JobResult:
    """All seeds of ``run`` (seed, seed + 1, ...), ``batch_size`` at a time."""
    t0 = time.perf_counter()
    cfg: Config = run.ocr
    dtype = getattr(torch, str(_plain(run.dtype)))
    seeds = list(range(run.seed, run.seed + run.seeds))
    size = getattr(run, "batch_size", len(seeds))
    sols = svm.solve(cfg, run.solver)
    svm_seconds = sum(s.seconds for s in sols.values())
    rows, trajs = [], []
    for start in range(0, len(seeds), size):
        group = seeds[start : start + size]
        t1 = time.perf_counter()
        rec = train(cfg, group, dtype)
        train_seconds = (time.perf_counter() - t1) / len(group)
        r, t = _seed_rows(cfg, rec, group, sols)
        rows += [row | {"train_seconds": train_seconds, "svm_seconds": svm_seconds} for row in r]
        trajs += t
        if progress is not None:
            progress(start + len(group), len(seeds))
    cols = config_columns(cfg)
    runs = with_constants(pd.DataFrame(rows), cols)
    trajectory = with_constants(pd.concat(trajs, ignore_index=True), cols)
    return JobResult(runs, trajectory, "", time.perf_counter() - t0)
