"""Attention SVM (docs/math.md#attention-svms): min ||W|| s.t. (x_{i alpha_i} - x_it)^T W z_i >= 1,
t != alpha_i.

Each constraint is <W, A_j> >= 1 with A_j = (x_{i alpha_i} - x_it) z_i^T, j = (i, t), so the
problem is one matrix inequality built without a Python loop over (i, t).

* Frobenius (``w_mm``): the least-distance program min ||w|| s.t. A w >= 1 is solved exactly
  through its non-negative least-squares dual (Lawson & Hanson, ch. 23) in n(T-1) variables,
  whatever d is; the Gram matrix <A_j, A_k> = (dx_j . dx_k)(z_j . z_k) never forms d^2 vectors.
  From LARGE_M constraints the same dual by block principal pivoting first (lcp.py: faster).
* Nuclear (``w_mm_nuc``): an SDP. Projecting W onto span{dx_j} on the left and span{z_i} on the
  right keeps every constraint and never increases the nuclear norm, so it is solved in that
  reduced (p x q) space, p <= n(T-1), q <= n, and mapped back. By default many instances are
  solved in one call of a batched interior-point method (nuclear_ipm.py, ``w_mm_nuc_batch``); the
  per-instance cvxpy model is kept as the plain reference (``solver.backend=CLARABEL`` or SCS).

Infeasible instances are reported as such, never as a rank or a direction.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from scipy.optimize import nnls

from attnsvm.config.enums import Backend, FroMethod
from attnsvm.config.schema import SolverConfig
from attnsvm.svm import cvx, fro_batch, lcp
from attnsvm.svm.cvx import INACCURATE, INFEASIBLE, OPTIMAL, SOLVER_ERROR
from attnsvm.svm.fro_batch import BATCHED
from attnsvm.svm.nuclear_ipm import LARGE_M, nuclear_svm_batch

HULL_TOL = 1e-6  # an infeasibility certificate: 0 within this of conv{A_j / max |A_j|}


@dataclass
class SVMSolution:
    """One solve. ``W`` is None unless status is optimal or inaccurate."""

    norm: str  # "fro" or "nuc"
    status: str
    W: np.ndarray | None = None  # (d, d)
    margins: np.ndarray | None = None  # (n, T), +inf at alpha_i
    rank: int | None = None
    seconds: float = 0.0
    reason: str = ""
    path: str = "reference"  # who solved it: "batched" (certified) or the reference path

    @property
    def ok(self) -> bool:
        return self.W is not None


def constraints(X: np.ndarray, Z: np.ndarray, alpha: np.ndarray):
    """Constraint factors dx (m, d) = x_{i alpha_i} - x_it, zq (m, d) = z_i, ids (m, 2) = (i, t)."""
    n, T, _ = X.shape
    mask = np.arange(T)[None, :] != alpha[:, None]  # (n, T)
    i_idx, t_idx = np.nonzero(mask)
    dx = X[i_idx, alpha[i_idx]] - X[i_idx, t_idx]
    return dx, Z[i_idx], np.stack([i_idx, t_idx], axis=1)


def margins_of(W: np.ndarray, X: np.ndarray, Z: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """(x_{i alpha_i} - x_it)^T W z_i for every (i, t), +inf at t = alpha_i."""
    Wz = Z @ W.T  # (n, d) rows (W z_i)^T
    scores = np.einsum("ntd,nd->nt", X, Wz)  # (n, T) a_it
    m = scores[np.arange(len(alpha)), alpha][:, None] - scores
    m[np.arange(len(alpha)), alpha] = np.inf
    return m


def matrix_rank(W: np.ndarray, rtol: float) -> int:
    """#{sigma > rtol * sigma_max}: a relative tolerance, unlike the published absolute 1e-7."""
    sv = np.linalg.svd(W, compute_uv=False)
    return int((sv > rtol * sv[0]).sum()) if sv.size and sv[0] > 0 else 0


def check_solution(sol: SVMSolution, X, Z, alpha, cfg: SolverConfig) -> SVMSolution:
    """Check the constraints: a W violating them is infeasible (or inaccurate), not a direction."""
    sol.margins = margins_of(sol.W, X, Z, alpha)
    worst = float(sol.margins.min())
    if worst < 1 - cfg.feas_tol:
        if sol.status == INFEASIBLE or worst < 0.5:
            sol.status, sol.W, sol.reason = INFEASIBLE, None, f"min margin {worst:.3g} < 1"
        else:
            sol.status, sol.reason = INACCURATE, f"min margin {worst:.10f} < 1 - feas_tol"
    if sol.W is not None:
        sol.rank = matrix_rank(sol.W, cfg.rank_rtol)
    return sol


