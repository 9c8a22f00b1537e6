"""Regularization path (PAPER.md §5, experiment ``regpath``): for R on a geometric grid,

    W̄_R = argmin L(W)  s.t. ||W||_F <= R                      (W-parameterization)
    (K̄, Q̄)_R = argmin L(K Q^T)  s.t. ||K||_F^2 + ||Q||_F^2 <= 2R   ((K,Q)-parameterization)

solved by projected normalized GD with a decaying step (lr * radius / sqrt(k + 1)), warm-started
from the previous R. Theory: W̄_R / R -> W^mm / ||W^mm|| and K̄Q̄^T -> the direction of W^mm_*
as R grows, so corr(W̄_R, W^mm) and corr(K̄Q̄^T, W^mm_*) -> 1.

    python -m attnsvm.run experiment=regpath seeds=20                    # W
    python -m attnsvm.run experiment=regpath parameterization=kq seeds=20
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import torch

from attnsvm import metrics
from attnsvm.config import Parameterization, RegpathConfig, RunConfig
from attnsvm.data import accepted_seeds, make_instances
from attnsvm.heads import make_head
from attnsvm.results import config_hash
from attnsvm.sequential import w_mm_masked
from attnsvm.train import Params, frob, init_params, loss_and_grad_w


def radii(cfg: RegpathConfig) -> np.ndarray:
    """The geometric grid r_min ... r_max with ``points`` values."""
    return np.geomspace(cfg.r_min, cfg.r_max, cfg.points)


def _project(p: Params, R: float) -> Params:
    """Onto ||W|| <= R, or ||K||^2 + ||Q||^2 <= 2R (a joint rescaling is the projection)."""
    if p.W is not None:
        scale = torch.clamp(R / frob(p.W).clamp_min(1e-300), max=1.0)
        return Params(W=p.W * scale[:, None, None])
    sq = frob(p.K) ** 2 + frob(p.Q) ** 2
    scale = torch.clamp(torch.sqrt(2 * R / sq.clamp_min(1e-300)), max=1.0)[:, None, None]
    return Params(K=p.K * scale, Q=p.Q * scale)


def solve_at(p: Params, inst, head, R: float, cfg: RegpathConfig, loss_fn=loss_and_grad_w):
    """Projected normalized GD at radius R from ``p`` (already feasible); returns (p, loss, s)."""
    radius = R if p.W is not None else (2 * R) ** 0.5
    for k in range(cfg.steps):
        W = p.attention_matrix()
        loss, s, gW = loss_fn(W, inst, head)
        eta = cfg.lr * radius / (k + 1) ** 0.5
        if p.W is not None:
            g = gW
            gn = frob(g).clamp_min(1e-300)[:, None, None]
            p = _project(Params(W=p.W - eta * g / gn), R)
        else:
            gK, gQ = torch.matmul(gW, p.Q), torch.matmul(gW.transpose(-1, -2), p.K)
            gn = torch.sqrt(frob(gK) ** 2 + frob(gQ) ** 2).clamp_min(1e-300)[:, None, None]
            p = _project(Params(K=p.K - eta * gK / gn, Q=p.Q - eta * gQ / gn), R)
    loss, s, _ = loss_fn(p.attention_matrix(), inst, head)
    return p, loss, s


def path(inst, head, cfg: RunConfig, loss_fn=loss_and_grad_w):
    """W̄_R (P, R_seeds, d, d) along the grid, with final losses (P, R_seeds) and softmax max."""
    d = inst.X.shape[-1]
    p = init_params(cfg.parameterization, inst.seeds, d, inst.X.dtype, inst.X.device)
    Ws, losses, smax = [], [], []
    for R in radii(cfg.regpath):
        p, loss, s = solve_at(_project(p, R), inst, head, float(R), cfg.regpath, loss_fn)
        Ws.append(p.attention_matrix().clone())
        losses.append(loss)
        smax.append(s.max(-1).values.flatten(1).mean(-1))
    return torch.stack(Ws), torch.stack(losses), torch.stack(smax)


def run_job(cfg: RunConfig, progress=None):
    """Regularization paths of ``seeds`` seeds, compared with W^mm and W^mm_* at alpha = opt."""
    from attnsvm.pipeline import JobResult, config_columns

    t0 = time.perf_counter()
    torch.set_num_threads(cfg.threads)
    dtype = getattr(torch, cfg.dtype.value)
    seeds = accepted_seeds(cfg.dataset, cfg.seed, cfg.seeds)
    grid = radii(cfg.regpath)
    kq = cfg.parameterization.kind is Parameterization.kq
    rows, trajs = [], []
    for start in range(0, len(seeds), cfg.batch_size):
        inst = make_instances(
            cfg.dataset, seeds[start : start + cfg.batch_size], dtype, cfg.device.value
        )
        Ws, losses, smax = path(inst, make_head(cfg.head, inst), cfg)
        for r, seed in enumerate(inst.seeds):
            X, Z, opt = (t[r].cpu().numpy() for t in (inst.X, inst.Z, inst.opt))
            mask = None if inst.mask is None else inst.mask[r].cpu().numpy()
            fro = w_mm_masked(X, Z, opt, mask, cfg.solver, "fro")
            nuc = w_mm_masked(X, Z, opt, mask, cfg.solver, "nuc") if fro.ok else fro
            W = Ws[:, r].cpu().numpy()  # (P, d, d)
            cf, cn = metrics.corr(W, fro.W), metrics.corr(W, nuc.W)
            rows.append(
                {
                    "seed": seed,
                    "status": "ok" if fro.ok and nuc.ok else fro.status,
                    "reason": fro.reason,
                    "feasible": fro.ok,
                    "corr_fro": float(cf[-1]),
                    "corr_nuc": float(cn[-1]),
                    "corr": float((cn if kq else cf)[-1]),
                    "r_max": float(grid[-1]),
                    "w_norm": float(np.linalg.norm(W[-1])),
                    "loss": float(losses[-1, r]),
                    "softmax_max": float(smax[-1, r]),
                    "opt": ",".join(map(str, opt.reshape(-1))),
                }
            )
            trajs.append(
                pd.DataFrame(
                    {
                        "seed": seed,
                        "step": np.arange(len(grid)),
                        "R": grid,
                        "corr_fro": cf,
                        "corr_nuc": cn,
                        "w_norm": np.linalg.norm(W, axis=(-2, -1)),
                        "loss": losses[:, r].cpu().numpy(),
                        "softmax_max": smax[:, r].cpu().numpy(),
                    }
                )
            )
        if progress is not None:
            progress(len(rows), len(seeds))
    chash = config_hash(cfg)
    cols = {**config_columns(cfg), "config_hash": chash}
    runs = pd.DataFrame(rows).assign(**cols, seconds=(time.perf_counter() - t0) / len(seeds))
    trajectory = pd.concat(trajs, ignore_index=True).assign(
        **{k: cols[k] for k in ("n", "T", "d", "parameterization", "head", "config_hash")}
    )
    return JobResult(runs, trajectory, chash, time.perf_counter() - t0)


def summary_text(runs: pd.DataFrame, seconds: float) -> str:
    """End-of-path correlations with the SVM matching the parameterization."""
    first, ok = runs.iloc[0], runs[runs.status == "ok"]
    svm_name = "W^mm_* (nuclear)" if first.parameterization == "kq" else "W^mm (Frobenius)"
    return "\n".join(
        [
            f"attnsvm regpath: n={first.n} T={first['T']} d={first.d} {first.attention}, "
            f"parameterization={first.parameterization}, head={first['head']}, "
            f"R up to {first.r_max:g}, {len(runs)} seeds ({len(ok)} with a feasible SVM)",
            f"  corr(W̄_R, {svm_name}) at the largest R: mean {ok['corr'].mean():.4f}, "
            f"min {ok['corr'].min():.4f}",
            f"  time: {seconds:.2f} s",
        ]
    )
