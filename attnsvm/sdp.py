"""Nuclear-norm attention SVMs, many at once, by a primal-dual interior-point method.

In the reduced space (svm.py) instance b has constraint vectors a_j (p) and b_j (q), and the
nuclear SVM is the SDP (u_j = [a_j; 0], v_j = [0; b_j], N = p + q)

    min <I/2, X>  s.t.  u_j^T X v_j - w_j = 1,  X = [[P, W], [W^T, R]] >= 0,  w >= 0,
    max 1^T y     s.t.  Z = I/2 - sum_j y_j (u_j v_j^T + v_j u_j^T)/2 >= 0,  y >= 0,

whose optimal X12 is W^mm_* (min (tr P + tr R)/2 over such X is ||W||_*). This is the
standard formulation the cvxpy model compiles to; what differs is the linear algebra. Each
Newton step (HKM direction, Mehrotra predictor-corrector, as in SDPT3) is reduced to the m x m
Schur complement M_jk = <A_j, X A_k Z^{-1}>, which for these rank-2 constraint matrices is four
Hadamard products of m x m matrices: O(m N^2 + m^2 N + m^3) per iteration instead of a dense
((N(N+1)/2)^2 block that a general conic solver factors. Instances of one shape are solved as
a batch, every operation per instance, with per-instance step lengths and stopping: an
instance's iterates and stopping step never depend on its batch mates (products and sums by
attnsvm.batchops, LAPACK on one thread in MKL's strict reproducibility mode).

    W, status, iters = nuclear_svm_batch(a, b, tol=1e-10)   # a (B, m, p), b (B, m, q)
"""

from __future__ import annotations

import numpy as np
import torch

from attnsvm.batchops import dot_last, matmul, sum_last
from attnsvm.runtime import one_thread

STEP = 0.98  # fraction of the step to the cone boundary
REFINE = 2  # refinement steps of the Schur solve: M's condition grows like 1/mu near the end


def _sym(M: torch.Tensor) -> torch.Tensor:
    return (M + M.transpose(-1, -2)) / 2


def _blocks(Y, p):
    return Y[..., :p, :p], Y[..., :p, p:], Y[..., p:, p:]


def _abt(a, M, bt):
    """a M b^T, batch-invariant (batchops.matmul)."""
    return matmul(matmul(a, M), bt)


def _inner(P, Q):
    """<P, Q> per instance for (B, ...) tensors, batch-invariant."""
    return dot_last(P.flatten(1), Q.flatten(1))


def _schur(a, b, X, Zi, x, z):
    """M_jk = <A_j, X A_k Z^{-1}> + diag(x/z), A_j = (u_j v_j^T + v_j u_j^T)/2."""
    p = a.shape[-1]
    X11, X12, X22 = _blocks(X, p)
    Z11, Z12, Z22 = _blocks(Zi, p)
    at, bt = a.transpose(-1, -2), b.transpose(-1, -2)
    ux_u, vx_v, ux_v = _abt(a, X11, at), _abt(b, X22, bt), _abt(a, X12, bt)  # (B, m, m)
    uz_u, vz_v, uz_v = _abt(a, Z11, at), _abt(b, Z22, bt), _abt(a, Z12, bt)
    M = ux_v.transpose(-1, -2) * uz_v  # (v_j X u_k)(v_k Zi u_j)
    M = M + ux_v * uz_v.transpose(-1, -2) + vx_v * uz_u + ux_u * vz_v
    return M / 4 + torch.diag_embed(x / z)


def _op(a, b, Y):
    """A(Y)_j = u_j^T Y v_j = a_j^T Y12 b_j, (B, m)."""
    p = a.shape[-1]
    return dot_last(matmul(a, Y[..., :p, p:]), b)


def _adjoint(a, b, y):
    """sum_j y_j (u_j v_j^T + v_j u_j^T)/2, (B, N, N)."""
    p, q = a.shape[-1], b.shape[-1]
    G = matmul(a.transpose(-1, -2), y.unsqueeze(-1) * b) / 2  # (B, p, q)
    out = torch.zeros(a.shape[0], p + q, p + q, dtype=a.dtype)
    out[:, :p, p:] = G
    out[:, p:, :p] = G.transpose(-1, -2)
    return out


