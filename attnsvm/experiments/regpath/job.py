"""Regularization path (docs/math.md#the-regularization-path, experiment ``regpath``): for R on a
geometric grid,

    W̄_R = argmin L(W)  s.t. ||W||_F <= R                      (W-parameterization)
    (K̄, Q̄)_R = argmin L(K Q^T)  s.t. ||K||_F^2 + ||Q||_F^2 <= 2R   ((K,Q)-parameterization)

solved by projected normalized GD with a decaying step (lr * radius / sqrt(k + 1)), warm-started
from the previous R; a second start at each R near the SVM direction (perturbed) is also solved
and the lower loss at each R is kept, since a single local solver can follow a locally optimal path.
Theory: W̄_R / R -> W^mm / ||W^mm|| and K̄Q̄^T -> the direction of W^mm_*
as R grows, so corr(W̄_R, W^mm) and corr(K̄Q̄^T, W^mm_*) -> 1.

    python -m attnsvm.run experiment=regpath seeds=20                    # W
    python -m attnsvm.run experiment=regpath parameterization=kq seeds=20
"""

from __future__ import annotations

import functools
import time
from typing import NamedTuple

import numpy as np
import pandas as pd
import torch

from attnsvm import metrics
from attnsvm.config.enums import Parameterization
from attnsvm.config.schema import RunBase
from attnsvm.data.generators import accepted_seeds, make_instances
from attnsvm.kernel.batchops import matmul
from attnsvm.results.stack import with_constants
from attnsvm.svm.masked import w_mm_masked
from attnsvm.train.divergence import divergence
from attnsvm.train.heads import make_head
from attnsvm.train.loop import Params, frob, init_params, loss_and_grad_w

from .config import Config

# below this gradient norm the float64 softmax tails are subnormal and the gradient's direction is
# rounding noise: no step is taken (the path then stays where it is, ||W̄_R|| < R, see ``frozen``)
UNDERFLOW = 1e-280


def radii(cfg: Config) -> np.ndarray:
    """The geometric grid r_min ... r_max with ``points`` values."""
    return np.geomspace(cfg.r_min, cfg.r_max, cfg.points)


def _shrunk(*Ms: torch.Tensor) -> tuple[tuple[torch.Tensor, ...], torch.Tensor]:
    """The matrices divided by their largest |entry| (per seed) where their norm overflows
    float64 (a huge step, regpath.lr, makes finite entries whose norm is inf), and where: the
    same direction with a norm that can be computed; such a point lies outside every ball."""
    sq = sum(frob(M) ** 2 for M in Ms)
    big = ~torch.isfinite(sq)  # no branch on it: the path never waits for a GPU
    top = torch.stack([M.abs().flatten(1).amax(-1) for M in Ms]).amax(0)[:, None, None]
    return tuple(torch.where(big[:, None, None], M / top, M) for M in Ms), big


def _project(p: Params, R: float) -> Params:
    """Onto ||W|| <= R, or ||K||^2 + ||Q||^2 <= 2R (a joint rescaling is the projection)."""
    if p.W is not None:
        (W,), big = _shrunk(p.W)
        scale = R / frob(W).clamp_min(1e-300)
        scale = torch.where(big, scale, torch.clamp(scale, max=1.0))
        return Params(W=W * scale[:, None, None])
    (K, Q), big = _shrunk(p.K, p.Q)
    sq = frob(K) ** 2 + frob(Q) ** 2
    scale = torch.sqrt(2 * R / sq.clamp_min(1e-300))
    scale = torch.where(big, scale, torch.clamp(scale, max=1.0))[:, None, None]
    return Params(K=K * scale, Q=Q * scale)


