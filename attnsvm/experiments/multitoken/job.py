"""Multi-token SVM-equivalence of nonlinear heads
(docs/math.md#nonlinear-heads-and-svm-equivalence), experiment ``multitoken``.

With a ReLU (or lambda) head GD may keep several tokens per sequence. From the final softmax
s (n, T) the selected set is O_i = {t : s_it >= threshold}, the masked set its complement, and

* ``W^fin``   = argmin ||W||_F  s.t. (x_iτ - x_it)^T W z_i = log(s_iτ / s_it),  t, τ in O_i
  (a linear least-norm problem, solved by least squares);
* ``W^dir``   = argmin ||W||_F  s.t. (x_it - x_iτ)^T W z_i = 0 for t, τ in O_i and
  (x_it - x_iτ')^T W z_i >= 1 for t in O_i, τ' masked. Projecting the inequality rows onto
  the null space of the equality rows turns it into a least-distance program, solved
  exactly through its NNLS dual as ``svm.w_mm`` is;
* ``W^SVMeq`` = W^fin + R W^dir, R by least squares to the final iterate;
* ``W^1token`` = ``svm.w_mm`` at alpha_i = argmax_t s_it (the single-token baseline).

The published acceptance filters are kept as per-seed flags (``band_ok``: no softmax entry in
(zero_threshold, threshold]; ``has_zero``: some entry <= zero_threshold; ``svm_ok``: all three
SVMs solved), and ``status`` is ``ok`` exactly when a seed passes all of them. With
``parameterization=kq`` the three SVMs use the nuclear norm (cvxpy), as the published notebook.

    python -m attnsvm.run experiment=multitoken dataset=relu head=relu dataset.d=6 \\
        optimizer.steps=2001 optimizer.checkpoint_every=100 multitoken.target_accepted=500 seed=1
"""

from __future__ import annotations

import time

import cvxpy as cp
import numpy as np
import pandas as pd
import torch

from attnsvm import metrics
from attnsvm.config.enums import Parameterization
from attnsvm.config.schema import RunBase, SolverConfig
from attnsvm.data.generators import accepted_seeds, make_instances
from attnsvm.experiments.engine import train_engine
from attnsvm.results.stack import with_constants
from attnsvm.svm import cvx
from attnsvm.svm import solve as svm
from attnsvm.train.divergence import divergence
from attnsvm.train.heads import make_head
from attnsvm.train.loop import train
from attnsvm.train.state import on_cpu

from .search import search


def _pair_rows(X: np.ndarray, Z: np.ndarray, first: np.ndarray, second: np.ndarray):
    """Rows vec((x_{i,t} - x_{i,τ}) z_i^T) (m, d*d) for the (i, t, τ) triples of ``first``,
    ``second`` (each (m, 2) = (i, token))."""
    i = first[:, 0]
    dx = X[i, first[:, 1]] - X[i, second[:, 1]]  # (m, d)
    return np.einsum("md,me->mde", dx, Z[i]).reshape(len(i), -1)


def _pairs(O: np.ndarray):
    """(i, t, τ) with t < τ both selected, and (i, t, τ') with t selected, τ' masked."""
    n, T = O.shape
    i, t, u = np.nonzero(O[:, :, None] & O[:, None, :] & np.triu(np.ones((T, T), bool), 1))
    eq = (np.stack([i, t], 1), np.stack([i, u], 1))
    i, t, u = np.nonzero(O[:, :, None] & ~O[:, None, :])
    ineq = (np.stack([i, t], 1), np.stack([i, u], 1))
    return eq, ineq