def _max_step(L, D):
    """Largest alpha <= 1 with L L^T + alpha D >= 0, per instance."""
    Li_D = torch.linalg.solve_triangular(L, D, upper=False)
    S = torch.linalg.solve_triangular(L, Li_D.transpose(-1, -2), upper=False)
    lam_min = torch.linalg.eigvalsh(_sym(S))[..., 0]
    return torch.where(lam_min < 0, -1 / lam_min, torch.full_like(lam_min, torch.inf))


def _solve_schur(Lm, rhs):
    return torch.cholesky_solve(rhs.unsqueeze(-1), Lm).squeeze(-1)


def _max_step_lp(x, dx):
    ratio = torch.where(dx < 0, -x / dx, torch.full_like(x, torch.inf))
    return ratio.min(-1).values


def _residuals(A, Bq, C, X, Z, x, z, y):
    """Primal (B, m), dual SDP-block (B, N, N) and dual LP-block (B, m) residuals."""
    return 1 - (_op(A, Bq, X) - x), C - Z - _adjoint(A, Bq, y), y - z


def _step(A, Bq, C, X, Z, x, z, y):
    """One Mehrotra predictor-corrector step (HKM direction) for every instance given."""
    nb, m = x.shape
    nu = X.shape[-1] + m  # barrier parameter of PSD(N) x R^m_+
    Rp, Rd, rd = _residuals(A, Bq, C, X, Z, x, z, y)
    mu = (_inner(X, Z) + _inner(x, z)) / nu
    Lz, iz = torch.linalg.cholesky_ex(Z)
    Lx, ix = torch.linalg.cholesky_ex(X)
    bad = (iz != 0) | (ix != 0)  # left the cone through rounding: stop this instance
    if bool(bad.any()):
        eye = torch.eye(X.shape[-1], dtype=X.dtype)
        Lz, Lx = torch.where(bad[:, None, None], eye, Lz), torch.where(bad[:, None, None], eye, Lx)
    Zi = torch.cholesky_inverse(Lz)
    M = _schur(A, Bq, X, Zi, x, z)
    Lm, info = torch.linalg.cholesky_ex(M)
    if bool((info != 0).any()):  # regularise only the instances whose factorisation failed
        scale = M.diagonal(dim1=-2, dim2=-1).abs().amax(-1)[:, None, None]
        Lr, _ = torch.linalg.cholesky_ex(M + 1e-14 * scale * torch.eye(m, dtype=M.dtype))
        Lm = torch.where((info != 0)[:, None, None], Lr, Lm)

    def direction(sig_mu, corr_X, corr_x):
        # dX = sig_mu Zi - X - sym(X Rd Zi) + sym(X A^T dy Zi) - corr;  A(dX) - (dx) = Rp
        base = sig_mu[:, None, None] * Zi - X - _sym(_abt(X, Rd, Zi)) - corr_X
        base_x = sig_mu[:, None] / z - x - x * rd / z - corr_x
        rhs = Rp - (_op(A, Bq, base) - base_x)
        dy = _solve_schur(Lm, rhs)
        for _ in range(REFINE):  # iterative refinement against the operator M itself
            Mdy = _op(A, Bq, _sym(_abt(X, _adjoint(A, Bq, dy), Zi))) + x * dy / z
            dy = dy + _solve_schur(Lm, rhs - Mdy)
        dZ = Rd - _adjoint(A, Bq, dy)
        dz = rd + dy
        dX = base + _sym(_abt(X, _adjoint(A, Bq, dy), Zi))
        dx = base_x - x * dy / z
        return dX, dx, dy, dZ, dz

    zero = torch.zeros(nb, dtype=torch.float64)
    dX, dx, dy, dZ, dz = direction(zero, 0, 0)
    ap = torch.clamp(torch.minimum(_max_step(Lx, dX), _max_step_lp(x, dx)), max=1.0)
    ad = torch.clamp(torch.minimum(_max_step(Lz, dZ), _max_step_lp(z, dz)), max=1.0)
    mu_aff = (
        _inner(X + ap[:, None, None] * dX, Z + ad[:, None, None] * dZ)
        + _inner(x + ap[:, None] * dx, z + ad[:, None] * dz)
    ) / nu
    sigma = torch.clamp(mu_aff / mu, min=0, max=1) ** 3
    dX, dx, dy, dZ, dz = direction(sigma * mu, _sym(_abt(dX, dZ, Zi)), dx * dz / z)
    ap = torch.clamp(STEP * torch.minimum(_max_step(Lx, dX), _max_step_lp(x, dx)), max=1.0)
    ad = torch.clamp(STEP * torch.minimum(_max_step(Lz, dZ), _max_step_lp(z, dz)), max=1.0)
    new = (
        X + ap[:, None, None] * dX,
        Z + ad[:, None, None] * dZ,
        x + ap[:, None] * dx,
        z + ad[:, None] * dz,
        y + ad[:, None] * dy,
    )
    for t in new:
        bad = bad | ~torch.isfinite(t.reshape(nb, -1)).all(-1)
    old = (X, Z, x, z, y)
    kept = (
        torch.where(bad.view(-1, *[1] * (o.dim() - 1)), o, n) for o, n in zip(old, new, strict=True)
    )
    return tuple(kept), bad