def w_mm(X: np.ndarray, Z: np.ndarray, alpha: np.ndarray, cfg: SolverConfig) -> SVMSolution:
    """Frobenius-norm attention SVM W^mm_alpha for one instance (X (n,T,d), Z (n,d))."""
    t0 = time.perf_counter()
    if cfg.frobenius == FroMethod.cvxpy:
        sol = reduced_cvx_svm(X, Z, alpha, cfg, "fro")
    else:
        sol = _fro_nnls(X, Z, alpha)
    sol.seconds = time.perf_counter() - t0
    return check_solution(sol, X, Z, alpha, cfg) if sol.W is not None else sol


def w_mm_batch(problems, cfg: SolverConfig, device: str = "cpu") -> list[SVMSolution]:
    """W^mm of many (X, Z, alpha): instances of one constraint shape below LARGE_M constraints
    (on a GPU ``device``: of any number) in one batched, certified solve (fro_batch.py); the
    rest, and any instance the batch could not certify, by the reference path (``w_mm``)."""
    most = LARGE_M if device == "cpu" else np.inf
    t0 = time.perf_counter()
    sols: list[SVMSolution | None] = [None] * len(problems)
    groups: dict[tuple, list] = {}
    if cfg.frobenius != FroMethod.cvxpy:
        for k, (X, Z, alpha) in enumerate(problems):
            dx, zq, _ = constraints(X, Z, alpha)
            if 0 < len(dx) < most:
                groups.setdefault(dx.shape, []).append((k, dx, zq))
    for items in groups.values():
        dx, zq = (np.stack([it[c] for it in items]) for c in (1, 2))
        Ws, ok = fro_batch.fro_svm_batch(dx, zq, device)
        for (k, *_), W, good in zip(items, Ws, ok, strict=True):
            if good:
                sol = SVMSolution("fro", OPTIMAL, W=W, path=BATCHED)
                sols[k] = check_solution(sol, *problems[k], cfg)
    seconds = (time.perf_counter() - t0) / max(len(problems), 1)
    for k, sol in enumerate(sols):
        if sol is None or sol.status != OPTIMAL:  # uncertified: the reference path decides
            sols[k] = w_mm(*problems[k], cfg)
            if sol is not None:
                sols[k].reason = f"batched: {sol.reason}; reference: {sols[k].reason or 'ok'}"
        else:
            sol.seconds = seconds
    return sols


def least_distance_dual(
    gram: np.ndarray, rhs: np.ndarray | None = None
) -> tuple[np.ndarray, float]:
    """Least-distance programming min ||w|| s.t. A w >= b (b = ``rhs``, default 1) from the
    Gram matrix A A^T alone: NNLS on E = [M; b^T], f = e_last with M^T M = gram (Lawson &
    Hanson, ch. 23).

    Returns u and the slack 1 - b^T u, the residual's last entry: 0 iff no w satisfies every
    constraint (for b = 1: 0 is in conv{A_j}, whatever the norm); else w = A^T u / slack.
    The slack's scale is the Gram matrix's: callers scale it (``_ldp_dual``)."""
    evals, evecs = np.linalg.eigh(gram)
    M = np.sqrt(np.clip(evals, 0, None))[:, None] * evecs.T  # (m, m), M^T M = gram
    m = gram.shape[0]
    b = np.ones(m) if rhs is None else np.asarray(rhs, dtype=float)
    E = np.vstack([M, b[None, :]])
    f = np.zeros(m + 1)
    f[-1] = 1.0
    u, _ = nnls(E, f, maxiter=50 * (m + 1))
    return u, 1.0 - (u.sum() if rhs is None else b @ u)  # u.sum(): the bits b = 1 always had


