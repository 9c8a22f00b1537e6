"""The one gateway to cvxpy: every experiment's convex model is solved here.

``solver.backend`` names who solves the nuclear SDP; a cvxpy model always goes to a conic solver
(IPM, attnsvm's own batched interior point, is backed by Clarabel for the cvxpy models), with
tolerances from ``solver.tol``. What comes back is a status in attnsvm's vocabulary and a reason:
a solver that raises, stalls or returns no point is a ``solver_error`` carrying the solver's
message, never ``infeasible`` (only the solver's own certificate says that).

    status, reason = solve(problem, cfg.solver)
    status, x, reason = solve_lp(c, A_ub, b_ub)   # LPs: HiGHS dual simplex, an exact vertex
"""

from __future__ import annotations

import warnings
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from attnsvm.config.enums import Backend
from attnsvm.config.schema import SolverConfig

if TYPE_CHECKING:  # cvxpy (2 s) and scipy.optimize are imported by the calls that use them
    import cvxpy as cp

OPTIMAL, INFEASIBLE, INACCURATE, SOLVER_ERROR = (
    "optimal",
    "infeasible",
    "inaccurate",
    "solver_error",
)


def solver_name(cfg: SolverConfig) -> str:
    """The cvxpy solver for ``cfg.backend``: Clarabel behind attnsvm's interior point."""
    return Backend.CLARABEL.value if cfg.backend == Backend.IPM else cfg.backend.value


def solver_kwargs(cfg: SolverConfig) -> dict:
    """Tight tolerances (``cfg.tol``) and the iteration cap, in the solver's own option names.
    Clarabel on one thread (``max_threads=1``): its factorisation otherwise runs on a rayon
    pool that ignores the job's ``threads``, and a process forked after that pool started
    (attnsvm/parallel.py) waited on it forever (tests/test_parallel.py)."""
    t = cfg.tol
    if solver_name(cfg) == Backend.CLARABEL.value:
        return dict(
            tol_gap_abs=t, tol_gap_rel=t, tol_feas=t, tol_ktratio=t**0.5, max_iter=cfg.max_iters,
            max_threads=1,
        )  # fmt: skip
    return dict(eps_abs=t, eps_rel=t, max_iters=cfg.max_iters)


def solve(problem: cp.Problem, cfg: SolverConfig) -> tuple[str, str]:
    """Solve ``problem``; (status, reason) with status optimal, inaccurate (a point that the
    solver could not certify to tolerance), infeasible (the solver's certificate) or
    solver_error (an exception, or no point at all). Never warm-started: cvxpy would update
    the solver it kept from the model's previous solve, whose data (scaling) then changes this
    answer's bits, so a seed's result would depend on the seeds solved before it."""
    import cvxpy as cp

    name = solver_name(cfg)
    try:
        with warnings.catch_warnings():  # an inaccurate solve is reported in the status instead
            warnings.simplefilter("ignore", UserWarning)
            problem.solve(solver=name, warm_start=False, **solver_kwargs(cfg))
    except cp.error.SolverError as exc:
        return SOLVER_ERROR, f"{name}: {exc}"
    status = problem.status
    if status in (cp.INFEASIBLE, cp.INFEASIBLE_INACCURATE):
        return INFEASIBLE, f"{name} status {status}"
    if any(v.value is None for v in problem.variables()):
        return SOLVER_ERROR, f"{name} status {status}, no point returned"
    if status == cp.OPTIMAL:
        return OPTIMAL, ""
    if status == cp.OPTIMAL_INACCURATE:
        return INACCURATE, f"{name} status {status}"
    return SOLVER_ERROR, f"{name} status {status}"


def solve_laddered(problem: cp.Problem, cfg: SolverConfig, relax: float = 100.0):
    """``solve``, and once more at tolerances ``relax`` times looser when the solver could not
    certify the first (Clarabel's "almost solved" on power cones and spectral SDPs at 1e-10):
    optimal at the looser tolerance is reported optimal, with both outcomes in the reason."""
    status, reason = solve(problem, cfg)
    if status != INACCURATE:
        return status, reason
    loose = replace(cfg, tol=cfg.tol * relax)
    status2, reason2 = solve(problem, loose)
    if status2 == OPTIMAL:
        return OPTIMAL, f"optimal at tol {loose.tol:g} ({reason} at tol {cfg.tol:g})"
    return status, reason


LP_STATUS = {2: INFEASIBLE}  # scipy.optimize.linprog: 0 optimal, 2 infeasible, else an error


def solve_lp(c: np.ndarray, A_ub: np.ndarray, b_ub: np.ndarray, bounds=(None, None)):
    """min c^T x s.t. A_ub x <= b_ub by HiGHS' dual simplex: a vertex solution exact to
    rounding (an interior point stops at its tolerance). (status, x or None, reason)."""
    from scipy.optimize import linprog

    res = linprog(c, A_ub=A_ub, b_ub=b_ub, bounds=bounds, method="highs-ds")
    if res.status == 0:
        return OPTIMAL, res.x, ""
    return (
        LP_STATUS.get(res.status, SOLVER_ERROR),
        None,
        f"HiGHS status {res.status}: {res.message}",
    )
