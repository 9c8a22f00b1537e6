"""Sequential (and causal) attention: every token is a query (docs/math.md#sequential-attention).

Sequence i with tokens X_i (T, d) and label Y_i becomes T query rows (i, k): query
z_ik = x_ik, the same tokens, the same label, and, with ``dataset.causal=true``, only the tokens
t <= k visible. Flattening (i, k) into the sequence axis (n -> n T) lets GD, the heads and the
SVMs run unchanged (``flatten_queries``, attnsvm/data/generators.py); the visibility ``mask``
(R, n T, T) removes hidden tokens from the softmax (logit -inf) and from the SVM, whose
constraints are one per (i, k, t != alpha_ik), t visible:

    min ||W||  s.t.  (x_{i alpha_ik} - x_it)^T W x_ik >= 1  for all i, k and visible t != alpha_ik.

    python -m attnsvm.run dataset.attention=sequential dataset.causal=true dataset.T=4 seeds=8
"""

from __future__ import annotations

import numpy as np

from attnsvm.config.schema import SolverConfig
from attnsvm.svm import solve as svm


def masked_view(X: np.ndarray, Z: np.ndarray, mask: np.ndarray, alpha: np.ndarray):
    """An equivalent unmasked SVM problem: rows whose only visible token is alpha are dropped
    (they carry no constraint) and each hidden token is replaced by a visible token != alpha
    (a duplicate constraint, which changes neither the solution nor its margins)."""
    n, T = mask.shape
    others = mask & (np.arange(T)[None, :] != alpha[:, None])  # (n, T) constrained tokens
    keep = others.any(-1)
    Xv = X.copy()
    for i in np.nonzero(keep)[0]:
        Xv[i, ~mask[i]] = X[i, np.argmax(others[i])]
    return Xv[keep], Z[keep], alpha[keep]


def masked_problem(X: np.ndarray, Z: np.ndarray, alpha: np.ndarray, mask: np.ndarray | None):
    """The SVM problem (X, Z, alpha) with only visible tokens constrained: ``masked_view``
    where some token is hidden, else the problem itself."""
    if mask is None or mask.all():
        return X, Z, alpha
    return masked_view(X, Z, mask, alpha)


def unmask(sol: svm.SVMSolution, X, Z, alpha, mask: np.ndarray | None) -> svm.SVMSolution:
    """Margins (n, T) of a solution of ``masked_problem`` on the full problem, +inf at hidden
    tokens, so support tokens and local optimality read them as never active."""
    if sol.W is not None and mask is not None and not mask.all():
        sol.margins = svm.margins_of(sol.W, X, Z, alpha)
        sol.margins[~mask] = np.inf
    return sol


def w_mm_masked(
    X: np.ndarray,
    Z: np.ndarray,
    alpha: np.ndarray,
    mask: np.ndarray | None,
    cfg: SolverConfig,
    norm: str = "fro",
) -> svm.SVMSolution:
    """``svm.w_mm`` / ``svm.w_mm_nuc`` with only visible tokens constrained (one instance)."""
    solve = svm.w_mm if norm == "fro" else svm.w_mm_nuc
    return unmask(solve(*masked_problem(X, Z, alpha, mask), cfg), X, Z, alpha, mask)
