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
attnsvm.kernel.batchops, LAPACK on one thread in MKL's strict reproducibility mode). From LARGE_M
constraints an instance is solved alone with BLAS products, and from WORKING_SET_M on a working
set of its constraints (``nuclear_svm_batch``; docs/scaling.md, "Large instances").

    W, status, iters = nuclear_svm_batch(a, b, rows, tol=1e-10)  # a (B, m, p), b (B, n, q)
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch

from attnsvm.kernel.batchops import dot_last, sum_last
from attnsvm.runtime import one_thread
from attnsvm.svm.fro_batch import per_call
from attnsvm.svm.nuclear_ops import Constraints, adjoint, op, schur, sym

STEP = 0.98  # fraction of the step to the cone boundary
BACKTRACK = 4  # halvings of a step whose iterate failed its Cholesky factorisation
REFINE = 2  # refinement steps of the Schur solve, once an instance's gap is <= REFINE_GAP:
REFINE_GAP = 1e-8  # degenerate instances (sequential attention) stay primal feasible to the end
LARGE_M = 256  # from this many constraints on, one instance at a time with BLAS products
WORKING_SET_M = 1500  # and from this many on, by constraint generation from ``start``


def _inner(P, Q):
    """<P, Q> per instance for (B, ...) tensors, batch-invariant."""
    return dot_last(P.flatten(1), Q.flatten(1))


def _max_step(L, D):
    """Largest alpha <= 1 with L L^T + alpha D >= 0, per instance."""
    Li_D = torch.linalg.solve_triangular(L, D, upper=False)
    S = torch.linalg.solve_triangular(L, Li_D.transpose(-1, -2), upper=False)
    lam_min = _eigvalsh(sym(S))[..., 0]
    return torch.where(lam_min < 0, -1 / lam_min, torch.full_like(lam_min, torch.inf))


def _eigvalsh(S):
    """Eigenvalues of symmetric S (B, N, N). cuSOLVER's batched solver gives up on some
    ill-conditioned iterates near the optimum (seen on an H200: "failed to converge", error 7)
    that LAPACK takes: those batches are done on the CPU."""
    try:
        return torch.linalg.eigvalsh(S)
    except torch.linalg.LinAlgError:
        if S.device.type == "cpu":
            raise
        return torch.linalg.eigvalsh(S.cpu()).to(S.device)


def _solve_schur(Lm, rhs):
    """M^{-1} rhs from M's lower Cholesky factor: the two triangular solves cholesky_solve
    makes (LAPACK's potrs is L then L^T by trsm, so the bits are the same), without the
    column-major copy of the m x m factor it takes first: at m ~ 1000 that copy cost 5x the
    solves."""
    y = torch.linalg.solve_triangular(Lm, rhs.unsqueeze(-1), upper=False)
    return torch.linalg.solve_triangular(Lm.mT, y, upper=True).squeeze(-1)


def _max_step_lp(x, dx):
    ratio = torch.where(dx < 0, -x / dx, torch.full_like(x, torch.inf))
    return ratio.min(-1).values


def _residuals(con: Constraints, C, X, Z, x, z, y):
    """Primal (B, m), dual SDP-block (B, N, N) and dual LP-block (B, m) residuals."""
    return 1 - (op(con, X) - x), C - Z - adjoint(con, y), y - z