def solve_at(p: Params, inst, head, R: float, cfg: Config, loss_fn=loss_and_grad_w):
    """Projected normalized GD at radius R from ``p`` (already feasible); returns the iterate of
    lowest loss per seed (the method is not monotone; among iterates equal to rounding, which
    happens once the softmax saturates, the latest), its loss (NaN where an iterate was
    non-finite: ``diverged`` reports it), softmax and ||dL/dW||."""
    radius = R if p.W is not None else (2 * R) ** 0.5
    best, best_loss, best_s, best_g = p, None, None, None
    bad = None  # seeds with a non-finite iterate: their loss is returned as NaN (diverged)
    for k in range(cfg.steps + 1):
        W = p.attention_matrix()
        loss, s, gW = loss_fn(W, inst, head)
        now = ~torch.isfinite(loss) | ~torch.isfinite(W).flatten(1).all(-1)
        bad = now if bad is None else bad | now
        if best_loss is None:
            best, best_loss, best_s, best_g = p, loss, s, frob(gW)
        else:
            better = loss <= best_loss + 1e-13 * best_loss.abs()  # ties: the later iterate
            best = Params(**{k_: _where(better, getattr(p, k_), getattr(best, k_)) for k_ in "WKQ"})
            best_loss = torch.where(better, loss, best_loss)
            best_s = torch.where(better[:, None, None], s, best_s)
            best_g = torch.where(better, frob(gW), best_g)
        if k == cfg.steps:
            break
        eta = cfg.lr * radius / (k + 1) ** 0.5
        if p.W is not None:
            gn = frob(gW)[:, None, None]
            step = torch.where(gn > UNDERFLOW, eta / gn.clamp_min(UNDERFLOW), 0.0)
            p = _project(Params(W=p.W - step * gW), R)
        else:
            gK, gQ = matmul(gW, p.Q), matmul(gW.transpose(-1, -2), p.K)
            gn = torch.sqrt(frob(gK) ** 2 + frob(gQ) ** 2)[:, None, None]
            step = torch.where(gn > UNDERFLOW, eta / gn.clamp_min(UNDERFLOW), 0.0)
            p = _project(Params(K=p.K - step * gK, Q=p.Q - step * gQ), R)
    return best, torch.where(bad, torch.nan, best_loss), best_s, best_g


def _where(cond: torch.Tensor, a, b):
    return None if a is None else torch.where(cond[:, None, None], a, b)


def choose_chain(loss_svm: torch.Tensor, loss_init: torch.Tensor, rtol: float = 1e-13):
    """(P, R_seeds) True where the SVM-started chain is kept: strictly lower loss; at a tie
    within rounding (both saturated) the choice of the previous R stands."""
    tol = rtol * loss_init.abs()
    use = torch.zeros_like(loss_svm, dtype=torch.bool)
    prev = torch.zeros_like(loss_svm[0], dtype=torch.bool)
    for j in range(loss_svm.shape[0]):
        lower, higher = loss_svm[j] < loss_init[j] - tol[j], loss_svm[j] > loss_init[j] + tol[j]
        prev = lower | (prev & ~higher)
        use[j] = prev
    return use


def path(inst, head, cfg: RunBase, start=None, loss_fn=loss_and_grad_w):
    """A chain along the grid: warm-started from the configured init, or, with ``start``
    (a function R -> Params), started afresh at each R from ``start(R)``.

    Returns W̄_R (P, R_seeds, d, d), losses (P, R_seeds), mean max softmax (P, R_seeds), the
    selected tokens argmax_t s_it (P, R_seeds, n) and the norm budget used (P, R_seeds)."""
    d = inst.X.shape[-1]
    p = init_params(cfg.parameterization, inst.seeds, d, inst.X.dtype, inst.X.device)
    Ws, losses, smax, sel, used = [], [], [], [], []
    for R in radii(cfg.regpath):
        p = p if start is None else start(float(R))
        p, loss, s, g = solve_at(_project(p, R), inst, head, float(R), cfg.regpath, loss_fn)
        Ws.append(p.attention_matrix().clone())
        # frozen: stopped inside the ball, or a subnormal gradient (its direction is noise)
        used.append(torch.where(g > UNDERFLOW, _budget_used(p, float(R)), 0.0))
        losses.append(loss)
        smax.append(s.max(-1).values.flatten(1).mean(-1))
        sel.append(s.argmax(-1))
    stacked = (Ws, losses, smax, sel, used)
    return tuple(torch.stack(x) for x in stacked)


def _budget_used(p: Params, R: float) -> torch.Tensor:
    """||W|| / R, or (||K||^2 + ||Q||^2) / 2R: 1 on the constraint, < 1 inside (R_seeds,)."""
    if p.W is not None:
        return frob(p.W) / R
    return (frob(p.K) ** 2 + frob(p.Q) ** 2) / (2 * R)


def _svm_start(svms: list, kq: bool, like: torch.Tensor, noise: float, seeds: list[int], r0: float):
    """Radius r0 along W^mm (W) or W^mm_* ((K,Q): balanced factors K = U sqrt(S), Q = V sqrt(S)),
    perturbed by a Gaussian direction of relative size ``noise`` so that GD, not the start,
    decides the direction; a seed without an SVM starts along the identity."""
    d = like.shape[-1]
    mats = []
    for sol, seed in zip(svms, seeds, strict=True):
        W = sol.W if sol.ok else np.eye(d)
        G = torch.randn(d, d, generator=torch.Generator().manual_seed(seed + 1)).double().numpy()
        W = W / np.linalg.norm(W) + noise * G / np.linalg.norm(G)
        mats.append(W / np.linalg.norm(W))
    W = torch.as_tensor(np.stack(mats), dtype=like.dtype, device=like.device)
    if not kq:
        return Params(W=r0 * W)
    U, S, Vh = torch.linalg.svd(r0 * W)
    root = torch.sqrt(S)[:, None, :]
    return Params(K=U * root, Q=Vh.transpose(-1, -2) * root)


