"""SVM norms: which attention SVMs a job solves, ``solver.norms`` (default ``[fro, nuc]``).

Every norm N of the attention SVM  min ||W||_N  s.t.  (x_{i alpha_i} - x_it)^T W z_i >= 1  is
one object with

    name                                  # its spelling in config; columns use ``column(name)``
    solve(problems, cfg) -> [SVMSolution]  # problems: [(X, Z, alpha)], all feasible; batched
    value(W) -> float                     # ||W||_N, the ``norm_<N>`` column; built-ins also
                                          # take a stack (..., d, d) (``values``)
    uses_fro = True                       # optional: solve(..., fro=[the Frobenius SVMs])
    on_device = True                      # optional: solve(..., device="cuda"), the job's

The Frobenius SVM is always solved first: its exact dual decides feasibility (the same for every
norm), the support tokens and local optimality; every other norm is solved only where it is
feasible. Your own: ``solver.norms=[fro,nuc,mylab.norms:make]`` with ``make(cfg) -> norm``.
"""

from __future__ import annotations

import re
import time

import numpy as np

from attnsvm.config.checks import ConfigError
from attnsvm.config.enums import Backend, FroMethod
from attnsvm.config.plugins import load_object
from attnsvm.config.schema import SolverConfig
from attnsvm.parallel import shares_of, spread, worth_forking
from attnsvm.svm import cvx, device_batch
from attnsvm.svm import solve as svm
from attnsvm.svm.fro_batch import BATCHED
from attnsvm.svm.norm_names import BUILTIN as NAMES
from attnsvm.svm.norm_names import lp_exponent, norm_names
from attnsvm.svm.nuclear_ipm import WORKING_SET_M


def column(name: str) -> str:
    """The column suffix of norm ``name``: no dots, so ``l1.75`` is ``l1p75``."""
    return name.replace(".", "p")


class Frobenius:
    """W^mm: exact, batched and certified (svm.w_mm_batch), else the least-distance dual."""

    name = "fro"
    on_device = True  # solve_all passes the job's device: the batch runs there

    def solve(self, problems, cfg: SolverConfig, device: str = "cpu") -> list[svm.SVMSolution]:
        if device == "cpu" or cfg.frobenius == FroMethod.cvxpy:
            return svm.w_mm_batch(problems, cfg, device)
        pre = _on_device(problems, cfg, device, "fro")
        return _rest(pre, lambda ks: svm.w_mm_batch([problems[k] for k in ks], cfg, device))

    def value(self, W: np.ndarray) -> np.ndarray:
        if W.ndim == 2:  # np.linalg.norm's own (dot-product) sum, as norm_fro always had
            return np.linalg.norm(W)
        return np.linalg.norm(W, axis=(-2, -1))


class Nuclear:
    """W^mm_*: the batched interior point (solver.backend=IPM) or one cvxpy model each."""

    name = "nuc"
    uses_fro = True  # solve_all passes the Frobenius SVMs: a large instance's working set
    on_device = True  # and the job's device: the interior point runs there

    def solve(self, problems, cfg: SolverConfig, fro=None, device="cpu") -> list[svm.SVMSolution]:
        if cfg.backend == Backend.IPM and device == "cpu":
            return svm.w_mm_nuc_batch(problems, cfg, [True] * len(problems), fro, device)
        if cfg.backend == Backend.IPM:
            pre = _on_device(problems, cfg, device, "nuc", most=WORKING_SET_M)
            return _rest(
                pre,
                lambda ks: svm.w_mm_nuc_batch(
                    [problems[k] for k in ks], cfg, [True] * len(ks),
                    [fro[k] for k in ks] if fro else None, device,
                ),
            )  # fmt: skip
        return [svm.w_mm_nuc(X, Z, alpha, cfg) for X, Z, alpha in problems]

    def value(self, W: np.ndarray) -> np.ndarray:
        return np.linalg.norm(W, "nuc", axis=(-2, -1))