def _step(con: Constraints, res, X, Z, x, z, y, refine):
    """One Mehrotra predictor-corrector step (HKM direction) for every instance given, ``res``
    their residuals (``_residuals``: the caller's; on the CPU a row's bits do not depend on the
    batch, so they are the residuals of these instances alone)."""
    nb, m = x.shape
    nu = X.shape[-1] + m  # barrier parameter of PSD(N) x R^m_+
    Rp, Rd, rd = res
    mu = (_inner(X, Z) + _inner(x, z)) / nu
    Lz, Lx, bad = _cone_factors(X, Z)
    Zi = torch.cholesky_inverse(Lz)
    Lm = _schur_factor(schur(con, X, Zi, x, z))

    def direction(sig_mu, corr_X, corr_x):
        # dX = sig_mu Zi - X - sym(X Rd Zi) + sym(X A^T dy Zi) - corr;  A(dX) - (dx) = Rp
        base = sig_mu[:, None, None] * Zi - X - sym(con.abt(X, Rd, Zi)) - corr_X
        base_x = sig_mu[:, None] / z - x - x * rd / z - corr_x
        rhs = Rp - (op(con, base) - base_x)
        dy = _solve_schur(Lm, rhs)
        if bool(refine.any()):  # near the end M's condition grows like 1/mu: refine there
            for _ in range(REFINE):  # iterative refinement against the operator M itself
                Mdy = op(con, sym(con.abt(X, adjoint(con, dy), Zi))) + x * dy / z
                dy = torch.where(refine[:, None], dy + _solve_schur(Lm, rhs - Mdy), dy)
        Ady = adjoint(con, dy)  # once for both: the same bits
        dZ = Rd - Ady
        dz = rd + dy
        dX = base + sym(con.abt(X, Ady, Zi))
        dx = base_x - x * dy / z
        return dX, dx, dy, dZ, dz

    zero = torch.zeros(nb, dtype=torch.float64, device=x.device)
    dX, dx, dy, dZ, dz = direction(zero, 0, 0)
    ap = torch.clamp(torch.minimum(_max_step(Lx, dX), _max_step_lp(x, dx)), max=1.0)
    ad = torch.clamp(torch.minimum(_max_step(Lz, dZ), _max_step_lp(z, dz)), max=1.0)
    mu_aff = (
        _inner(X + ap[:, None, None] * dX, Z + ad[:, None, None] * dZ)
        + _inner(x + ap[:, None] * dx, z + ad[:, None] * dz)
    ) / nu
    sigma = torch.clamp(mu_aff / mu, min=0, max=1) ** 3
    dX, dx, dy, dZ, dz = direction(sigma * mu, sym(con.abt(dX, dZ, Zi)), dx * dz / z)
    ap = torch.clamp(STEP * torch.minimum(_max_step(Lx, dX), _max_step_lp(x, dx)), max=1.0)
    ad = torch.clamp(STEP * torch.minimum(_max_step(Lz, dZ), _max_step_lp(z, dz)), max=1.0)
    new = _take_step((X, Z, x, z, y), (dX, dZ, dx, dz, dy), ap, ad)
    for _ in range(BACKTRACK):  # near the optimum rounding can leave the cone: shorter steps
        out = (torch.linalg.cholesky_ex(new[0])[1] != 0) | (
            torch.linalg.cholesky_ex(new[1])[1] != 0
        )
        if not bool(out.any()):
            break
        ap, ad = torch.where(out, ap / 2, ap), torch.where(out, ad / 2, ad)
        new = _take_step((X, Z, x, z, y), (dX, dZ, dx, dz, dy), ap, ad)
    return _keep_finite((X, Z, x, z, y), new, bad)


def _cone_factors(X, Z):
    """Cholesky factors of Z and X (B, N, N), and which instances left the cone through
    rounding (B,): those get identity factors and stop."""
    Lz, iz = torch.linalg.cholesky_ex(Z)
    Lx, ix = torch.linalg.cholesky_ex(X)
    bad = (iz != 0) | (ix != 0)
    if bool(bad.any()):
        eye = torch.eye(X.shape[-1], dtype=X.dtype, device=X.device)
        Lz, Lx = torch.where(bad[:, None, None], eye, Lz), torch.where(bad[:, None, None], eye, Lx)
    return Lz, Lx, bad


def _schur_factor(M):
    """Cholesky factor of the Schur complement M (B, m, m); only the instances whose
    factorisation failed are regularised."""
    Lm, info = torch.linalg.cholesky_ex(M)
    if bool((info != 0).any()):
        scale = M.diagonal(dim1=-2, dim2=-1).abs().amax(-1)[:, None, None]
        eye = torch.eye(M.shape[-1], dtype=M.dtype, device=M.device)
        Lr, _ = torch.linalg.cholesky_ex(M + 1e-14 * scale * eye)
        Lm = torch.where((info != 0)[:, None, None], Lr, Lm)
    return Lm