def w_fin(X: np.ndarray, Z: np.ndarray, s: np.ndarray, O: np.ndarray) -> np.ndarray:
    """Least-norm W with (x_iτ - x_it)^T W z_i = log(s_iτ / s_it) for t < τ in O_i (d, d)."""
    d = X.shape[-1]
    (a, b), _ = _pairs(O)
    if len(a) == 0:
        return np.zeros((d, d))
    A = _pair_rows(X, Z, b, a)  # (x_iτ - x_it) z_i^T
    rhs = np.log(s[b[:, 0], b[:, 1]]) - np.log(s[a[:, 0], a[:, 1]])
    w, *_ = np.linalg.lstsq(A, rhs, rcond=None)
    return w.reshape(d, d)


def _least_distance(A: np.ndarray) -> np.ndarray | None:
    """min ||w|| s.t. A w >= 1 through svm's least-distance dual; None if infeasible."""
    u, slack = svm.least_distance_dual(A @ A.T)
    return None if slack <= 1e-12 else A.T @ (u / slack)


def w_dir(X: np.ndarray, Z: np.ndarray, O: np.ndarray, feas_tol: float = 1e-6):
    """W^dir (d, d), or None when no W separates O from the masked tokens (or none is masked)."""
    d = X.shape[-1]
    (a, b), (p, q) = _pairs(O)
    if len(p) == 0:
        return None
    A = _pair_rows(X, Z, p, q)  # (m, d*d) (x_it - x_iτ') z_i^T
    if len(a):
        E = _pair_rows(X, Z, a, b)
        _, sv, vt = np.linalg.svd(E, full_matrices=False)
        basis = vt[sv > 1e-12 * sv[0]]  # row space of the equalities
        A = A - (A @ basis.T) @ basis  # project onto their null space
    w = _least_distance(A)
    if w is None or (A @ w).min() < 1 - feas_tol:
        return None
    return w.reshape(d, d)


def w_fin_dir_nuc(X, Z, s, O, cfg: SolverConfig):
    """Nuclear-norm W^fin and W^dir (the bias of (K,Q) training), as cvxpy models in vec(W)
    solved through the gateway (``cvx.solve``). Returns ((W_fin, status, reason), (W_dir, ...))
    with W None unless the status is optimal or inaccurate."""
    d = X.shape[-1]
    (a, b), (p, q) = _pairs(O)
    out = []
    for kind in ("fin", "dir"):
        W = cp.Variable((d, d))
        w = cp.vec(W, order="C")
        cons = []
        if len(a):
            if kind == "fin":
                rhs = np.log(s[b[:, 0], b[:, 1]]) - np.log(s[a[:, 0], a[:, 1]])
                cons.append(_pair_rows(X, Z, b, a) @ w == rhs)
            else:
                cons.append(_pair_rows(X, Z, a, b) @ w == 0)
        if kind == "dir":
            if len(p) == 0:
                out.append((None, cvx.INFEASIBLE, "no masked token"))
                continue
            cons.append(_pair_rows(X, Z, p, q) @ w >= 1)
        if not cons:
            out.append((np.zeros((d, d)), cvx.OPTIMAL, ""))
            continue
        status, reason = cvx.solve(cp.Problem(cp.Minimize(cp.normNuc(W)), cons), cfg)
        ok = status in (cvx.OPTIMAL, cvx.INACCURATE)
        out.append((W.value if ok else None, status, reason))
    return out[0], out[1]


def fit_R(W: np.ndarray, W_fin: np.ndarray, W_dir: np.ndarray) -> float:
    """argmin_R ||W_fin + R W_dir - W||_F."""
    return float(np.sum((W - W_fin) * W_dir) / np.sum(W_dir * W_dir))


def acceptance_flags(s: np.ndarray, threshold: float, zero_threshold: float) -> dict:
    """Published filters on the final softmax (n, T), and the largest masked probability."""
    O = s >= threshold
    return {
        "band_ok": not bool(((s > zero_threshold) & (s <= threshold)).any()),
        "has_zero": bool((s <= zero_threshold).any()),
        "masked_max": float(s[~O].max()) if (~O).any() else float("nan"),
        "n_selected_max": int(O.sum(-1).max()),
        "multi_selected": bool((O.sum(-1) >= 2).any()),
    }


