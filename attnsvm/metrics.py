"""Metrics (docs/math.md#metrics-and-the-convergence-type): correlation, rank (in svm.py),
convergence type; and whether a seed's training ended before it converged (``not converged``,
docs/convergence.md)."""

from __future__ import annotations

import numpy as np

GLOBAL, LOCAL, OTHER, NOT_CONVERGED = "global", "local", "other", "not converged"
CONV_TYPES = (GLOBAL, LOCAL, OTHER, NOT_CONVERGED)  # the values of the conv_type column


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
    moving: bool = False,
) -> str:
    """global / local / other (docs/math.md#metrics-and-the-convergence-type): a seed that
    reached its limit object, saturated (every max prob >= 1 - delta) and corr(W(K), limit at
    alpha) >= 1 - epsilon, is converged whatever its stall flags: global if alpha = opt, local
    if alpha is locally optimal, else other. One that did not is ``not converged`` when its
    softmax has not saturated or it was still ``moving`` at the end of training
    (``still_moving``), else other: settled, but on no SVM direction."""
    saturated = softmax_min_max >= 1 - delta
    converged = saturated and np.nan_to_num(corr_alpha) >= 1 - epsilon
    if converged:  # reached its limit object: whatever a step rule's stall flags say
        return GLOBAL if alpha_is_opt else LOCAL if alpha_locally_optimal else OTHER
    if not saturated or moving:
        return NOT_CONVERGED
    return OTHER


def window_start(steps, window: float) -> int:
    """Index of the first checkpoint in the last ``window`` (a fraction) of the steps."""
    steps = np.asarray(steps)
    return int(np.searchsorted(steps, (1 - window) * steps[-1]))


def gap_shrink(corr_curve: np.ndarray, start: int) -> float:
    """How much of the alignment gap 1 - corr(W(k), W^mm_alpha) at checkpoint ``start``
    closed by the last one: 1 - gap(K) / gap(k_start); NaN without a gap at the start."""
    gap = 1 - np.asarray(corr_curve, dtype=float)
    if not gap[start] > 0:
        return float("nan")
    return float(1 - gap[-1] / gap[start])


def still_moving(
    selected: np.ndarray, corr_curve: np.ndarray, start: int, shrink: float, stalled: bool
) -> dict[str, bool]:
    """Why a seed's direction was still moving over the checkpoints ``start`` .. K:
    ``tokens_switching`` (the selected tokens ``selected`` (C, n) changed), ``still_aligning``
    (``gap_shrink`` > ``shrink``: 1 - corr with the SVM at the final tokens still closing) and
    ``stalled`` (given: normalized GD's steps shrunk by optimizer.eps,
    docs/math.md#the-epsilon-freeze)."""
    switching = bool((selected[start:] != selected[-1]).any())
    return {
        "tokens_switching": switching,
        "still_aligning": bool(gap_shrink(corr_curve, start) > shrink),
        "stalled": bool(stalled),
    }


def steps_needed(steps, corr_curve: np.ndarray, start: int, epsilon: float) -> float:
    """The step at which 1 - corr reaches ``epsilon`` if it keeps closing as a power of the
    step, as it did from checkpoint ``start`` to the last one (the slope of ``rate``); NaN
    without a gap, inf where it did not close or closes so slowly that the step is beyond
    float64 (no overflow warning: inf is the answer)."""
    steps = np.asarray(steps, dtype=float)
    gap = 1 - np.asarray(corr_curve, dtype=float)
    if not (gap[start] > 0 and gap[-1] > 0 and steps[start] > 0 and steps[-1] > steps[start]):
        return float("nan")
    if gap[-1] <= epsilon:
        return float(steps[-1])
    slope = np.log(gap[-1] / gap[start]) / np.log(steps[-1] / steps[start])
    if slope >= 0:
        return float("inf")
    with np.errstate(over="ignore"):  # beyond float64: inf, the same value, said quietly
        return float(steps[-1] * (epsilon / gap[-1]) ** (1 / slope))


def bregman(a: np.ndarray | None, B: np.ndarray, p: float) -> np.ndarray:
    """D_p(a, b) = ||a||_p^p / p + (p - 1) ||b||_p^p / p - sum sign(b)|b|^(p-1) a between the
    unit-lp SVM solution a and each unit-lp iterate b of B (..., d, d), entrywise norms: the
    alignment measure of lp mirror descent (docs/math.md#mirror-descent-and-lp-svms), 0 iff aligned.
    NaN without a."""
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
    to the final one (an underflowed gradient, docs/math.md#the-epsilon-freeze) are left out; NaN
    with fewer than 3 usable points."""
    corr_curve = np.asarray(corr_curve, dtype=float)
    moving = np.nonzero(corr_curve != corr_curve[-1])[0]
    end = moving[-1] + 2 if moving.size else 1  # through the first frozen checkpoint
    steps = np.asarray(steps, dtype=float)[:end]
    gap = 1 - corr_curve[:end]
    use = (steps >= steps[-1] / 10**decades) & (steps > 0) & (gap > 1e-15)
    if use.sum() < 3:
        return float("nan")
    return float(np.polyfit(np.log(steps[use]), np.log(gap[use]), 1)[0])