def _svms(inst, cfg: RunBase) -> list[tuple]:
    """(W^mm, W^mm_*) of each instance: the directions the path is compared with and started
    along (the nuclear one is solved only where the Frobenius one is feasible)."""
    svms = []
    for r in range(inst.R):
        X, Z = (t[r].cpu().double().numpy() for t in (inst.X, inst.Z))
        opt = inst.opt[r].cpu().numpy()
        mask = None if inst.mask is None else inst.mask[r].cpu().numpy()
        fro = w_mm_masked(X, Z, opt, mask, cfg.solver, "fro")
        nuc = w_mm_masked(X, Z, opt, mask, cfg.solver, "nuc") if fro.ok else fro
        svms.append((fro, nuc))
    return svms


def _chains(inst, head, cfg: RunBase, svms: list[tuple], kq: bool) -> dict[str, tuple]:
    """Both chains (``path``'s tuples): ``init``, warm-started, and ``svm``, started at each R
    along the perturbed SVM of the parameterization, since one local solver can get stuck."""
    chains = {"init": path(inst, head, cfg)}
    sols = [nu if kq else fr for fr, nu in svms]
    noise = cfg.regpath.svm_start_noise
    start = functools.partial(_svm_start, sols, kq, inst.X, noise, inst.seeds)
    chains["svm"] = path(inst, head, cfg, start)
    return chains


def _best_chain(chains: dict[str, tuple]) -> dict[str, torch.Tensor]:
    """W̄_R and what goes with it, from the chain of lower loss at each R (``choose_chain``)."""
    svm, init = chains["svm"], chains["init"]
    use_svm = choose_chain(svm[1], init[1])  # (P, R_seeds)
    return {
        "use_svm": use_svm,
        "W": torch.where(use_svm[..., None, None], svm[0], init[0]),
        "loss": torch.where(use_svm, svm[1], init[1]),
        "smax": torch.where(use_svm, svm[2], init[2]),
        "sel": torch.where(use_svm[..., None], svm[3], init[3]),
        "used": torch.where(use_svm, svm[4], init[4]),
    }


class _Curves(NamedTuple):
    """One seed along the grid: what both of its tables (runs row, trajectory) are made of."""

    corr_fro: np.ndarray  # corr(W̄_R, W^mm)
    corr_nuc: np.ndarray  # corr(W̄_R, W^mm_*)
    corr_fro_init: np.ndarray  # the same for the init chain alone
    corr_nuc_init: np.ndarray
    main: np.ndarray  # corr with the SVM matching the parameterization
    main_init: np.ndarray
    norms: np.ndarray  # ||W̄_R||
    frozen: np.ndarray  # no step taken at that R (see ``path``)
    end: int  # the largest R not frozen (r_end), or the last R if all are


def _curves(r: int, fro, nuc, W_init: torch.Tensor, best: dict, kq: bool) -> _Curves:
    """Seed ``r``'s correlations, norms and frozen radii along the grid, from both chains."""
    W = best["W"][:, r].cpu().double().numpy()
    W_init = W_init[:, r].cpu().double().numpy()
    cf, cn = metrics.corr(W, fro.W), metrics.corr(W, nuc.W)
    cfi, cni = metrics.corr(W_init, fro.W), metrics.corr(W_init, nuc.W)
    main, main_init = (cn, cni) if kq else (cf, cfi)
    norms = np.linalg.norm(W, axis=(-2, -1))
    frozen = best["used"][:, r].cpu().numpy() < 1 - 1e-6
    e = int(np.nonzero(~frozen)[0][-1]) if (~frozen).any() else len(frozen) - 1
    return _Curves(cf, cn, cfi, cni, main, main_init, norms, frozen, e)


def diverged(chains: dict[str, tuple], r: int) -> str | None:
    """Why seed ``r`` diverged: the first chain whose W or loss is non-finite at some R (the
    trajectory's ``step`` indexes the grid), else None. A huge step (``regpath.lr``) can
    overflow W before the projection brings it back."""
    for name, chain in chains.items():
        steps = np.arange(chain[0].shape[0])
        why = divergence(steps, W=chain[0][:, r], loss=chain[1][:, r])
        if why is not None:
            return f"{name} chain: {why}"
    return None