def analyse_seed(cfg: RunBase, X, Z, s, Ws, seed: int):
    """Row and trajectory of one trained seed: X (n,T,d), Z (n,d), final s (n,T), Ws (C,d,d)."""
    mcfg = cfg.multitoken
    t0 = time.perf_counter()
    O = s >= mcfg.threshold
    flags = acceptance_flags(s, mcfg.threshold, mcfg.zero_threshold)
    finite = bool(np.isfinite(Ws).all() and np.isfinite(s).all())
    row = {"seed": seed, **flags}
    if not finite:
        return {
            **row,
            "status": "diverged",
            "reason": "non-finite parameters",
            "accepted": False,
        }, None
    errors = []  # a solver that failed: the seed is a solver_error, never "infeasible"
    if cfg.parameterization.kind == Parameterization.kq:  # nuclear norm, as published
        (Wf, fin_status, fin_reason), (Wd, dir_status, dir_reason) = w_fin_dir_nuc(
            X, Z, s, O, cfg.solver
        )
        errors += [f"W^fin: {fin_reason}"] * (fin_status == cvx.SOLVER_ERROR)
        errors += [f"W^dir: {dir_reason}"] * (dir_status == cvx.SOLVER_ERROR)
        Wf = np.zeros_like(Ws[-1]) if Wf is None else Wf
        single = svm.w_mm_nuc(X, Z, s.argmax(-1), cfg.solver)
    else:
        Wf, Wd = w_fin(X, Z, s, O), w_dir(X, Z, O, cfg.solver.feas_tol)
        single = svm.w_mm(X, Z, s.argmax(-1), cfg.solver)
    if single.status == cvx.SOLVER_ERROR:
        errors.append(f"W^1token: {single.reason}")
    W_last = Ws[-1]
    curves = {"corr_dir": metrics.corr(Ws, Wd), "corr_1token": metrics.corr(Ws, single.W)}
    R = fit_R(W_last, Wf, Wd) if Wd is not None else float("nan")
    curves["corr_svmeq"] = metrics.corr(Ws, Wf + R * Wd) if Wd is not None else curves["corr_dir"]
    svm_ok = Wd is not None and single.ok
    reasons = []
    if not flags["band_ok"]:
        reasons.append(f"a softmax entry in ({mcfg.zero_threshold:g}, {mcfg.threshold:g}]")
    if not flags["has_zero"]:
        reasons.append(f"no softmax entry <= {mcfg.zero_threshold:g} (finite solution)")
    if Wd is None and not errors:
        reasons.append("W^dir infeasible (or no masked token)")
    if not single.ok and not errors:
        reasons.append(f"W^1token {single.status}")
    reasons = errors + reasons
    row.update(
        status="solver_error" if errors else "ok" if not reasons else "rejected",
        reason="; ".join(reasons),
        svm_ok=svm_ok,
        accepted=not reasons,
        R=R,
        w_fin_norm=float(np.linalg.norm(Wf)),
        w_norm=float(np.linalg.norm(W_last)),
        **{k: float(v[-1]) for k, v in curves.items()},
        **{f"one_minus_{k}": 1 - float(v[-1]) for k, v in curves.items()},
        selected_sets=";".join(",".join(map(str, np.nonzero(o)[0])) for o in O),
        svm_seconds=time.perf_counter() - t0,
    )
    return row, {"seed": seed, **curves}


def _train_batch(cfg: RunBase, seeds: list[int]):
    dtype = getattr(torch, cfg.dtype.value)
    inst = make_instances(cfg.dataset, seeds, dtype=dtype, device=cfg.device.value)
    traj = train(
        inst, make_head(cfg.head, inst), cfg.parameterization, cfg.optimizer,
        engine=train_engine(cfg), threads=cfg.threads,
    )  # fmt: skip
    return inst, traj


