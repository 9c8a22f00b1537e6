"""Token-priority graphs, their SCCs, and the graph-SVM of next-token prediction
(docs/math.md#the-graph-svm; Li, Huang, Ildiz, Rawat, Oymak, AISTATS 2024).

One instance: a vocabulary E (K, d) of unit embeddings, n sequences of T distinct ids
(n, T) whose query is the last token, and a set of *source* positions per sequence
``src`` (n, T) — the label's position for the global graph, the ids GD selected for the local
one. For every last token k the graph G^(k) has an edge c -> j from each source id c of a
sequence ending in k to every other id j of that sequence. Its strongly connected components
(``scipy.sparse.csgraph``, no recursion) split the vocabulary into levels, and

    W^svm = argmin ||W||  s.t.  (e_c - e_j)^T W e_k  = 0  if c, j share an SCC of G^(k),
                                                     >= 1 otherwise

(Frobenius for W, nuclear for (K,Q)). Every constraint is linear in vec(W), so the Frobenius
problem is solved exactly as an equality-constrained SVM: project the inequality rows onto the
null space of the equality rows, then least-distance programming through its NNLS dual.

    scc = scc_table(ids, src, K)             # (K, K): SCC label of id j in G^(k)
                                             # (attnsvm/data/token_graph.py)
    sol = graph_svm_fro(E, ids, src, scc)    # GraphSVM(W, status, reason)
"""

from __future__ import annotations

from dataclasses import dataclass

import cvxpy as cp
import numpy as np

from attnsvm.config.schema import SolverConfig
from attnsvm.data.token_graph import edges
from attnsvm.svm import cvx
from attnsvm.svm import solve as svm

OK, INFEASIBLE, ZERO = "ok", "infeasible", "zero"  # ZERO: every constraint is an equality


@dataclass
class GraphSVM:
    W: np.ndarray | None  # (d, d), None unless status is ok (or zero: the zero matrix)
    status: str  # ok | infeasible | zero | solver_error
    reason: str = ""


def constraint_rows(E: np.ndarray, ids: np.ndarray, src: np.ndarray, scc: np.ndarray):
    """Rows vec((e_c - e_j) e_k^T) (m, d*d) of the equalities and of the inequalities."""
    i, t, u = edges(ids, src)
    c, j, k = ids[i, t], ids[i, u], ids[i, -1]
    rows = np.einsum("md,me->mde", E[c] - E[j], E[k]).reshape(len(i), -1)
    same = scc[k, c] == scc[k, j]
    return rows[same], rows[~same]


def _row_basis(rows: np.ndarray) -> np.ndarray:
    """Orthonormal basis of the row space (no redundant equalities for the solvers)."""
    _, sv, vt = np.linalg.svd(rows, full_matrices=False)
    return vt[sv > 1e-12 * sv[0]]


def graph_svm_fro(E, ids, src, scc, feas_tol: float = 1e-6) -> GraphSVM:
    """Frobenius graph-SVM, exact: null-space projection, then least-distance NNLS."""
    d = E.shape[1]
    eq, ineq = constraint_rows(E, ids, src, scc)
    if len(ineq) == 0:
        return GraphSVM(np.zeros((d, d)), ZERO, "every edge inside an SCC")
    A = ineq
    if len(eq):
        basis = _row_basis(eq)
        A = A - (A @ basis.T) @ basis
    u, slack = svm.least_distance_dual(A @ A.T)
    if slack <= 1e-12:
        return GraphSVM(None, INFEASIBLE, "no W meets the margins (0 in the constraints' hull)")
    w = A.T @ (u / slack)
    if (ineq @ w).min() < 1 - feas_tol or (len(eq) and np.abs(eq @ w).max() > feas_tol):
        return GraphSVM(None, INFEASIBLE, "margins violated beyond solver.feas_tol")
    return GraphSVM(w.reshape(d, d), OK)


def graph_svm_nuc(E, ids, src, scc, cfg: SolverConfig) -> GraphSVM:
    """Nuclear-norm graph-SVM (the bias of (K,Q) training) through the cvxpy gateway."""
    d = E.shape[1]
    eq, ineq = constraint_rows(E, ids, src, scc)
    if len(ineq) == 0:
        return GraphSVM(np.zeros((d, d)), ZERO, "every edge inside an SCC")
    W = cp.Variable((d, d))
    w = cp.vec(W, order="C")
    ineq = np.unique(ineq.round(15), axis=0)  # repeated edges: one constraint each
    cons = [ineq @ w >= 1] + ([_row_basis(eq) @ w == 0] if len(eq) else [])
    status, reason = cvx.solve(cp.Problem(cp.Minimize(cp.normNuc(W)), cons), cfg)
    if status in (cvx.OPTIMAL, cvx.INACCURATE):
        Wv = np.asarray(W.value)
        if (ineq @ Wv.ravel()).min() >= 1 - cfg.feas_tol:
            return GraphSVM(Wv, OK, reason)
        return GraphSVM(None, cvx.SOLVER_ERROR, f"{reason} margins below 1 - solver.feas_tol")
    return GraphSVM(None, status, reason)


def fin_basis(E: np.ndarray, ids: np.ndarray, labels: np.ndarray, scc: np.ndarray) -> np.ndarray:
    """Orthonormal basis (p, d*d) of S_fin = span{(e_c - mean_{c' in C} e_c') e_k^T}: C the
    label's SCC of G^(k) for every sequence whose label shares it with another of its ids."""
    d = E.shape[1]
    rows = []
    for i in np.nonzero(cyclic_rows(ids, labels, scc))[0]:
        k = ids[i, -1]
        C = np.nonzero(scc[k] == scc[k, labels[i]])[0]
        centred = E[C] - E[C].mean(0)
        rows.append(np.einsum("cd,e->cde", centred, E[k]).reshape(len(C), -1))
    if not rows:
        return np.zeros((0, d * d))
    _, sv, vt = np.linalg.svd(np.vstack(rows), full_matrices=False)
    return vt[sv > 1e-10 * max(sv[0], 1e-300)]


def cyclic_rows(ids: np.ndarray, labels: np.ndarray, scc: np.ndarray) -> np.ndarray:
    """(n,) sequences whose label shares its SCC of G^(k) with another id of the sequence."""
    k = ids[:, -1]
    same = scc[k][np.arange(len(ids))[:, None], ids] == scc[k, labels][:, None]  # (n, T)
    return same.sum(-1) >= 2


def fin_mask(ids: np.ndarray, labels: np.ndarray, scc: np.ndarray) -> np.ndarray:
    """(n, T) the reduced sequences of W^fin: ids in the label's SCC, cyclic sequences only."""
    k = ids[:, -1]
    same = scc[k][np.arange(len(ids))[:, None], ids] == scc[k, labels][:, None]
    return same & cyclic_rows(ids, labels, scc)[:, None]


def project(basis: np.ndarray, W: np.ndarray) -> np.ndarray:
    """Orthogonal projection Pi_S W (..., d, d) onto span(basis)."""
    flat = W.reshape(*W.shape[:-2], -1)
    return ((flat @ basis.T) @ basis).reshape(W.shape)
