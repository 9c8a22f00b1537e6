"""One ``icl`` job: R seeds trained at once, then the limit and the baselines on test prompts.

from types import SimpleNamespace
run = SimpleNamespace(seed=0, seeds=4, dtype="float64", device="cpu", threads=1, icl=Config())
result = run_job(run)   # result.runs: one row per seed; result.trajectory: per checkpoint
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import torch

from attnsvm.experiments.config_columns import group_columns
from attnsvm.results.contract import JobResult

from . import baselines, data, limits
from .config import Config, Parameterization
from .train import Trajectory, squared_loss, train


def _text(value) -> str:
    return str(getattr(value, "value", value))


def config_columns(cfg: Config) -> dict:
    """Every ``icl.*`` key as a column, so sweep tables carry their axes."""
    return group_columns(cfg, "icl")


def alignment(A: torch.Tensor, A_star: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """corr(A, A*) and ||A - A*||_F / ||A*||_F for A (..., d, d)."""
    A, A_star = A.double().cpu(), A_star.double()
    inner = (A * A_star).sum((-1, -2))
    corr = inner / (A.norm(dim=(-1, -2)) * A_star.norm())
    rel = (A - A_star).norm(dim=(-1, -2)) / A_star.norm()
    return corr.numpy(), rel.numpy()


def _baselines(cfg: Config, Lam, test: data.Prompts) -> dict[str, np.ndarray]:
    """Test losses (R,) of A = Gamma^{-1}, of one plain GD step with the best step size and of
    the fitted L-step preconditioned GD, and the closed-form population losses."""
    dtype, device = test.E.dtype, test.E.device
    A_star = limits.limit(Lam, cfg.N, cfg.noise)
    eta = limits.gd1_step(Lam, cfg.N, cfg.noise)
    eye = torch.eye(cfg.d, dtype=torch.float64)
    P = baselines.fit_pgd(cfg, Lam, dtype, device)
    out = {}
    for name, pre in [("limit", A_star[None]), ("gd1", eta * eye[None]), ("pgd", P)]:
        y_hat = baselines.pgd_predict(pre.to(dtype=dtype, device=device), test)
        out[f"icl_loss_{name}"] = squared_loss(y_hat, test.y_q).cpu().numpy()
    out["pop_loss_limit"] = float(limits.population_loss(A_star, Lam, cfg.N, cfg.noise))
    out["pop_loss_gd1"] = float(limits.population_loss(eta * eye, Lam, cfg.N, cfg.noise))
    out["gd1_step"] = eta
    return out


def _diverged_from(traj: Trajectory, r: int) -> int | None:
    """The first checkpoint step whose weights or test loss are non-finite for seed r."""
    finite = all(torch.isfinite(v[r]).all() for v in traj.params.values())
    bad = ~torch.isfinite(traj.test_loss[:, r])
    if finite and not bad.any():
        return None
    return traj.steps[int(bad.nonzero()[0])] if bad.any() else traj.steps[-1]


def _trajectory_rows(cfg, seeds, traj: Trajectory, A_star, cols: dict) -> pd.DataFrame:
    C, R = traj.test_loss.shape
    corr = rel = np.full((C, R), np.nan)
    if traj.A is not None:
        corr, rel = alignment(traj.A, A_star)
    loss = traj.test_loss.cpu().numpy()
    rows = [
        {"seed": s, "step": step, "loss": loss[c, r], "corr_limit": corr[c, r]}
        | {"rel_err_limit": rel[c, r], **cols}
        for r, s in enumerate(seeds)
        for c, step in enumerate(traj.steps)
    ]
    return pd.DataFrame(rows)


def _pop_loss(cfg: Config, traj: Trajectory, Lam) -> np.ndarray:
    closed = cfg.layers == 1 and cfg.parameterization != Parameterization.full
    if not closed:
        return np.full(traj.test_loss.shape[1], np.nan)
    return limits.population_loss(traj.A[-1].double().cpu(), Lam, cfg.N, cfg.noise).numpy()


def run_job(run, progress=None) -> JobResult:
    """All seeds of one icl job; a seed whose training leaves the finite numbers is 'diverged'."""
    t0 = time.perf_counter()
    cfg: Config = run.icl
    dtype, device = getattr(torch, _text(run.dtype)), _text(run.device)
    seeds = list(range(run.seed, run.seed + run.seeds))
    Lam = limits.covariance(cfg)
    A_star = limits.limit(Lam, cfg.N, cfg.noise)
    chol = torch.linalg.cholesky(Lam).to(dtype=dtype, device=device)
    gens = [data.generator(s, data.TEST, device) for s in seeds]
    test = data.draw(gens, cfg.test_prompts, cfg.N, chol, cfg.noise)
    traj = train(cfg, seeds, test, Lam)
    base = _baselines(cfg, Lam, test)
    cols = config_columns(cfg)
    trajectory = _trajectory_rows(cfg, seeds, traj, A_star, cols)
    final = trajectory[trajectory.step == cfg.steps].set_index("seed")
    pop = _pop_loss(cfg, traj, Lam)
    seconds = (time.perf_counter() - t0) / len(seeds)
    rows = []
    for r, s in enumerate(seeds):
        bad = _diverged_from(traj, r)
        row = {"seed": s, "status": "ok" if bad is None else "diverged"}
        row["reason"] = "" if bad is None else f"non-finite weights or loss by step {bad}"
        row |= {k: final.at[s, k] for k in ("corr_limit", "rel_err_limit")}
        row |= {"icl_loss": final.at[s, "loss"], "pop_loss": pop[r]}
        row |= {k: (v[r] if isinstance(v, np.ndarray) else v) for k, v in base.items()}
        rows.append({**row, "seconds": seconds, **cols})
    if progress is not None:
        progress(len(seeds), len(seeds))
    return JobResult(pd.DataFrame(rows), trajectory, "", seconds * len(seeds))