def run_batch(cfg: RunBase, seeds: list[int], analyse_all: bool):
    """Train ``seeds``; analyse those passing the softmax filters (all if ``analyse_all``)."""
    t0 = time.perf_counter()
    inst, traj = _train_batch(cfg, seeds)
    traj, inst = on_cpu(traj), on_cpu(inst)  # one copy each from a GPU; the copy waits for it
    train_seconds = (time.perf_counter() - t0) / len(seeds)
    S = traj.final_softmax.double().numpy()  # (R, n, T); SVMs always in float64
    Ws = traj.W.double().numpy()  # (C, R, d, d)
    X, Z = inst.X.double().numpy(), inst.Z.double().numpy()
    rows, curves = [], []
    for r, seed in enumerate(inst.seeds):
        flags = acceptance_flags(S[r], cfg.multitoken.threshold, cfg.multitoken.zero_threshold)
        base = {
            "softmax_max": float(traj.softmax_max[-1, r]),
            "loss": float(traj.loss[-1, r]),
            "grad_norm": float(traj.grad_norm[-1, r]),
            "train_seconds": train_seconds,
        }
        why = divergence(
            traj.steps, loss=traj.loss[:, r], grad_norm=traj.grad_norm[:, r], W=Ws[:, r]
        )
        if why is not None:  # before the filters: a NaN softmax passes none of them
            row = {"seed": seed, **flags, "status": "diverged", "reason": why, "accepted": False}
            curve = None
        elif analyse_all or (flags["band_ok"] and flags["has_zero"]):
            row, curve = analyse_seed(cfg, X[r], Z[r], S[r], Ws[:, r], seed)
        else:
            row, curve = {"seed": seed, **flags, "status": "rejected", "accepted": False}, None
            row["reason"] = "softmax filters (not analysed)"
        rows.append({**row, **base})
        if curve is not None:
            curves.append(
                pd.DataFrame(
                    {
                        "step": traj.steps,
                        **curve,
                        "softmax_max": traj.softmax_max[:, r].cpu().numpy(),
                        "w_norm": np.linalg.norm(Ws[:, r], axis=(-2, -1)),
                        "loss": traj.loss[:, r].cpu().numpy(),
                    }
                )
            )
    return rows, curves


def run_job(cfg: RunBase, progress=None):
    """``seeds`` seeds from ``seed`` on, or with ``multitoken.target_accepted`` set, batches of
    ``batch_size`` seeds until that many are accepted (search.py: the rows are then exactly
    the seeds from ``seed`` up to the target-th accepted one, whatever the batch size), or
    until the search ends for a stated reason (its ``search_end`` column)."""
    from attnsvm.experiments.config_columns import job_columns
    from attnsvm.results.contract import JobResult

    t0 = time.perf_counter()
    target = cfg.multitoken.target_accepted
    rows, curves, search_end = [], [], None
    if target is None:
        seeds = accepted_seeds(cfg.dataset, cfg.seed, cfg.seeds)
        for start in range(0, len(seeds), cfg.batch_size):
            r, c = run_batch(cfg, seeds[start : start + cfg.batch_size], analyse_all=True)
            rows, curves = rows + r, curves + c
            if progress is not None:
                progress(len(rows), len(seeds))
    else:
        rows, curves, search_end = search(cfg, run_batch, progress)
    kept = {row["seed"] for row in rows}
    cols = job_columns(cfg)  # its config_hash filled in by the core
    search_cols = {} if search_end is None else {"search_end": search_end}
    runs = with_constants(pd.DataFrame(rows), {**cols, "seeds_tried": len(rows), **search_cols})
    trajectory = pd.concat(curves or [pd.DataFrame({"seed": [], "step": []})], ignore_index=True)
    trajectory = trajectory[trajectory.seed.isin(kept)]
    trajectory = trajectory.assign(
        **{k: cols[k] for k in ("n", "T", "d", "parameterization", "head", "config_hash")}
    )
    return JobResult(runs, trajectory, "", time.perf_counter() - t0)