def _ldp_dual(dx: np.ndarray, zq: np.ndarray) -> tuple[np.ndarray, float, float]:
    """``least_distance_dual`` of the attention SVM (<A_j, A_k> = (dx_j . dx_k)(z_j . z_k)) in
    units where the largest |A_j| is 1, so its slack does not depend on the data's scale.
    Returns u, the slack and the scale s: the unscaled dual is u / (slack s)."""
    gram = (dx @ dx.T) * (zq @ zq.T)
    scale = float(gram.diagonal().max()) if len(gram) else 0.0
    if not scale > 0:
        return np.zeros(len(gram)), 0.0, 1.0
    u, slack = least_distance_dual(gram / scale)
    return u, slack, scale


def hull_certificate(dx: np.ndarray, zq: np.ndarray, u: np.ndarray) -> float:
    """|sum_j c_j A_j| / max_j |A_j| for the convex weights c = u / sum(u): how far the point
    of conv{A_j} that ``u`` names lies from 0, in the constraints' own scale. Near 0 it
    certifies that no W satisfies every constraint (0 is in the hull)."""
    total = float(u.sum())
    if not total > 0:
        return np.inf
    gram = (dx @ dx.T) * (zq @ zq.T)
    c = u / total
    return float(np.sqrt(max(c @ gram @ c, 0.0) / gram.diagonal().max()))


def _fro_nnls(X, Z, alpha) -> SVMSolution:
    """W^mm = sum_j mu_j A_j with mu the least-distance dual scaled by its slack; from LARGE_M
    constraints on, mu by block principal pivoting (lcp.py) when it ends, much faster.
    ``infeasible`` only with a certificate (``hull_certificate`` <= HULL_TOL); a slack that
    vanishes without one is a solver error."""
    dx, zq, _ = constraints(X, Z, alpha)
    mu = lcp.svm_dual(dx, zq) if len(dx) >= LARGE_M else None
    if mu is None:
        u, slack, scale = _ldp_dual(dx, zq)
        if slack <= 1e-12:
            gap = hull_certificate(dx, zq, u)
            if gap <= HULL_TOL:
                reason = f"0 lies in the convex hull of the constraints (to {gap:.1e})"
                return SVMSolution("fro", INFEASIBLE, reason=reason)
            reason = f"least-distance dual: slack {slack:.1e} without a certificate ({gap:.1e})"
            return SVMSolution("fro", SOLVER_ERROR, reason=reason)
        mu = u / (slack * scale)  # dual variables of the constraints
    W = (dx * mu[:, None]).T @ zq  # (d, d) sum_j mu_j dx_j z_j^T
    return SVMSolution("fro", OPTIMAL, W=W)


def w_mm_relaxed(X, Z, alpha, tight: np.ndarray, cfg: SolverConfig) -> SVMSolution:
    """The relaxed Frobenius SVM of joint training
    (docs/math.md#max-margin-token-selection-and-a-trained-head): min ||W|| s.t. (x_{i alpha_i} -
    x_it)^T W z_i >= 1 for the sequences i that are support vectors of v^mm (``tight`` (n,) bool)
    and >= 0 for the others; exact, by the least-distance dual."""
    t0 = time.perf_counter()
    dx, zq, ids = constraints(X, Z, alpha)
    rhs = tight[ids[:, 0]].astype(float)
    if not rhs.any():
        return SVMSolution("fro", INFEASIBLE, reason="no sequence is a support vector of v^mm")
    u, slack = least_distance_dual((dx @ dx.T) * (zq @ zq.T), rhs)
    if slack <= 1e-12:
        return SVMSolution("fro", INFEASIBLE, reason="the relaxed constraints are infeasible")
    W = (dx * (u / slack)[:, None]).T @ zq
    sol = SVMSolution("fro", OPTIMAL, W=W, seconds=time.perf_counter() - t0)
    sol.margins = margins_of(W, X, Z, alpha)
    bound = np.where(tight, 1.0, 0.0)[:, None] - cfg.feas_tol
    if (sol.margins < bound).any():
        sol.status, sol.reason = INACCURATE, "a relaxed margin below its bound - feas_tol"
    sol.rank = matrix_rank(W, cfg.rank_rtol)
    return sol


def v_mm_support(rows: np.ndarray, v: np.ndarray | None, cfg: SolverConfig) -> np.ndarray:
    """(n,) the support vectors of the head's SVM v^mm: Y_i v^T x_{i alpha_i} <= 1 +
    support_tol (``rows`` = Y_i x_{i alpha_i}); none when v^mm does not exist."""
    if v is None:
        return np.zeros(len(rows), dtype=bool)
    return rows @ v <= 1 + cfg.support_tol