def _on_device(problems, cfg: SolverConfig, device: str, norm: str, most=np.inf) -> list:
    """The SVMs ``norm`` of ``problems`` that the GPU batch certified (device_batch.py),
    None where it did not (or an instance has ``most`` constraints or more)."""
    t0 = time.perf_counter()
    out: list[svm.SVMSolution | None] = [None] * len(problems)
    for (n, T, _), ks in device_batch.groups(problems).items():
        if n == 0 or T < 2 or n * (T - 1) >= most:
            continue
        X, Z, alpha = device_batch.stacked(problems, ks, device)
        for k, res in zip(ks, getattr(device_batch, norm)(X, Z, alpha, cfg), strict=True):
            if res is not None:
                W, margins, rank = res
                out[k] = svm.SVMSolution(norm, svm.OPTIMAL, W, margins, rank, path=BATCHED)
    for sol in out:
        if sol is not None:
            sol.seconds = (time.perf_counter() - t0) / len(problems)
    return out


def _rest(pre: list, solve) -> list:
    """``pre``'s solutions, and ``solve(positions)`` where it has none."""
    todo = [k for k, sol in enumerate(pre) if sol is None]
    for k, sol in zip(todo, solve(todo) if todo else [], strict=True):
        pre[k] = sol
    return pre


class Spectral:
    """min ||W||_2 (largest singular value): an SDP in the reduced space (svm.reduced_cvx_svm),
    the conjectured limit of spectral steepest descent. Its optimum need not be unique.
    Clarabel often cannot certify it at 1e-10: a second solve at 1e-8 (cvx.solve_laddered)."""

    name = "spectral"

    def solve(self, problems, cfg: SolverConfig) -> list[svm.SVMSolution]:
        return [
            _timed(svm.reduced_cvx_svm, X, Z, alpha, cfg, "spectral", True)
            for X, Z, alpha in problems
        ]

    def value(self, W: np.ndarray) -> np.ndarray:
        return np.linalg.norm(W, 2, axis=(-2, -1))


class Entrywise:
    """min ||vec W||_p, the lp-SVM of lp mirror descent (p = inf: the max-norm SVM of sign
    descent). p = 1 and p = inf are LPs solved exactly (cvx.solve_lp, a vertex: one of
    possibly many optima); 1 < p < inf a power-cone program through the cvxpy gateway, one
    compiled model per constraint shape, re-solved with new data."""

    def __init__(self, name: str, p: float):
        self.name, self.p = name, p
        self._models: dict[tuple[int, int], tuple] = {}

    def solve(self, problems, cfg: SolverConfig) -> list[svm.SVMSolution]:
        return [_timed(self._solve_one, X, Z, alpha, cfg) for X, Z, alpha in problems]

    def value(self, W: np.ndarray) -> np.ndarray:
        return np.linalg.norm(W.reshape(*W.shape[:-2], -1), self.p, axis=-1)

    def _solve_one(self, X, Z, alpha, cfg: SolverConfig) -> svm.SVMSolution:
        dx, zq, _ = svm.constraints(X, Z, alpha)
        A = np.einsum("jk,jl->jkl", dx, zq).reshape(len(dx), -1)  # <A_j, W> = A vec(W), row-major
        d = X.shape[-1]
        if np.isinf(self.p) or self.p == 1:
            status, w, reason = _lp_svm(A, self.p)
        else:
            status, w, reason = self._cone_svm(A, cfg)
        if w is None:
            return svm.SVMSolution(self.name, status, reason=reason)
        sol = svm.SVMSolution(self.name, status, W=w.reshape(d, d), reason=reason)
        return svm.check_solution(sol, X, Z, alpha, cfg)

    def _cone_svm(self, A: np.ndarray, cfg: SolverConfig):
        import cvxpy as cp  # only the power-cone norms build a model

        key = A.shape
        if key not in self._models:
            A_par, w = cp.Parameter(key), cp.Variable(key[1])
            problem = cp.Problem(cp.Minimize(cp.pnorm(w, self.p)), [A_par @ w >= 1])
            self._models[key] = (problem, A_par, w)
        problem, A_par, w = self._models[key]
        A_par.value = A
        status, reason = cvx.solve_laddered(problem, cfg)
        return status, None if w.value is None else np.array(w.value), reason


