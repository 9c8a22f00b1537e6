"""Large instances (issue 16): the Frobenius SVM by block principal pivoting, the nuclear SVM
one instance at a time with BLAS products and by constraint generation. Each route must give
the reference route's solution (to rounding / the solver tolerance), keep its constraints, and
give the same bits alone, batched, or on two worker threads."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnsvm.composition import DatasetConfig
from attnsvm.config import SolverConfig
from attnsvm.experiments.gd.svms import Reported
from attnsvm.kernel import library
from attnsvm.progress import Progress
from attnsvm.svm import lcp, norms, nuclear_ops
from attnsvm.svm import nuclear_ipm as sdp
from attnsvm.svm import solve as svm

CFG = SolverConfig()


def _problem(seed=0, n=40, T=8, d=20):
    from attnsvm.data.generators import make_instances

    inst = make_instances(DatasetConfig(n=n, T=T, d=d), [seed])
    return inst.X[0].numpy(), inst.Z[0].numpy(), inst.opt[0].numpy()


@pytest.mark.parametrize("seed", range(3))
def test_pivoting_is_the_nnls_dual(seed):
    X, Z, alpha = _problem(seed)
    dx, zq, _ = svm.constraints(X, Z, alpha)
    assert len(dx) >= sdp.LARGE_M  # the route w_mm takes
    mu = lcp.svm_dual(dx, zq)
    u, slack, scale = svm._ldp_dual(dx, zq)
    assert mu is not None and slack > 1e-12
    np.testing.assert_allclose(mu, u / (slack * scale), atol=1e-9 * np.abs(mu).max())
    s = ((dx @ dx.T) * (zq @ zq.T)) @ mu - 1  # complementarity: the KKT point itself
    assert mu.min() >= 0 and s.min() > -1e-9 and np.abs(mu * s).max() < 1e-9


def test_pivoting_declines_dependent_constraints_and_nnls_decides():
    """d = 3: at most 9 independent constraint matrices among 280: G is singular."""
    X, Z, alpha = _problem(0, d=3)
    dx, zq, _ = svm.constraints(X, Z, alpha)
    assert lcp.svm_dual(dx, zq) is None
    sol = svm.w_mm(X, Z, alpha, CFG)  # falls back to the NNLS dual, which decides
    assert sol.status in (svm.OPTIMAL, svm.INFEASIBLE)
    if sol.ok:
        assert sol.margins.min() >= 1 - CFG.feas_tol


CYCLES = [  # found by search: block swaps alone return to an earlier guess forever
    [2.707365657339847, -1.2490287316619009, 3.086072081273734, 0.39830086522290853],
    [-1.2490287316619009, 14.9402422765416, 1.9893552695679697, 7.069417715708436],
    [3.086072081273734, 1.9893552695679697, 4.504916080045144, 2.1414471256852714],
    [0.39830086522290853, 7.069417715708436, 2.1414471256852714, 3.7497228723707785],
]


def test_pivoting_cycling_guard_ends_where_block_swaps_cycle(monkeypatch):
    G = torch.tensor(CYCLES, dtype=torch.float64)
    monkeypatch.setattr(lcp, "BACKUP", 10**9)  # no guard: cycles until max_iter
    assert lcp.complementary_point(G, max_iter=50) is None
    monkeypatch.setattr(lcp, "BACKUP", 3)
    u = lcp.complementary_point(G)
    s = G @ u - 1
    assert u.min() >= 0 and s.min() > -1e-12 and (u * s).abs().max() < 1e-12


def _reduced(X, Z, alpha):
    dx, _, ids = svm.constraints(X, Z, alpha)
    U, V = svm._reduced_basis(dx), svm._reduced_basis(Z)
    return dx @ U, Z @ V, ids[:, 0]


def _nuc_norm(W):
    return np.linalg.norm(W, "nuc")


def _nuc(problems, monkeypatch, large_m, working_m=10**9, **kw):
    monkeypatch.setattr(sdp, "LARGE_M", large_m)
    monkeypatch.setattr(sdp, "WORKING_SET_M", working_m)
    a, b, rows = (np.stack(x) for x in zip(*(_reduced(*p) for p in problems), strict=True))
    return sdp.nuclear_svm_batch(a, b, rows, tol=1e-10, max_iter=200, **kw)


def test_blas_route_solves_the_same_sdp(monkeypatch):
    problems = [_problem(s, n=12, T=6, d=8) for s in range(2)]
    W_seq, st_seq, _ = _nuc(problems, monkeypatch, large_m=10**9)
    W_blas, st_blas, _ = _nuc(problems, monkeypatch, large_m=1)
    assert st_seq == st_blas == ["optimal", "optimal"]
    for Wb, Ws in zip(W_blas, W_seq, strict=True):  # same optimum (W itself to ~sqrt(tol))
        assert abs(_nuc_norm(Wb) - _nuc_norm(Ws)) <= 1e-9 * _nuc_norm(Ws)
        assert np.sum(Wb * Ws) / (np.linalg.norm(Wb) * np.linalg.norm(Ws)) > 1 - 1e-9


def test_blas_route_bits_do_not_depend_on_batch_mates_or_workers(monkeypatch):
    problems = [_problem(s, n=12, T=6, d=8) for s in range(3)]
    alone, _, _ = _nuc(problems[:1], monkeypatch, large_m=1)
    batched, _, _ = _nuc(problems, monkeypatch, large_m=1, workers=1)
    threaded, _, _ = _nuc(problems, monkeypatch, large_m=1, workers=2)
    assert np.array_equal(alone[0], batched[0])
    assert np.array_equal(batched, threaded)


@pytest.mark.skipif(library() is None, reason="the C build is absent (no compiler at install)")
@pytest.mark.parametrize(("nb", "n", "k"), [(3, 6, 7), (1, 40, 7), (2, 1, 5), (2, 5, 1)])
def test_schur_kernel_has_the_torch_sums_bits(monkeypatch, nb, n, k):
    """The C kernel's one pass gives the lower triangle the torch ops' bits, zeros above it."""
    g = torch.Generator().manual_seed(nb * 100 + n + k)
    m = n * k
    shapes = [(nb, m, m), (nb, m, m), (nb, n, n), (nb, n, n), (nb, m, n), (nb, m, n)]
    args = [torch.randn(s, dtype=torch.float64, generator=g) for s in shapes]
    got = nuclear_ops._schur_blocked(*(a.clone() for a in args), k)  # torch's ops scale in place
    monkeypatch.setattr(nuclear_ops, "library", lambda: None)
    want = nuclear_ops._schur_blocked(*(a.clone() for a in args), k)
    assert torch.equal(got.tril(), want.tril())
    assert not got.triu(1).any()


@pytest.mark.skipif(library() is None, reason="the C build is absent (no compiler at install)")
@pytest.mark.parametrize("large_m", [1, 10**9])  # one instance at a time with BLAS; batched
def test_nuclear_svms_have_the_same_bits_without_the_schur_kernel(monkeypatch, large_m):
    problems = [_problem(s, n=12, T=6, d=8) for s in range(3)]
    W, status, iters = _nuc(problems, monkeypatch, large_m=large_m)
    monkeypatch.setattr(nuclear_ops, "library", lambda: None)
    W_torch, status_torch, iters_torch = _nuc(problems, monkeypatch, large_m=large_m)
    assert status == status_torch == ["optimal"] * 3
    assert np.array_equal(W, W_torch) and np.array_equal(iters, iters_torch)


def test_working_set_reaches_the_full_optimum_and_keeps_every_constraint(monkeypatch):
    X, Z, alpha = _problem(1, n=16, T=8, d=10)
    a, b, rows = _reduced(X, Z, alpha)
    fro = svm.w_mm(X, Z, alpha, CFG)
    start = svm._support_start(fro, svm.constraints(X, Z, alpha)[2], CFG)
    assert 0 < start.sum() < len(start)
    full, st_full, _ = _nuc([(X, Z, alpha)], monkeypatch, large_m=1)
    ws, st_ws, iters = _nuc([(X, Z, alpha)], monkeypatch, 1, working_m=1, start=start[None])
    assert st_full == st_ws == ["optimal"]
    margins = np.einsum("jp,pq,jq->j", a, ws[0], b[rows])
    assert margins.min() >= 1 - 1e-12  # feasible for every constraint, not just the working set
    assert abs(_nuc_norm(ws[0]) - _nuc_norm(full[0])) <= 1e-9 * _nuc_norm(full[0])


def test_pipeline_norms_pass_the_frobenius_support_to_the_nuclear_svm(monkeypatch):
    seen = {}
    real = svm.w_mm_nuc_batch

    def spy(problems, cfg, feasible=None, fro=None, device="cpu"):
        seen["fro"] = fro
        return real(problems, cfg, feasible, fro, device)

    monkeypatch.setattr(svm, "w_mm_nuc_batch", spy)
    problems = [_problem(0, n=5, T=4, d=6)]
    out = norms.solve_all(norms.make_norms(CFG), problems, CFG)
    assert seen["fro"] == [out[0]["fro"]]
    seen.clear()  # and through the progress reporter's wrapper (svms.Reported)
    reported = [Reported(norm, Progress(interval=1e9)) for norm in norms.make_norms(CFG)]
    out = norms.solve_all(reported, problems, CFG)
    assert seen["fro"] == [out[0]["fro"]]


def test_bench_scale_times_a_job_both_ways_in_fresh_processes():
    from attnsvm.bench import scale as bench_scale

    before = bench_scale.TARGETS
    try:
        bench_scale.TARGETS = [((6, 8, 10), 2, 60.0, 1)]
        (row,) = bench_scale.measure()
    finally:
        bench_scale.TARGETS = before
    assert row["ours"]["status"] == {"ok": 2} and row["before"]["status"] == {"ok": 1}
    assert row["ours"]["peak_mib"] > 0 and row["before_wall_scaled"] == 2 * row["before"]["wall"]
    lines = []
    bench_scale.emit_table(lambda s="": lines.append(s), [row])
    assert "(measured on 1, scaled)" in "\n".join(lines)
