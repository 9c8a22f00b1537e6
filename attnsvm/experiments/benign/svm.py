"""The max-margin interpolators of experiment=benign at the tokens GD selects (docs/benign.md),
as least-distance problems min |w| s.t. A w >= 1 solved by ``attnsvm.svm.solve.
least_distance_dual`` from the Gram matrix (NNLS; a vanishing slack certifies infeasibility):

- p-SVM (both settings): rows x_{i,sel_i} - x_{i,t}, t != sel_i: the attention vector q (p, or
  W p) of largest margin that puts softmax(c X q) on the selected tokens as c -> infinity;
- v-SVM (two_token): rows y_i x_{i,sel_i}: the hard-margin SVM of the value vector on the
  selected tokens' features with the labels trained on (flipped included).

The max-margin predictor attends only to argmax_t x_t^T q_mm and reads it with v_mm (two_token)
or the fixed head nu (token_selection).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SLACK_TOL = 1e-10  # slack in units of the largest |A_j|^2: below it, 0 is in the hull
MARGIN_TOL = 1e-6  # a returned w must satisfy A w >= 1 - MARGIN_TOL


@dataclass
class MaxMargin:
    """One problem's solution: w, or None with status infeasible / failed and why."""

    w: np.ndarray | None
    status: str  # ok | infeasible | failed
    reason: str = ""


def max_margin(A: np.ndarray, what: str) -> MaxMargin:
    """min |w| s.t. A w >= 1 (A: (m, d) float64), via the dual on the scaled Gram matrix."""
    from attnsvm.svm.solve import least_distance_dual

    if not np.isfinite(A).all():
        return MaxMargin(None, "failed", f"{what}: non-finite constraint rows")
    gram = A @ A.T
    scale = float(gram.diagonal().max()) if len(gram) else 0.0
    if not scale > 0:
        return MaxMargin(None, "infeasible", f"{what}: every constraint row is 0")
    u, slack = least_distance_dual(gram / scale)
    if slack < SLACK_TOL:
        return MaxMargin(None, "infeasible", f"{what}: 0 is in the hull of the rows")
    w = A.T @ u / (slack * scale)
    low = float((A @ w).min())
    if low < 1 - MARGIN_TOL:
        return MaxMargin(None, "failed", f"{what}: least margin {low:.3g} < 1 after NNLS")
    return MaxMargin(w, "ok")


def p_rows(X: np.ndarray, sel: np.ndarray) -> np.ndarray:
    """x_{i,sel_i} - x_{i,t} for every i and t != sel_i: (n (T-1), d), X (n, T, d)."""
    n, T, _ = X.shape
    chosen = X[np.arange(n), sel]  # (n, d)
    others = np.ones((n, T), dtype=bool)
    others[np.arange(n), sel] = False
    return (chosen[:, None, :] - X)[others]


def v_rows(X: np.ndarray, y: np.ndarray, sel: np.ndarray) -> np.ndarray:
    """y_i x_{i,sel_i}: (n, d)."""
    return y[:, None] * X[np.arange(len(sel)), sel]


def hard_predict(X: np.ndarray, q: np.ndarray, value: np.ndarray) -> np.ndarray:
    """f = x_{argmax_t x_t^T q}^T value for X (m, T, d): the limit of the softmax predictor."""
    pick = (X @ q).argmax(-1)
    return X[np.arange(len(X)), pick] @ value


def solve_seed(X, y, sel, Xtest, ytest, nu) -> dict:
    """The SVMs of one seed at its selected tokens and their test accuracy: {"q": .., "v": ..,
    "test_acc": .., "status": .., "reason": ..} (nu None: two_token, v solved too)."""
    out = {"q": None, "v": None, "test_acc": np.nan, "status": "ok", "reason": ""}
    problems = [("q", p_rows(X, sel), "p-SVM")]
    if nu is None:
        problems.append(("v", v_rows(X, y, sel), "v-SVM"))
    for key, A, what in problems:
        sol = max_margin(A, what)
        if sol.w is None:
            return {**out, "status": sol.status, "reason": sol.reason}
        out[key] = sol.w
    value = out["v"] if nu is None else nu
    out["test_acc"] = float(np.mean(ytest * hard_predict(Xtest, out["q"], value) > 0))
    return out