def _run_row(seed: int, r: int, svms: tuple, opt: np.ndarray, c: _Curves, chains, best, grid):
    """Seed ``r``'s row of the runs table: the path at r_end, where the theory is tested."""
    (fro, nuc), e = svms, c.end
    sel_e = best["sel"][e, r].cpu().numpy()
    why = diverged(chains, r)
    status = "ok" if fro.ok and nuc.ok else fro.status
    return {
        "seed": seed,
        "status": "diverged" if why else status,
        "reason": why or fro.reason,
        "feasible": fro.ok,
        "corr_fro": float(c.corr_fro[e]),
        "corr_nuc": float(c.corr_nuc[e]),
        "corr": float(c.main[e]),
        "corr_init": float(c.main_init[e]),
        "best_chain": "svm" if bool(best["use_svm"][e, r]) else "init",
        "loss_gap_init": float(chains["init"][1][e, r] - best["loss"][e, r]),
        "selected_is_opt": bool(np.array_equal(sel_e, opt)),
        "r_max": float(grid[-1]),
        "r_end": float(grid[e]),
        "w_norm": float(c.norms[e]),
        "loss": float(best["loss"][e, r]),
        "softmax_max": float(best["smax"][e, r]),
        "selected": ",".join(map(str, sel_e.reshape(-1))),
        "opt": ",".join(map(str, opt.reshape(-1))),
    }


def _trajectory(seed: int, r: int, c: _Curves, chains, best, grid) -> pd.DataFrame:
    """Seed ``r``'s rows of the trajectory table: the path at every R of the grid."""
    return pd.DataFrame(
        {
            "seed": seed,
            "step": np.arange(len(grid)),
            "R": grid,
            "corr_fro": c.corr_fro,
            "corr_nuc": c.corr_nuc,
            "corr_fro_init": c.corr_fro_init,
            "corr_nuc_init": c.corr_nuc_init,
            "best_chain": np.where(best["use_svm"][:, r].cpu().numpy(), "svm", "init"),
            "w_norm": c.norms,
            "frozen": c.frozen,
            "loss": best["loss"][:, r].cpu().numpy(),
            "loss_init": chains["init"][1][:, r].cpu().numpy(),
            "softmax_max": best["smax"][:, r].cpu().numpy(),
        }
    )


def _batch_tables(inst, cfg: RunBase, grid: np.ndarray, kq: bool):
    """The runs rows and trajectory frames of one batch of seeds (solved together)."""
    svms = _svms(inst, cfg)
    head = make_head(cfg.head, inst)
    chains = _chains(inst, head, cfg, svms, kq)
    chains = {k: tuple(t.cpu() for t in c) for k, c in chains.items()}  # one copy from a GPU
    best = _best_chain(chains)
    rows, trajs = [], []
    for r, seed in enumerate(inst.seeds):
        opt = inst.opt[r].cpu().numpy()
        c = _curves(r, *svms[r], chains["init"][0], best, kq)
        rows.append(_run_row(seed, r, svms[r], opt, c, chains, best, grid))
        trajs.append(_trajectory(seed, r, c, chains, best, grid))
    return rows, trajs


def run_job(cfg: RunBase, progress=None):
    """Regularization paths of ``seeds`` seeds, compared with W^mm and W^mm_* at alpha = opt.

    The constrained problem is non-convex, and projected GD from one start can settle on a
    local solution (one selecting locally optimal tokens). Two chains are run: ``init``,
    warm-started along the grid from the configured init, and ``svm``, started at each R from R
    times a perturbed SVM direction (``regpath.svm_start_noise``); at each R the lower loss is
    kept as W̄_R (``best_chain``). The ``*_init`` columns are the first chain alone, so a user
    sees what a single local solver gives.
    """
    t0 = time.perf_counter()
    dtype = getattr(torch, cfg.dtype.value)
    seeds = accepted_seeds(cfg.dataset, cfg.seed, cfg.seeds)
    grid = radii(cfg.regpath)
    kq = cfg.parameterization.kind == Parameterization.kq
    rows, trajs = [], []
    for start in range(0, len(seeds), cfg.batch_size):
        inst = make_instances(
            cfg.dataset, seeds[start : start + cfg.batch_size], dtype, cfg.device.value
        )
        batch_rows, batch_trajs = _batch_tables(inst, cfg, grid, kq)
        rows += batch_rows
        trajs += batch_trajs
        if progress is not None:
            progress(len(rows), len(seeds))
    return _job_result(cfg, rows, trajs, len(seeds), t0)


def _job_result(cfg: RunBase, rows: list[dict], trajs: list, n_seeds: int, t0: float):
    """The JobResult of the rows, with the config's columns and the time per seed."""
    from attnsvm.experiments.config_columns import job_columns
    from attnsvm.results.contract import JobResult

    cols = job_columns(cfg)  # its config_hash filled in by the core
    runs = with_constants(
        pd.DataFrame(rows), {**cols, "seconds": (time.perf_counter() - t0) / n_seeds}
    )
    trajectory = pd.concat(trajs, ignore_index=True).assign(
        **{k: cols[k] for k in ("n", "T", "d", "parameterization", "head", "config_hash")}
    )
    return JobResult(runs, trajectory, "", time.perf_counter() - t0)
