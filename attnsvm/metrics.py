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


def bregman(a: np.ndarray | None, B: np.ndarray, p: float) -> np.ndarray:
    """D_p(a, b) = ||a||_p^p / p + (p - 1) ||b||_p^p / p - sum sign(b)|b|^(p-1) a between the
    unit-lp SVM solution a and each unit-lp iterate b of B (..., d, d), entrywise norms: the
    alignment measure of lp mirror descent (FOLLOWUPS.md §3), 0 iff aligned. NaN without a."""
    if a is None:
        return np.full(B.shape[:-2], np.nan)
    flat = B.reshape(*B.shape[:-2], -1)
    with np.errstate(invalid="ignore", divide="ignore"):
        b = flat / np.linalg.norm(flat, ord=p, axis=-1, keepdims=True)
        a = a.ravel() / np.linalg.norm(a.ravel(), ord=p)
        dual = np.sign(b) * np.abs(b) ** (p - 1)
        return 1 / p + (p - 1) / p - dual @ a  # unit vectors: both p-th powers are 1


def margin_ratio(values: np.ndarray, margins_min: np.ndarray, svm_value: float | None):
    """gamma_N(W) / gamma_N* = min_j margin_j(W) ||W^mm_N||_N / ||W||_N for iterates W with
    norms ``values`` and least margins ``margins_min``: 1 iff W points along *a* max-margin
    direction of norm N, so it measures alignment also where the SVM's solution is not unique
    (l1, max, spectral)."""
    if svm_value is None:
        return np.full(np.shape(values), np.nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(values > 0, margins_min * svm_value / values, np.nan)


def rate(steps: np.ndarray, corr_curve: np.ndarray, decades: float = 2.0) -> float:
    """Slope of log(1 - corr) against log(step) over the last ``decades`` decades of steps
    before the iterate froze (Vasudeva et al.'s convergence rate): trailing checkpoints equal
    to the final one (an underflowed gradient, PAPER.md §6) are left out; NaN with fewer than
    3 usable points."""
    corr_curve = np.asarray(corr_curve, dtype=float)
    moving = np.nonzero(corr_curve != corr_curve[-1])[0]
    end = moving[-1] + 2 if moving.size else 1  # through the first frozen checkpoint
    steps = np.asarray(steps, dtype=float)[:end]
    gap = 1 - corr_curve[:end]
    use = (steps >= steps[-1] / 10**decades) & (steps > 0) & (gap > 1e-15)
    if use.sum() < 3:
        return float("nan")
    return float(np.polyfit(np.log(steps[use]), np.log(gap[use]), 1)[0])
