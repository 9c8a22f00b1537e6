"""Metrics of PAPER.md §4: correlation, rank (in svm.py), convergence type."""

from __future__ import annotations

import numpy as np

GLOBAL, LOCAL, OTHER = "global", "local", "other"


def corr(W1: np.ndarray, W2: np.ndarray | None) -> np.ndarray:
    """<W1, W2> / (||W1||_F ||W2||_F) over the last two axes; NaN where W2 is missing or zero."""
    if W2 is None:
        return np.full(W1.shape[:-2], np.nan)
    num = np.einsum("...ij,ij->...", W1, W2)
    den = np.linalg.norm(W1, axis=(-2, -1)) * np.linalg.norm(W2)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)


def convergence_type(
    softmax_min_max: float,
    corr_alpha: float,
    alpha_is_opt: bool,
    alpha_locally_optimal: bool,
    delta: float,
    epsilon: float,
) -> str:
    """global / local / other (PAPER.md §4): saturated (every max prob >= 1 - delta) and
    corr(W(K), W^mm_alpha) >= 1 - epsilon, then global if alpha = opt, local if alpha is
    locally optimal; anything else is other."""
    converged = softmax_min_max >= 1 - delta and np.nan_to_num(corr_alpha) >= 1 - epsilon
    if converged and alpha_is_opt:
        return GLOBAL
    if converged and alpha_locally_optimal:
        return LOCAL
    return OTHER
