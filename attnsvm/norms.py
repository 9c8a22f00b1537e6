"""SVM norms: which attention SVMs a job solves, ``solver.norms`` (default ``[fro, nuc]``).

Every norm N of the attention SVM  min ||W||_N  s.t.  (x_{i alpha_i} - x_it)^T W z_i >= 1  is
one object with

    name                                  # its spelling in config; columns use ``column(name)``
    solve(problems, cfg) -> [SVMSolution]  # problems: [(X, Z, alpha)], all feasible; batched
    value(W) -> float                     # ||W||_N, the ``norm_<N>`` column

The Frobenius SVM is always solved first: its exact dual decides feasibility (the same for every
norm), the support tokens and local optimality; every other norm is solved only where it is
feasible. Your own: ``solver.norms=[fro,nuc,mylab.norms.make]`` with ``make(cfg) -> norm``.
"""

from __future__ import annotations

import re
import time

import numpy as np

from attnsvm import svm
from attnsvm.config import Backend, ConfigError, SolverConfig
from attnsvm.plugins import load_object


def column(name: str) -> str:
    """The column suffix of norm ``name``: no dots, so ``l1.75`` is ``l1p75``."""
    return name.replace(".", "p")


class Frobenius:
    """W^mm: exact, by the non-negative least-squares dual (svm.w_mm)."""

    name = "fro"

    def solve(self, problems, cfg: SolverConfig) -> list[svm.SVMSolution]:
        return [svm.w_mm(X, Z, alpha, cfg) for X, Z, alpha in problems]

    def value(self, W: np.ndarray) -> float:
        return float(np.linalg.norm(W))


class Nuclear:
    """W^mm_*: the batched interior point (solver.backend=IPM) or one cvxpy model each."""

    name = "nuc"

    def solve(self, problems, cfg: SolverConfig) -> list[svm.SVMSolution]:
        if cfg.backend == Backend.IPM:
            return svm.w_mm_nuc_batch(problems, cfg, feasible=[True] * len(problems))
        return [svm.w_mm_nuc(X, Z, alpha, cfg) for X, Z, alpha in problems]

    def value(self, W: np.ndarray) -> float:
        return float(np.linalg.norm(W, "nuc"))


BUILTIN = {norm.name: norm for norm in (Frobenius, Nuclear)}


def make_norm(name: str, cfg: SolverConfig):
    """The norm called ``name`` in ``solver.norms``: a built-in, or your factory's, whose
    ``name`` attribute (letters, digits, _) names its columns."""
    if name in BUILTIN:
        return BUILTIN[name]()
    norm = load_object(name, "solver.norms")(cfg)
    if not re.fullmatch(r"[A-Za-z]\w*", str(getattr(norm, "name", ""))):
        raise ConfigError(
            f"solver.norms: {name} made a norm without a valid `name` attribute (letters, "
            f"digits and _; it names the columns corr_<name>, rank_<name>, ...)"
        )
    return norm


def make_norms(cfg: SolverConfig) -> list:
    """The configured norms, Frobenius first (config.SolverConfig puts it there)."""
    made = [make_norm(name, cfg) for name in cfg.norms]
    names = [column(norm.name) for norm in made]
    if len(set(names)) < len(names):
        raise ConfigError(f"solver.norms={cfg.norms}: two norms share a column name: {names}")
    return made


def infeasible(name: str, reason: str = "Frobenius SVM infeasible") -> svm.SVMSolution:
    """The solution of a norm that is not solved because no W separates alpha."""
    return svm.SVMSolution(name, svm.INFEASIBLE, reason=reason)


def solve_all(norms: list, problems: list, cfg: SolverConfig) -> list[dict]:
    """Every norm's SVM of every problem (X, Z, alpha): [{name: SVMSolution}], one dict per
    problem. The Frobenius SVM (``norms[0]``) decides feasibility; each other norm solves its
    feasible problems in one call (batched where the norm can)."""
    fro, *others = norms
    out = [{fro.name: sol} for sol in fro.solve(problems, cfg)]
    ok = [k for k, sols in enumerate(out) if sols[fro.name].status != svm.INFEASIBLE]
    for norm in others:
        t0 = time.perf_counter()
        solved = norm.solve([problems[k] for k in ok], cfg) if ok else []
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
