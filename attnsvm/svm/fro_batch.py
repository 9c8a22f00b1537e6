"""The Frobenius SVMs of many instances at once, by batched block principal pivoting.

Every instance of one constraint shape (m, d) is one slice of a batch: its Gram matrix
G_jk = <A_j, A_k> = (dx_j . dx_k)(z_j . z_k) (B, m, m), scaled by its largest diagonal entry
so that no test below depends on the data's scale, and the complementarity problem
s = G u - 1 >= 0, u >= 0, u^T s = 0 solved for all of them together (lcp.py solves one at a
time): each instance guesses its support F, solves G_FF u_F = 1 (a Cholesky factor of G with
the rows and columns outside F replaced by the identity) and swaps the indices that break a
sign, with its own stopping and its own cycling guard. W^mm = sum_j u_j A_j.

Certified, never guessed: an answer is accepted when u >= 0 and s >= 0 to ``CERT_TOL`` and
u_j s_j = 0 to ``CERT_TOL`` (the KKT conditions of the Frobenius SVM, in the scaled units),
and afterwards when every margin is >= 1 - feas_tol (svm.check_solution). An instance whose
pivoting does not end or fails a certificate (a singular G_FF, as when n(T-1) > d^2 or the
instance is infeasible) goes to the reference path (svm.w_mm, the least-distance dual), and
its ``path`` says so.

Products by attnsvm.kernel.batchops and LAPACK on one thread: an instance's bits never depend
on its batch mates, so they do not depend on ``threads`` or on the batch size either.
"""

from __future__ import annotations

import numpy as np
import torch

from attnsvm.kernel import batchops
from attnsvm.runtime import one_thread

BACKUP = 3  # block swaps allowed without fewer broken signs before single swaps (lcp.py)
MAX_PIVOTS = 100
SINGULAR = 3  # singular G_FF in a row after which an instance is left to the reference path
CERT_TOL = 1e-9  # KKT residuals, relative to the largest |A_j|^2 (scale-free)
BATCHED = "batched"  # SVMSolution.path of an instance this module certified
GPU_BATCH = 16384  # instances per call on a GPU, at most
GPU_ENTRIES = 2**27  # and about this many m x m matrix entries (1 GiB in float64)


def gram(dx: torch.Tensor, zq: torch.Tensor) -> torch.Tensor:
    """(B, m, m) <A_j, A_k> for A_j = dx_j zq_j^T, from dx, zq (B, m, d)."""
    return batchops.matmul(dx, dx.transpose(-1, -2)) * batchops.matmul(zq, zq.transpose(-1, -2))


class _Pivots:
    """Per-instance state of block principal pivoting: the guessed support F, the last
    support whose G_FF factored (``good``) and its signed residuals (``score``: u_j on F, s_j
    off it; negative = broken), the cycling guard's counters, and how each instance ended."""

    def __init__(self, nb: int, m: int, dtype, device):
        self.F = torch.zeros(nb, m, dtype=torch.bool, device=device)
        self.good = self.F.clone()
        self.score = -torch.ones(nb, m, dtype=dtype, device=device)  # u = 0: every s_j = -1
        self.u = torch.zeros(nb, m, dtype=dtype, device=device)
        self.fewest = torch.full((nb,), m + 1, device=device)
        self.patience = torch.full((nb,), BACKUP, device=device)
        self.singular = torch.zeros(nb, dtype=torch.long, device=device)  # failed in a row
        self.ended = torch.zeros(nb, dtype=torch.bool, device=device)
        self.failed = torch.zeros(nb, dtype=torch.bool, device=device)

    def update(self, act, Fa, ua, s, info):
        """Record the solve of the instances ``act`` and choose their next supports."""
        ok = info == 0
        broken = (Fa & (ua < 0)) | (~Fa & (s < 0))
        count = broken.sum(-1)
        self.u[act] = torch.where(ok[:, None], ua, self.u[act])
        self.ended[act] = ok & (count == 0)
        score = torch.where(ok[:, None], torch.where(Fa, ua, s), self.score[act])
        good = torch.where(ok[:, None], Fa, self.good[act])
        self.score[act], self.good[act] = score, good
        singular = torch.where(ok, 0, self.singular[act] + 1)
        self.singular[act], self.failed[act] = singular, singular > SINGULAR
        fewer = ok & (count < self.fewest[act])
        self.fewest[act] = torch.where(fewer, count, self.fewest[act])
        single = ~ok | (~fewer & (self.patience[act] == 0))
        self.patience[act] = torch.where(fewer, BACKUP, (self.patience[act] - 1).clamp(min=0))
        m = Fa.shape[-1]
        last = m - 1 - broken.flip(-1).int().argmax(-1)  # the last broken index
        worst = score.argmin(-1)  # after a singular G_FF: the most broken sign of ``good``
        one = torch.where(ok, last, worst)
        only = torch.zeros_like(Fa).scatter_(1, one[:, None], True)
        base = torch.where(ok[:, None], Fa, good)
        self.F[act] = base ^ torch.where(single[:, None], only, broken)


