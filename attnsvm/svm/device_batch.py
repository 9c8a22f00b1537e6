"""The Frobenius and nuclear SVMs of a batch as tensor code on the job's GPU, end to end.

On the CPU each instance's constraint factors, reduced bases and solution checks are numpy
calls (svm/solve.py), fine beside a CPU solve. On a GPU they would cost more than the solve, so
here every step is batched over the instances of one shape (n, T, d), on the device:

- constraint factors dx_j = x_{i alpha_i} - x_it, z_j = z_i, in svm.constraints' order
  (sequence by sequence, t ascending, t = alpha_i left out);
- W^mm by batched block principal pivoting (fro_batch.solve_tensors), W^mm_* by the batched
  interior point in the reduced space (nuclear_ipm.solve_tensors) with reduced bases from one
  batched SVD each, grouped by their ranks (p, q);
- the checks: every margin >= 1 - feas_tol (the margins (n, T) are kept, as check_solution
  keeps them), the rank (relative to the largest singular value, as svm.matrix_rank).

An instance the batch cannot certify (no KKT certificate, an interior point that is not
optimal, a margin below 1 - feas_tol) is left as None: the caller's reference path solves it.
"""

from __future__ import annotations

import numpy as np
import torch

from attnsvm.config.schema import SolverConfig
from attnsvm.svm import fro_batch, nuclear_ipm
from attnsvm.svm.cvx import OPTIMAL
from attnsvm.svm.nuclear_ops import Constraints

RANK_TOL = 1e-12  # svm._reduced_basis's relative rank tolerance


def groups(problems: list) -> dict[tuple, list[int]]:
    """Positions of the problems (X, Z, alpha) by the shape of X."""
    out: dict[tuple, list[int]] = {}
    for k, (X, _, _) in enumerate(problems):
        out.setdefault(X.shape, []).append(k)
    return out


def stacked(problems: list, ks: list[int], device: str):
    """X (B, n, T, d), Z (B, n, d), alpha (B, n) of problems ``ks`` on ``device``."""
    X, Z, alpha = (np.stack([problems[k][c] for k in ks]) for c in range(3))
    as_t = lambda a, dt: torch.as_tensor(a, dtype=dt, device=device)  # noqa: E731
    return as_t(X, torch.float64), as_t(Z, torch.float64), as_t(alpha, torch.long)


def factors(X, Z, alpha):
    """dx, zq (B, m, d) and the sequence of each constraint (m,), m = n (T - 1)."""
    nb, n, T, d = X.shape
    k = torch.arange(T - 1, device=X.device)
    others = k + (k >= alpha[..., None])  # (B, n, T-1): t != alpha_i, ascending
    chosen = torch.gather(X, 2, alpha[:, :, None, None].expand(nb, n, 1, d))  # (B, n, 1, d)
    rest = torch.gather(X, 2, others[..., None].expand(nb, n, T - 1, d))
    dx = (chosen - rest).reshape(nb, n * (T - 1), d)
    zq = Z[:, :, None, :].expand(nb, n, T - 1, d).reshape(nb, n * (T - 1), d)
    return dx, zq, torch.arange(n, device=X.device).repeat_interleave(T - 1)


def margins(W, X, Z, alpha):
    """(B, n, T) margins (x_{i alpha_i} - x_it)^T W z_i, +inf at alpha_i."""
    Wz = torch.einsum("bde,bne->bnd", W, Z)
    scores = torch.einsum("bntd,bnd->bnt", X, Wz)
    m = torch.gather(scores, 2, alpha[..., None]) - scores
    return m.scatter(2, alpha[..., None], torch.inf)


def ranks(W, rtol: float):
    sv = torch.linalg.svdvals(W)
    top = sv[:, :1]
    return torch.where(top[:, 0] > 0, (sv > rtol * top).sum(-1), 0)


def checked(W, ok, X, Z, alpha, cfg: SolverConfig) -> list:
    """Per instance (W, margins, rank) as numpy, or None where not ``ok`` or a margin is below
    1 - feas_tol."""
    M = margins(W, X, Z, alpha)
    ok = ok & (M.flatten(1).amin(-1) >= 1 - cfg.feas_tol) & torch.isfinite(W).flatten(1).all(-1)
    Wn, Mn, rn, okn = (t.cpu().numpy() for t in (W, M, ranks(W, cfg.rank_rtol), ok))
    return [(Wn[b], Mn[b], int(rn[b])) if okn[b] else None for b in range(len(okn))]


def fro(X, Z, alpha, cfg: SolverConfig) -> list:
    dx, zq, _ = factors(X, Z, alpha)
    step = fro_batch.chunk(dx.shape[1] ** 2)
    out = []
    for s in range(0, len(X), step):
        part = slice(s, s + step)
        out += _guarded(_fro_chunk, dx[part], zq[part], X[part], Z[part], alpha[part], cfg)
    return out


def _fro_chunk(dx, zq, X, Z, alpha, cfg):
    return checked(*fro_batch.solve_tensors(dx, zq), X, Z, alpha, cfg)


def _nuc_chunk(con, U, V, X, Z, alpha, cfg):
    Wr, status, _ = nuclear_ipm.solve_tensors(con, cfg.tol, cfg.max_iters)
    ok = torch.as_tensor([st == OPTIMAL for st in status], device=X.device)
    return checked(U @ Wr @ V.transpose(-1, -2), ok, X, Z, alpha, cfg)


def _guarded(solve, *args) -> list:
    """``solve(*args)`` for a chunk of instances (X = args[-4]), or None for each where a
    batched GPU routine gave up (torch.linalg.LinAlgError): they go to the reference path,
    and the job goes on."""
    try:
        return solve(*args)
    except torch.linalg.LinAlgError:
        return [None] * len(args[-4])


def _basis(A):
    """Orthonormal bases (B, d, r) of the row spaces of A (B, m, d) and their ranks r (B,)."""
    _, sv, vt = torch.linalg.svd(A, full_matrices=False)
    keep = sv > RANK_TOL * torch.clamp(sv[:, :1], min=1e-300)
    return vt.transpose(-1, -2), keep.sum(-1)


def nuc(X, Z, alpha, cfg: SolverConfig) -> list:
    """W^mm_* of feasible instances: the interior point per group of reduced ranks (p, q)."""
    dx, _, rows = factors(X, Z, alpha)
    out: list = [None] * len(X)
    try:
        U, p = _basis(dx)
        V, q = _basis(Z)
    except torch.linalg.LinAlgError:
        return out
    pq = torch.stack([p, q], -1).cpu().numpy()
    for key in {tuple(r) for r in pq} - {k for k in map(tuple, pq) if 0 in k}:
        idx = torch.as_tensor(np.nonzero((pq == key).all(-1))[0], device=X.device)
        Ug, Vg = U[idx][..., : key[0]], V[idx][..., : key[1]]
        a, b = dx[idx] @ Ug, Z[idx] @ Vg
        size = a.shape[1] ** 2 + sum(key) ** 2
        step = fro_batch.chunk(size)
        for s in range(0, len(idx), step):
            part = idx[s : s + step]
            con = Constraints(a[s : s + step], b[s : s + step], rows.expand(len(part), -1))
            U_s, V_s = Ug[s : s + step], Vg[s : s + step]
            results = _guarded(_nuc_chunk, con, U_s, V_s, X[part], Z[part], alpha[part], cfg)
            for k, res in zip(part.tolist(), results, strict=True):
                out[k] = res
    return out