def _reduced_basis(A: np.ndarray, rtol: float = 1e-12) -> np.ndarray:
    """Orthonormal basis (d, p) of the row space of A (m, d)."""
    _, sv, vt = np.linalg.svd(A, full_matrices=False)
    keep = sv > rtol * max(sv[0], 1e-300) if sv.size else sv > 0
    return vt[keep].T


def w_mm_nuc(X: np.ndarray, Z: np.ndarray, alpha: np.ndarray, cfg: SolverConfig) -> SVMSolution:
    """Nuclear-norm attention SVM W^mm_{*,alpha}, solved in the reduced space and mapped back."""
    if cfg.backend == Backend.IPM:
        return w_mm_nuc_batch([(X, Z, alpha)], cfg)[0]
    t0 = time.perf_counter()
    sol = reduced_cvx_svm(X, Z, alpha, cfg, "nuc")
    sol.seconds = time.perf_counter() - t0
    return check_solution(sol, X, Z, alpha, cfg) if sol.W is not None else sol


def w_mm_nuc_batch(
    problems: list[tuple[np.ndarray, np.ndarray, np.ndarray]],
    cfg: SolverConfig,
    feasible: list[bool] | None = None,
    fro: list[SVMSolution] | None = None,
    device: str = "cpu",
) -> list[SVMSolution]:
    """W^mm_{*,alpha} for many (X, Z, alpha) at once: reduced factors of equal shape go to one
    call of the batched interior-point method (nuclear_ipm.py). ``feasible`` (known from the
    Frobenius SVM, whose feasibility is the same) skips the feasibility test; ``fro`` (the
    Frobenius SVMs of the same problems) starts a large instance's working set at its support;
    ``device``: where the interior point runs (a GPU: nuclear_ipm._on_device)."""
    t0 = time.perf_counter()
    sols: list[SVMSolution | None] = [None] * len(problems)
    groups: dict[tuple, list] = {}
    for k, (X, Z, alpha) in enumerate(problems):
        dx, zq, ids = constraints(X, Z, alpha)
        U, V = _reduced_basis(dx), _reduced_basis(Z)  # (d, p), (d, q)
        if U.shape[1] == 0 or V.shape[1] == 0:
            sols[k] = SVMSolution("nuc", INFEASIBLE, reason="every constraint matrix is zero")
        elif feasible is None and not (fro_k := _fro_nnls(X, Z, alpha)).ok:
            sols[k] = SVMSolution("nuc", fro_k.status, reason=f"Frobenius SVM: {fro_k.reason}")
        elif feasible is not None and not feasible[k]:
            sols[k] = SVMSolution("nuc", INFEASIBLE, reason="Frobenius SVM infeasible")
        else:
            shape = (len(dx), U.shape[1], V.shape[1], len(Z))
            start = _support_start(fro[k] if fro else None, ids, cfg)
            groups.setdefault(shape, []).append((k, dx @ U, Z @ V, ids[:, 0], start, U, V))
    for items in groups.values():
        a, b, rows, start = (np.stack([it[c] for it in items]) for c in (1, 2, 3, 4))
        Wr, status, _ = nuclear_svm_batch(
            a, b, rows, tol=cfg.tol, max_iter=cfg.max_iters, start=start, device=device
        )
        for (k, *_, U, V), W, st in zip(items, Wr, status, strict=True):
            if st == OPTIMAL:  # gap and residuals certified <= tol; margins checked below
                sols[k] = SVMSolution("nuc", OPTIMAL, W=U @ W @ V.T, path=BATCHED)
            else:  # rare: the plain per-instance model decides
                sols[k] = reduced_cvx_svm(*problems[k], cfg, "nuc")
                sols[k].reason = f"interior point {st}; cvxpy: {sols[k].reason or 'ok'}"
    seconds = (time.perf_counter() - t0) / max(len(problems), 1)
    for sol, (X, Z, alpha) in zip(sols, problems, strict=True):
        sol.seconds = seconds
        if sol.W is not None:
            check_solution(sol, X, Z, alpha, cfg)
    return sols


def _support_start(fro: SVMSolution | None, ids: np.ndarray, cfg: SolverConfig) -> np.ndarray:
    """(m,) the constraints active at the Frobenius SVM (all of them without it): where the
    nuclear SVM's working set begins (sdp._working_set)."""
    if fro is None or fro.margins is None:
        return np.ones(len(ids), dtype=bool)
    return fro.margins[ids[:, 0], ids[:, 1]] <= 1 + cfg.support_tol


