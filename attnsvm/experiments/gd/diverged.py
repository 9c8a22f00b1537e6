"""A diverged seed's row and trajectory in gd's tables (train/divergence.py finds the
divergence; what a diverged seed still reports is the experiment's)."""

from __future__ import annotations

import numpy as np


def diverged_tables(seed: int, traj, r: int, Ws: np.ndarray, why: str, opt, at_opt, svm_cols):
    """Row and trajectory of a diverged seed: what training recorded and the SVMs of its data
    at ``opt`` (``at_opt``, their columns ``svm_cols``), no metric built on W (NaN, or a
    crash)."""
    sel = traj.selected[-1, r].cpu().numpy()
    opt = ",".join(map(str, opt))
    with np.errstate(over="ignore", invalid="ignore"):
        w_norm = np.sqrt(np.einsum("cde,cde->c", Ws, Ws))  # (C,)
    row = {
        "seed": seed,
        "status": "diverged",
        "reason": why,
        **svm_cols,
        "softmax_max": float(traj.softmax_max[-1, r]),
        "softmax_min": float(traj.softmax_min_max[-1, r]),
        "w_norm": float(w_norm[-1]),
        "loss": float(traj.loss[-1, r]),
        "grad_norm": float(traj.grad_norm[-1, r]),
        "selected": ",".join(map(str, sel)),
        "selected_is_opt": opt == ",".join(map(str, sel)),
        "opt": opt,
        "svm_seconds": sum(sol.seconds for sol in at_opt.values()),
        "conv_type": None,  # no convergence type: W has no direction to compare
    }
    trajectory = {
        "seed": seed,
        "step": traj.steps,
        "softmax_max": traj.softmax_max[:, r].cpu().numpy(),
        "softmax_min": traj.softmax_min_max[:, r].cpu().numpy(),
        "w_norm": w_norm,
        "loss": traj.loss[:, r].cpu().numpy(),
        "grad_norm": traj.grad_norm[:, r].cpu().numpy(),
    }
    return row, trajectory
