"""A user's own SVM norm, as the README shows it: the entrywise l1 norm (sparse W).

python -m attnsvm.run solver.norms=[fro,nuc,norm_example.make] seeds=4
"""

import cvxpy as cp
import numpy as np

from attnsvm.svm import cvx
from attnsvm.svm import solve as svm


class EntrywiseL1:
    name = "l1ex"  # the column suffix: corr_l1ex, rank_l1ex, norm_l1ex, ...

    def __init__(self, cfg):
        self.cfg = cfg

    def solve(self, problems, cfg):
        """One cvxpy model per problem, through attnsvm's solver gateway (statuses, tolerances)."""
        out = []
        for X, Z, alpha in problems:
            dx, zq, _ = svm.constraints(X, Z, alpha)
            W = cp.Variable((X.shape[-1], X.shape[-1]))
            margins = cp.sum(cp.multiply(dx @ W, zq), axis=1)
            status, reason = cvx.solve(
                cp.Problem(cp.Minimize(cp.sum(cp.abs(W))), [margins >= 1]), cfg
            )
            out.append(svm.SVMSolution(self.name, status, W=W.value, reason=reason))
        return out

    def value(self, W):
        return float(np.abs(W).sum())


def make(cfg):
    """The factory attnsvm calls with the solver config."""
    return EntrywiseL1(cfg)


class Broken(EntrywiseL1):
    """Returns W = 0, which violates every constraint: attnsvm must not call it a solution."""

    name = "broken"

    def solve(self, problems, cfg):
        return [
            svm.SVMSolution(self.name, "optimal", W=np.zeros((X.shape[-1],) * 2))
            for X, _, _ in problems
        ]


def make_broken(cfg):
    return Broken(cfg)


def make_nameless(cfg):
    return object()