def reduced_cvx_svm(X, Z, alpha, cfg: SolverConfig, norm: str, ladder: bool = False) -> SVMSolution:
    """cvxpy model in the reduced space: one matrix inequality A_red vec(W_red) >= 1. The
    reduction keeps the optimum of a unitarily invariant norm: fro, nuc, spectral. ``ladder``:
    retry an uncertified solve at a looser tolerance (cvx.solve_laddered)."""
    import cvxpy as cp  # here: a job that builds no model never pays its import

    dx, zq, _ = constraints(X, Z, alpha)
    U, V = _reduced_basis(dx), _reduced_basis(Z)  # (d, p), (d, q)
    p, q = U.shape[1], V.shape[1]
    if p == 0 or q == 0:
        return SVMSolution(norm, INFEASIBLE, reason="every constraint matrix is zero")
    a_red = np.einsum("jp,jq->jqp", dx @ U, zq @ V).reshape(len(dx), q * p)  # column-major vec
    Wr = cp.Variable((p, q))
    objective = {"nuc": cp.normNuc, "spectral": cp.sigma_max}.get(norm, cp.sum_squares)(Wr)
    prob = cp.Problem(cp.Minimize(objective), [a_red @ cp.vec(Wr, order="F") >= 1])
    status, reason = (cvx.solve_laddered if ladder else cvx.solve)(prob, cfg)
    if status in (INFEASIBLE, SOLVER_ERROR):
        return SVMSolution(norm, status, reason=reason)
    return SVMSolution(norm, status, W=U @ Wr.value @ V.T, reason=reason)


def support_tokens(sol: SVMSolution, cfg: SolverConfig) -> np.ndarray:
    """(n, T) mask of active constraints: margin within support_tol of 1
    (docs/math.md#solver-tolerances-and-support-tokens)."""
    return sol.margins <= 1 + cfg.support_tol


def is_locally_optimal(
    sol: SVMSolution, gamma: np.ndarray, alpha: np.ndarray, cfg: SolverConfig
) -> bool:
    """alpha is locally optimal if W^mm_alpha exists and every support token t of sequence i
    scores below the selected one: gamma_{i alpha_i} > gamma_it
    (docs/math.md#support-tokens-and-local-optimality)."""
    if not sol.ok:
        return False
    sel = gamma[np.arange(len(alpha)), alpha][:, None]  # (n, 1)
    return bool(np.all(~support_tokens(sol, cfg) | (gamma < sel)))


def min_margins(Ws: np.ndarray, X, Z, alpha, mask: np.ndarray | None = None) -> np.ndarray:
    """min over (i, t != alpha_i, t visible) of (x_{i alpha_i} - x_it)^T W z_i for each W of
    Ws (C, d, d): (C,), the unnormalized margin of every checkpoint at alpha."""
    Wz = np.einsum("cde,ne->cnd", Ws, Z)  # (C, n, d) W z_i first: C n d^2, not C n T d^2
    scores = np.einsum("ntd,cnd->cnt", X, Wz)  # (C, n, T) a_it
    rows = np.arange(len(alpha))
    m = scores[:, rows, alpha][:, :, None] - scores
    hidden = np.zeros(m.shape[1:], dtype=bool) if mask is None else ~mask
    hidden[rows, alpha] = True
    return np.where(hidden, np.inf, m).reshape(len(Ws), -1).min(-1)


def v_mm(rows: np.ndarray, p: float, cfg: SolverConfig) -> np.ndarray | None:
    """The hard-margin classifier without intercept, argmin ||v||_p s.t. rows v >= 1 (rows
    (n, d) = Y_i x_{i alpha_i}): exact least-distance dual for p = 2, else the cvxpy gateway;
    None when no v separates (or the solver fails)."""
    if p == 2:
        u, slack = least_distance_dual(rows @ rows.T)
        return rows.T @ u / slack if slack > 1e-12 else None
    import cvxpy as cp

    v = cp.Variable(rows.shape[1])
    status, _ = cvx.solve(cp.Problem(cp.Minimize(cp.pnorm(v, p)), [rows @ v >= 1]), cfg)
    return np.array(v.value) if status in (OPTIMAL, INACCURATE) else None