def relaxed_entrywise(norm: Entrywise, X, Z, alpha, tight, cfg: SolverConfig):
    """The relaxed lp-SVM of joint training (``norm`` an entrywise one, p its exponent; the
    Frobenius one is svm.w_mm_relaxed): min ||vec W||_p s.t. (x_{i alpha_i} - x_it)^T W z_i
    >= 1 for the sequences i that are support vectors of the head's lp-SVM (``tight`` (n,)
    bool) and >= 0 for the others; an LP for p = 1 and inf, else one power-cone program."""
    t0 = time.perf_counter()
    dx, zq, ids = svm.constraints(X, Z, alpha)
    A = np.einsum("jk,jl->jkl", dx, zq).reshape(len(dx), -1)
    rhs = tight[ids[:, 0]].astype(float)
    name = f"relaxed {norm.name}"
    if not rhs.any():
        return svm.SVMSolution(name, svm.INFEASIBLE, reason="no sequence is a head support vector")
    if np.isinf(norm.p) or norm.p == 1:
        status, w, reason = _lp_svm(A, norm.p, rhs)
    else:
        import cvxpy as cp

        w_var = cp.Variable(A.shape[1])
        problem = cp.Problem(cp.Minimize(cp.pnorm(w_var, norm.p)), [A @ w_var >= rhs])
        status, reason = cvx.solve_laddered(problem, cfg)
        w = None if w_var.value is None else np.array(w_var.value)
    if w is None:
        return svm.SVMSolution(name, status, reason=reason)
    d = X.shape[-1]
    sol = svm.SVMSolution(name, status, W=w.reshape(d, d), reason=reason)
    sol.seconds, sol.margins = time.perf_counter() - t0, svm.margins_of(sol.W, X, Z, alpha)
    if (sol.margins < np.where(tight, 1.0, 0.0)[:, None] - cfg.feas_tol).any():
        sol.status, sol.reason = svm.INACCURATE, "a relaxed margin below its bound - feas_tol"
    sol.rank = svm.matrix_rank(sol.W, cfg.rank_rtol)
    return sol


def _lp_svm(A: np.ndarray, p: float, rhs=None):
    """min ||w||_1 or ||w||_inf s.t. A w >= rhs (default 1) as an LP over (w, t): |w_k| <= t_k
    (l1, min sum t) or |w_k| <= t (max norm, min t)."""
    m, D = A.shape
    k = D if p == 1 else 1  # slack variables
    expand = np.eye(D) if p == 1 else np.ones((D, 1))  # t_k or t, per entry of w
    A_ub = np.block([[np.eye(D), -expand], [-np.eye(D), -expand], [-A, np.zeros((m, k))]])
    b_ub = np.concatenate([np.zeros(2 * D), -(np.ones(m) if rhs is None else rhs)])
    c = np.concatenate([np.zeros(D), np.ones(k)])
    status, x, reason = cvx.solve_lp(c, A_ub, b_ub)
    return status, None if x is None else x[:D], reason


def _timed(solve, *args) -> svm.SVMSolution:
    t0 = time.perf_counter()
    sol = solve(*args)
    sol.seconds = time.perf_counter() - t0
    return sol


BUILTIN = {norm.name: norm for norm in (Frobenius, Nuclear, Spectral)}
assert set(NAMES) == {*BUILTIN, "max"}, "norm_names.BUILTIN lists the norms made here"


def make_norm(name: str, cfg: SolverConfig):
    """The norm called ``name`` in ``solver.norms``: a built-in, or your factory's, whose
    ``name`` attribute (letters, digits, _) names its columns."""
    if name in BUILTIN:
        return BUILTIN[name]()
    if name == "max":
        return Entrywise("max", np.inf)
    if lp_exponent(name) == 2:  # the entrywise l2 norm is Frobenius: its exact solver
        fro = Frobenius()
        fro.name = name
        return fro
    if lp_exponent(name) is not None:
        return Entrywise(name, lp_exponent(name))
    norm = load_object(name, "solver.norms")(cfg)
    if not re.fullmatch(r"[A-Za-z]\w*", str(getattr(norm, "name", ""))):
        raise ConfigError(
            f"solver.norms: {name} made a norm without a valid `name` attribute (letters, "
            f"digits and _; it names the columns corr_<name>, rank_<name>, ...)"
        )
    return norm