def complementary_points(G: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """u (B, m) >= 0 with s = G u - 1 >= 0, u_j s_j = 0 for each G (B, m, m), and which
    instances ended with such a point (B,) bool; the others' u is meaningless. A positive
    semidefinite G whose guessed G_FF is singular steps back to its last factored support and
    swaps one index (the most broken sign) instead, as an active-set method would."""
    nb, m, _ = G.shape
    state = _Pivots(nb, m, G.dtype, G.device)
    eye = torch.eye(m, dtype=G.dtype, device=G.device)
    for _ in range(MAX_PIVOTS):
        act = (~state.ended & ~state.failed).nonzero().squeeze(-1)
        if not len(act):
            break
        Fa, Ga = state.F[act], G[act]
        L, info = torch.linalg.cholesky_ex(torch.where(Fa[:, :, None] & Fa[:, None, :], Ga, eye))
        ua = torch.cholesky_solve(Fa.to(G.dtype)[:, :, None], L)[:, :, 0]
        s = batchops.matmul(Ga, ua[:, :, None])[:, :, 0] - 1
        state.update(act, Fa, ua, s, info)
    return state.u, state.ended & ~state.failed


def certified(G: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """(B,) whether u satisfies the KKT conditions of the scaled problem to CERT_TOL."""
    s = batchops.matmul(G, u[:, :, None])[:, :, 0] - 1
    worst = torch.maximum((-u).amax(-1), (-s).amax(-1))
    return (worst <= CERT_TOL) & ((u * s).abs().amax(-1) <= CERT_TOL) & torch.isfinite(u).all(-1)


def fro_svm_batch(
    dx: np.ndarray, zq: np.ndarray, device: str = "cpu"
) -> tuple[np.ndarray, np.ndarray]:
    """W^mm (B, d, d) of B instances with constraint factors dx, zq (B, m, d), and which of
    them are certified (B,) bool; an uncertified instance's W is undefined (the caller
    re-solves it by the reference path). On a GPU (``device``) in chunks of at most
    ``chunk(m)`` instances: its batched factorisations accept only so many at once."""
    step = per_call(device, dx.shape[1] ** 2, len(dx))
    parts = [_solve(dx[k : k + step], zq[k : k + step], device) for k in range(0, len(dx), step)]
    if not parts:
        return np.zeros((0, dx.shape[-1], zq.shape[-1])), np.zeros(0, dtype=bool)
    return np.concatenate([W for W, _ in parts]), np.concatenate([ok for _, ok in parts])


def per_call(device: str, size: int, count: int) -> int:
    """Instances per solver call: all ``count`` on the CPU, ``chunk(size)`` on a GPU."""
    return max(count, 1) if device == "cpu" else chunk(size)


def chunk(size: int, entries: int = GPU_ENTRIES) -> int:
    """Instances per GPU call when each holds ``size`` matrix entries: about ``entries`` in
    all, at most GPU_BATCH (cuSOLVER's batched solvers failed at 10^5 instances)."""
    return int(max(1, min(GPU_BATCH, entries // max(size, 1))))


def _solve(dx: np.ndarray, zq: np.ndarray, device: str) -> tuple[np.ndarray, np.ndarray]:
    dxt, zqt = (torch.as_tensor(t, dtype=torch.float64, device=device) for t in (dx, zq))
    W, ok = solve_tensors(dxt, zqt)
    return W.cpu().numpy(), ok.cpu().numpy()


def solve_tensors(dxt: torch.Tensor, zqt: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``fro_svm_batch`` of float64 tensors (B, m, d) on their own device, in one call."""
    with one_thread():
        G = gram(dxt, zqt)
        scale = G.diagonal(dim1=-2, dim2=-1).amax(-1)  # (B,) the largest |A_j|^2
        ok = scale > 0
        Gs = G / torch.where(ok, scale, 1.0)[:, None, None]
        u, ended = complementary_points(Gs)
        ok = ok & ended & certified(Gs, u)
        mu = u / torch.where(ok, scale, 1.0)[:, None]  # the dual of the unscaled problem
        W = batchops.matmul((dxt * mu[:, :, None]).transpose(-1, -2), zqt)  # sum_j mu_j dx_j z_j^T
    return W, ok