def nuclear_svm_batch(
    a: np.ndarray, b: np.ndarray, tol: float = 1e-10, max_iter: int = 100
) -> tuple[np.ndarray, list[str], np.ndarray]:
    """Solve B feasible nuclear SVMs of one shape; a (B, m, p), b (B, m, q) reduced factors.

    Returns W (B, p, q) scaled so every margin is >= 1, a status per instance ("optimal"
    when relative gap and residuals are <= tol, "inaccurate" when max_iter ran out first,
    "solver_error" when rounding pushed an iterate out of the cone) and the iterations used.
    Feasibility is the caller's to establish (an infeasible instance has an unbounded dual).
    """
    with one_thread():  # LAPACK's blocked factorisations split their sums by thread count
        return _solve_batch(a, b, tol, max_iter)


def _solve_batch(a, b, tol, max_iter):
    A = torch.as_tensor(a, dtype=torch.float64)
    Bq = torch.as_tensor(b, dtype=torch.float64)
    nb, m, p = A.shape
    N = p + Bq.shape[-1]
    eye = torch.eye(N, dtype=torch.float64).expand(nb, N, N)
    C = eye / 2
    size = torch.sqrt(dot_last(A, A) * dot_last(Bq, Bq))  # (B, m) |a_j| |b_j|
    xi = torch.clamp(1 / size.min(-1).values, min=1.0)[:, None, None]  # scale of W
    X, Z = xi * eye, eye.clone()
    x = xi[:, :, 0].expand(nb, m).clone()  # slacks w_j
    z = torch.ones(nb, m, dtype=torch.float64)  # their dual slacks (= y at optimum)
    y = torch.zeros(nb, m, dtype=torch.float64)
    done = torch.zeros(nb, dtype=torch.bool)
    failed = torch.zeros(nb, dtype=torch.bool)
    iters = torch.zeros(nb, dtype=torch.long)
    for _ in range(max_iter):
        Rp, Rd, rd = _residuals(A, Bq, C, X, Z, x, z, y)
        pobj, dobj = sum_last(X.diagonal(dim1=-2, dim2=-1)) / 2, sum_last(y)
        gap = (pobj - dobj).abs() / (1 + pobj.abs() + dobj.abs())
        # residuals in max-norm relative to the iterates' size, as Clarabel measures them
        amax = lambda t: t.abs().flatten(1).amax(-1)  # noqa: E731
        pinf = amax(Rp) / (2 + amax(X) + amax(x))
        dinf = torch.maximum(amax(Rd), amax(rd)) / (1.5 + amax(Z) + amax(z) + amax(y))
        done = done | ((gap <= tol) & (pinf <= tol) & (dinf <= tol))
        live = ~done & ~failed
        if not bool(live.any()):
            break
        iters += live.long()
        act = live.nonzero().squeeze(-1)  # step only the unfinished instances
        state, bad = _step(A[act], Bq[act], C[act], X[act], Z[act], x[act], z[act], y[act])
        for full, part in zip((X, Z, x, z, y), state, strict=True):
            full[act] = part
        failed[act] = bad
    W = X[:, :p, p:]
    margins = dot_last(matmul(A, W), Bq)  # (B, m)
    W = W / torch.clamp(margins.min(-1).values, max=1.0)[:, None, None]  # exact feasibility
    status = [
        "optimal" if ok else "solver_error" if bad else "inaccurate"
        for ok, bad in zip(done.tolist(), failed.tolist(), strict=True)
    ]
    return W.numpy(), status, iters.numpy()
