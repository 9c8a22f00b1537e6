"""The Frobenius SVM's dual of a large instance, exactly, by block principal pivoting.

The hard-margin SVM min ||W||_F s.t. <A_j, W> >= 1 has the dual QP min u^T G u / 2 - 1^T u,
u >= 0 (G_jk = <A_j, A_k>), i.e. the linear complementarity problem s = G u - 1 >= 0, u >= 0,
u^T s = 0, and W^mm = sum_j u_j A_j. Block principal pivoting (Judice & Pires 1994; Kim & Park
2011, the NNLS form) guesses the support F, solves G_FF u_F = 1 and swaps every index that
breaks a sign, falling back to one swap at a time when the count of broken signs stops
falling. On the attention SVMs it ends in 4-6 solves where Lawson-Hanson's NNLS adds one
support vector per step (over a thousand steps at (n, T, d) = (100, 32, 128)): far faster
(docs/benchmarks.md), the same W to 1e-14. It ends only at an exact complementary point, so
its answer is the optimum up to rounding; None (singular G_FF, no convergence) sends the
caller to the NNLS dual, which also decides infeasibility. Products and factorisations run
in torch on one thread (MKL in strict reproducibility mode), so the bits never depend on the
thread count.
"""

from __future__ import annotations

import numpy as np
import torch

from attnsvm.runtime import one_thread

BACKUP = 3  # block swaps allowed without fewer broken signs before single swaps


def svm_dual(dx: np.ndarray, zq: np.ndarray, max_iter: int = 100) -> np.ndarray | None:
    """u (m,) of the attention SVM with A_j = dx_j zq_j^T (G = (dx dx^T) * (zq zq^T)), or None."""
    with one_thread():
        dxt, zqt = torch.as_tensor(dx), torch.as_tensor(zq)
        u = complementary_point((dxt @ dxt.T) * (zqt @ zqt.T), max_iter)
    return None if u is None else u.numpy()


def complementary_point(G: torch.Tensor, max_iter: int = 100) -> torch.Tensor | None:
    """u >= 0 with s = G u - 1 >= 0 and u_j s_j = 0, for a positive definite G; else None."""
    m = G.shape[0]
    one = torch.ones(m, 1, dtype=G.dtype)
    F = torch.zeros(m, dtype=torch.bool)  # the guessed support
    fewest, patience = m + 1, BACKUP
    for _ in range(max_iter):
        idx = F.nonzero().squeeze(-1)
        u = torch.zeros(m, dtype=G.dtype)
        if len(idx):
            L, info = torch.linalg.cholesky_ex(G[idx][:, idx])
            if info != 0:  # dependent constraints: not this method's case
                return None
            u[idx] = torch.cholesky_solve(one[idx], L)[:, 0]
        s = G[:, idx] @ u[idx] - 1
        broken = (F & (u < 0)) | (~F & (s < 0))
        count = int(broken.sum())
        if count == 0:
            return u
        if count < fewest:
            fewest, patience = count, BACKUP
        elif patience > 0:
            patience -= 1
        else:  # cycling guard: swap only the last broken index
            broken = torch.zeros_like(broken).index_fill_(0, broken.nonzero().max(), True)
        F = F ^ broken
    return None