def make_norms(cfg: SolverConfig) -> list:
    """The configured norms, Frobenius first (norm_names puts it there; None is the default
    set)."""
    made = [make_norm(name, cfg) for name in norm_names(cfg.norms)]
    names = [column(norm.name) for norm in made]
    if len(set(names)) < len(names):
        raise ConfigError(f"solver.norms={cfg.norms}: two norms share a column name: {names}")
    return made


def values(norm, Ws: np.ndarray) -> np.ndarray:
    """||W||_N of every W of a stack (..., d, d): one call for the built-ins, else a loop."""
    if isinstance(norm, (Frobenius, Nuclear, Spectral, Entrywise)):
        return norm.value(Ws)
    flat = Ws.reshape(-1, *Ws.shape[-2:])
    return np.array([float(norm.value(W)) for W in flat]).reshape(Ws.shape[:-2])


def infeasible(name: str, reason: str = "Frobenius SVM infeasible") -> svm.SVMSolution:
    """The solution of a norm that is not solved because no W separates alpha."""
    return svm.SVMSolution(name, svm.INFEASIBLE, reason=reason)


def solve_spread(
    make, problems: list, cfg: SolverConfig, workers: int = 1, device: str = "cpu", done=None
) -> list[dict]:
    """``solve_all`` over ``workers`` forked processes (attnsvm/parallel.py; threads on a
    GPU), each on contiguous shares of ``problems`` with its own norms (``make()``: a norm may
    keep compiled models). Every solver's answer for an instance is independent of its batch
    mates and LAPACK runs on one thread per worker, so the bits are those of ``workers=1``.
    ``device``: solve_all's; ``done(solutions)`` runs in the caller as each share arrives."""
    on_gpu = device != "cpu" and all(getattr(n, "on_device", False) for n in make())
    if workers <= 1 or len(problems) < 2 or on_gpu:  # a GPU solves all seeds in one batch
        return _noted(solve_all(make(), problems, cfg, device), done)
    shares = shares_of(range(len(problems)), workers, per_worker=1)  # batched solvers: big shares
    parts = spread(
        lambda share: solve_all(make(), [problems[k] for k in share], cfg, device),
        shares,
        workers,
        processes=device == "cpu" and worth_forking(len(problems), workers),  # no CUDA there
    )
    return [sols for part in parts for sols in _noted(part, done)]


def _noted(solutions: list[dict], done) -> list[dict]:
    if done is not None:
        done(solutions)
    return solutions


def solve_all(norms: list, problems: list, cfg: SolverConfig, device: str = "cpu") -> list[dict]:
    """Every norm's SVM of every problem (X, Z, alpha): [{name: SVMSolution}], one dict per
    problem. The Frobenius SVM (``norms[0]``) decides feasibility; each other norm solves its
    feasible problems in one call (batched where the norm can). A norm that declares
    ``on_device`` solves on ``device`` (the job's; a GPU batches there)."""

    def where(norm) -> dict:
        return {"device": device} if getattr(norm, "on_device", False) else {}

    fro, *others = norms
    out = [{fro.name: sol} for sol in fro.solve(problems, cfg, **where(fro))]
    ok = [k for k, sols in enumerate(out) if sols[fro.name].status != svm.INFEASIBLE]
    for norm in others:
        t0 = time.perf_counter()
        todo = [problems[k] for k in ok]
        hint = {"fro": [out[k][fro.name] for k in ok]} if getattr(norm, "uses_fro", False) else {}
        hint.update(where(norm))
        solved = norm.solve(todo, cfg, **hint) if ok else []
        if len(solved) != len(ok):
            raise RuntimeError(f"norm {norm.name!r} returned {len(solved)} of {len(ok)} solutions")
        for k, sol in zip(ok, solved, strict=True):
            sol.norm = norm.name
            if sol.W is not None and sol.margins is None:  # a plug-in's: constraints checked
                svm.check_solution(sol, *problems[k], cfg)
            if not sol.seconds:  # a plug-in that does not time itself: its share of the call
                sol.seconds = (time.perf_counter() - t0) / len(ok)
            out[k][norm.name] = sol
        for k in set(range(len(problems))) - set(ok):
            out[k][norm.name] = infeasible(norm.name)
    return out