def _keep_finite(old: tuple, new: tuple, bad):
    """The new iterates, but the old ones for an instance that stopped or went non-finite;
    and which instances those are (B,)."""
    nb = bad.shape[0]
    for t in new:
        bad = bad | ~torch.isfinite(t.reshape(nb, -1)).all(-1)
    kept = (
        torch.where(bad.view(-1, *[1] * (o.dim() - 1)), o, n) for o, n in zip(old, new, strict=True)
    )
    return tuple(kept), bad


def _take_step(state, dirs, ap, ad):
    """The iterates after primal step ap and dual step ad (per instance)."""
    (X, Z, x, z, y), (dX, dZ, dx, dz, dy) = state, dirs
    return (
        X + ap[:, None, None] * dX,
        Z + ad[:, None, None] * dZ,
        x + ap[:, None] * dx,
        z + ad[:, None] * dz,
        y + ad[:, None] * dy,
    )


def nuclear_svm_batch(
    a: np.ndarray,
    b: np.ndarray,
    rows: np.ndarray,
    tol: float = 1e-10,
    max_iter: int = 100,
    workers: int | None = None,
    start: np.ndarray | None = None,
    device: str = "cpu",
) -> tuple[np.ndarray, list[str], np.ndarray]:
    """Solve B feasible nuclear SVMs of one shape; a (B, m, p) reduced left factors, b (B, n, q)
    the distinct right factors and rows (B, m) the right factor of each constraint.

    Returns W (B, p, q) scaled so every margin is >= 1, a status per instance ("optimal"
    when relative gap and residuals are <= tol, "inaccurate" when max_iter ran out first,
    "solver_error" when rounding pushed an iterate out of the cone) and the iterations used.
    Feasibility is the caller's to establish (an infeasible instance has an unbounded dual).

    From LARGE_M constraints on, the O(m^2 p) products and the m x m factorisation dominate:
    each instance is solved alone with BLAS products (10x the sequential loop), ``workers`` of
    them at a time on their own threads (default: torch's thread count, the job's ``threads``).
    Either way an instance's bits never depend on its batch mates or on ``workers``: LAPACK and
    BLAS run on one thread per instance.

    ``start`` (B, m) bool, for those large instances: the constraints to begin a working set
    with (e.g. the Frobenius SVM's support); from WORKING_SET_M constraints on, the SDP is
    solved on the working set and every violated constraint is added until none is
    (``_working_set``).

    On a GPU (``device``) every instance below WORKING_SET_M constraints is solved batched,
    in chunks (fro_batch.chunk) its batched factorisations accept; larger ones one at a time.
    """
    A = torch.as_tensor(a, dtype=torch.float64, device=device)
    Bd = torch.as_tensor(b, dtype=torch.float64, device=device)
    R = torch.as_tensor(rows, dtype=torch.long, device=device)
    if A.device.type != "cpu":
        return _on_device(A, Bd, R, tol, max_iter, start)
    workers = workers or torch.get_num_threads()
    with one_thread():  # LAPACK's blocked factorisations split their sums by thread count
        if A.shape[1] < LARGE_M:
            return _solve_batch(Constraints(A, Bd, R), tol, max_iter)

        def alone(k: int):
            con = Constraints(A[k : k + 1], Bd[k : k + 1], R[k : k + 1], torch.matmul)
            if start is None or A.shape[1] < WORKING_SET_M:
                return _solve_batch(con, tol, max_iter)
            return _working_set(con, torch.as_tensor(start[k]), tol, max_iter)

        with ThreadPoolExecutor(workers) as pool:
            parts = list(pool.map(alone, range(len(A))))
    Ws, status, iters = zip(*parts, strict=True)
    return np.concatenate(Ws), [s for st in status for s in st], np.concatenate(iters)


