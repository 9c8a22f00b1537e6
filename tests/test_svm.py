"""SVM solutions satisfy their constraints, match hand-made cases, and obey KKT."""

from __future__ import annotations

import numpy as np
import pytest

from attnsvm.composition import DatasetConfig
from attnsvm.config import FroMethod, SolverConfig
from attnsvm.data.generators import make_instances
from attnsvm.svm import solve as svm

CFG = SolverConfig()


def _instance(seed=0, n=5, T=6, d=8):
    inst = make_instances(DatasetConfig(n=n, T=T, d=d), [seed])
    return inst.X[0].numpy(), inst.Z[0].numpy(), inst.opt[0].numpy(), inst.gamma[0].numpy()


def test_hand_made_case():
    """One sequence, tokens +-e1, query e1: the constraint 2 W_11 >= 1 gives W = e1 e1^T / 2."""
    X = np.array([[[1.0, 0.0], [-1.0, 0.0]]])
    Z = np.array([[1.0, 0.0]])
    expected = np.array([[0.5, 0.0], [0.0, 0.0]])
    for solve in (svm.w_mm, svm.w_mm_nuc):
        sol = solve(X, Z, np.array([0]), CFG)
        assert sol.status == svm.OPTIMAL
        np.testing.assert_allclose(sol.W, expected, atol=1e-8)
        assert sol.rank == 1


def test_infeasible_is_reported_not_ranked():
    """Two sequences with the same tokens and query that select opposite tokens."""
    X = np.array([[[1.0, 0.0], [0.0, 1.0]], [[1.0, 0.0], [0.0, 1.0]]])
    Z = np.array([[0.6, 0.8], [0.6, 0.8]])
    for solve in (svm.w_mm, svm.w_mm_nuc):
        sol = solve(X, Z, np.array([0, 1]), CFG)
        assert sol.status == svm.INFEASIBLE
        assert sol.W is None and sol.rank is None


@pytest.mark.parametrize("seed", range(4))
def test_constraints_hold_with_active_margin_one(seed):
    X, Z, opt, _ = _instance(seed)
    for solve in (svm.w_mm, svm.w_mm_nuc):
        sol = solve(X, Z, opt, CFG)
        assert sol.status == svm.OPTIMAL
        m = sol.margins[np.isfinite(sol.margins)]
        assert m.min() >= 1 - 1e-7
        assert abs(m.min() - 1) < 1e-7  # optimal: some constraint is active


@pytest.mark.parametrize("seed", range(4))
def test_frobenius_kkt_span_of_active_constraints(seed):
    """W^mm = sum_j mu_j A_j over active constraints with mu_j >= 0 (stationarity + sign)."""
    X, Z, opt, _ = _instance(seed)
    sol = svm.w_mm(X, Z, opt, CFG)
    dx, zq, ids = svm.constraints(X, Z, opt)
    active = sol.margins[ids[:, 0], ids[:, 1]] <= 1 + 1e-6
    A = np.einsum("jd,je->jde", dx[active], zq[active]).reshape(active.sum(), -1)
    mu, *_ = np.linalg.lstsq(A.T, sol.W.ravel(), rcond=None)
    np.testing.assert_allclose(A.T @ mu, sol.W.ravel(), atol=1e-9)
    assert mu.min() > -1e-8


@pytest.mark.parametrize("seed", range(3))
def test_nnls_dual_matches_cvxpy(seed):
    X, Z, opt, _ = _instance(seed)
    fast = svm.w_mm(X, Z, opt, CFG)
    plain = svm.w_mm(X, Z, opt, SolverConfig(frobenius=FroMethod.cvxpy, tol=1e-9))
    np.testing.assert_allclose(fast.W, plain.W, atol=2e-5)  # cvxpy is the less accurate one
    assert np.linalg.norm(fast.W) <= np.linalg.norm(plain.W) + 1e-9
    assert fast.margins.min() >= 1 - 1e-12


@pytest.mark.parametrize("seed", range(3))
def test_nuclear_is_no_larger_in_nuclear_norm(seed):
    X, Z, opt, _ = _instance(seed)
    fro, nuc = svm.w_mm(X, Z, opt, CFG), svm.w_mm_nuc(X, Z, opt, CFG)
    assert np.linalg.norm(nuc.W, "nuc") <= np.linalg.norm(fro.W, "nuc") + 1e-7
    assert np.linalg.norm(fro.W) <= np.linalg.norm(nuc.W) + 1e-7
    assert nuc.rank <= fro.rank <= min(5, 8)  # rank <= min(n, d)


def test_local_optimality_uses_support_tokens():
    """opt is always locally optimal; a flipped selection whose support contains a better token
    is not."""
    X, Z, opt, gamma = _instance(1)
    assert svm.is_locally_optimal(svm.w_mm(X, Z, opt, CFG), gamma, opt, CFG)
    worst = gamma.argmin(-1)
    sol = svm.w_mm(X, Z, worst, CFG)
    assert sol.ok  # d >= n(T-1)... generic feasibility at this size
    assert not svm.is_locally_optimal(sol, gamma, worst, CFG)


def test_rank_uses_relative_tolerance():
    W = np.diag([1e6, 10.0, 1e-3])
    assert svm.matrix_rank(W, 1e-6) == 2
    assert svm.matrix_rank(W * 1e-9, 1e-6) == 2