def _on_device(A, Bd, R, tol, max_iter, start):
    """``nuclear_svm_batch`` on a GPU: batched chunks, or one instance at a time from
    WORKING_SET_M constraints with a working set (``start``)."""
    m = A.shape[1]
    if m >= WORKING_SET_M and start is not None:
        parts = [
            _working_set(
                Constraints(A[k : k + 1], Bd[k : k + 1], R[k : k + 1]),
                torch.as_tensor(start[k], device=A.device), tol, max_iter,
            )
            for k in range(len(A))
        ]  # fmt: skip
    else:
        size = m * m + (A.shape[-1] + Bd.shape[-1]) ** 2  # the Schur matrix, the cones
        step = per_call(str(A.device), size, len(A))
        parts = [
            _solve_batch(Constraints(A[k : k + step], Bd[k : k + step], R[k : k + step]), tol,
                         max_iter)
            for k in range(0, len(A), step)
        ]  # fmt: skip
    if not parts:
        return np.zeros((0, A.shape[-1], Bd.shape[-1])), [], np.zeros(0, dtype=np.int64)
    Ws, status, iters = zip(*parts, strict=True)
    return np.concatenate(Ws), [s for st in status for s in st], np.concatenate(iters)


def _working_set(con: Constraints, start: torch.Tensor, tol, max_iter, rounds: int = 50):
    """One large instance by constraint generation: solve the SDP on the working set, add
    every constraint the solution violates, repeat. When none is violated the solution is the
    full problem's: it is feasible, and the working set's dual (zero elsewhere) is dual
    feasible for the full problem with the same gap, so "optimal" keeps its meaning. An
    m = 3100 instance of (n, T, d) = (100, 32, 128) needs ~1550 of its constraints, 4 rounds.
    """
    work = start.clone() if bool(start.any()) else torch.ones_like(start)
    used = np.zeros(1, dtype=np.int64)
    for _ in range(rounds):
        idx = work.nonzero().squeeze(-1)
        sub = Constraints(con.A[:, idx].contiguous(), con.Bd, con.rows[:, idx], con.mm)
        W, status, iters = _solve_batch(sub, tol, max_iter)
        used += iters
        margins = dot_last(con.mm(con.A, torch.as_tensor(W, device=con.A.device)), con.Bq)[0]
        violated = ~work & (margins < 1)
        if status[0] != "optimal" or not bool(violated.any()):
            return W, status, used
        work |= violated
    return W, ["inaccurate"], used


def _solve_batch(con: Constraints, tol, max_iter):
    W, status, iters = solve_tensors(con, tol, max_iter)
    return W.cpu().numpy(), status, iters.cpu().numpy()


def solve_tensors(con: Constraints, tol: float, max_iter: int):
    """W (B, p, q) on the constraints' device, a status per instance, iterations (B,): the
    interior point on one batch, in one call."""
    nb, m, p = con.A.shape
    N = p + con.Bd.shape[-1]
    like = {"dtype": torch.float64, "device": con.A.device}
    eye = torch.eye(N, **like).expand(nb, N, N)
    C = eye / 2
    size = torch.sqrt(dot_last(con.A, con.A) * dot_last(con.Bq, con.Bq))  # (B, m) |a_j| |b_j|
    xi = torch.clamp(1 / size.min(-1).values, min=1.0)[:, None, None]  # scale of W
    X, Z = xi * eye, eye.clone()
    x = xi[:, :, 0].expand(nb, m).clone()  # slacks w_j
    z = torch.ones(nb, m, **like)  # their dual slacks (= y at optimum)
    y = torch.zeros(nb, m, **like)
    done = torch.zeros(nb, dtype=torch.bool, device=con.A.device)
    failed = torch.zeros_like(done)
    iters = torch.zeros(nb, dtype=torch.long, device=con.A.device)
    for _ in range(max_iter):
        Rp, Rd, rd = _residuals(con, C, X, Z, x, z, y)
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
        res = (Rp[act], Rd[act], rd[act])
        state, bad = _step(
            con.take(act), res, X[act], Z[act], x[act], z[act], y[act], gap[act] <= REFINE_GAP
        )
        for full, part in zip((X, Z, x, z, y), state, strict=True):
            full[act] = part
        failed[act] = bad
    W = X[:, :p, p:]
    margins = dot_last(con.mm(con.A, W), con.Bq)  # (B, m)
    W = W / torch.clamp(margins.min(-1).values, max=1.0)[:, None, None]  # exact feasibility
    status = [
        "optimal" if ok else "solver_error" if bad else "inaccurate"
        for ok, bad in zip(done.tolist(), failed.tolist(), strict=True)
    ]
    return W, status, iters
