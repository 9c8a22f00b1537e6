"""Every fast path against the plain one, and the two exact facts the SVM speed-ups rest on.

Fast: tiny sizes, no timing (benchmarks live in ``python -m attnsvm.bench``).
"""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attnsvm.composition import DatasetConfig, RunConfig
from attnsvm.config import (
    Backend,
    HeadConfig,
    Optimizer,
    OptimizerConfig,
    Parameterization,
    ParameterizationConfig,
    SolverConfig,
)
from attnsvm.data.generators import make_instances
from attnsvm.job import run_job
from attnsvm.kernel import batchops
from attnsvm.kernel.batchops import sum_last
from attnsvm.svm import solve as svm
from attnsvm.train.heads import make_head
from attnsvm.train.loop import loss_and_grad_w, train

IPM = SolverConfig(backend=Backend.IPM)
CVX = SolverConfig(backend=Backend.CLARABEL)


def problems(n: int, T: int, d: int, seeds: range):
    inst = make_instances(DatasetConfig(n=n, T=T, d=d), list(seeds))
    return [(inst.X[r].numpy(), inst.Z[r].numpy(), inst.opt[r].numpy()) for r in range(len(seeds))]


def corr(A: np.ndarray, B: np.ndarray) -> float:
    return float((A * B).sum() / np.linalg.norm(A) / np.linalg.norm(B))


# n=5, T=5 at d=2, 3 mixes feasible and infeasible instances; d=10 is over-parameterized
@pytest.mark.parametrize(("n", "T", "d"), [(5, 5, 2), (5, 5, 3), (4, 6, 5), (6, 8, 10)])
def test_batched_nuclear_matches_per_instance_cvxpy(n, T, d):
    probs = problems(n, T, d, range(8))
    fast = svm.w_mm_nuc_batch(probs, IPM)
    statuses = set()
    for (X, Z, alpha), f in zip(probs, fast, strict=True):
        ref = svm.w_mm_nuc(X, Z, alpha, CVX)
        statuses.add(ref.status)
        # Clarabel sometimes stops at "optimal_inaccurate" where the interior point meets tol
        assert f.status == ref.status or (f.status, ref.status) == (svm.OPTIMAL, svm.INACCURATE)
        if ref.ok:
            assert corr(f.W, ref.W) > 1 - 1e-6
            assert f.rank == ref.rank
            nf, nr = np.linalg.norm(f.W, "nuc"), np.linalg.norm(ref.W, "nuc")
            assert abs(nf - nr) <= 1e-6 * nr
            assert f.margins.min() >= 1 - 1e-12  # feasible, not merely to tolerance
    if d == 2:
        assert svm.INFEASIBLE in statuses  # the infeasible branch was exercised


def test_nuclear_batch_result_does_not_depend_on_the_batch():
    probs = problems(6, 8, 10, range(6))
    together = svm.w_mm_nuc_batch(probs, IPM)
    for pr, t in zip(probs, together, strict=True):
        alone = svm.w_mm_nuc_batch([pr], IPM)[0]
        np.testing.assert_allclose(alone.W, t.W, rtol=0, atol=1e-12 * np.abs(t.W).max())


def test_single_instance_entry_point_uses_the_fast_path_and_agrees():
    (X, Z, alpha) = problems(6, 8, 10, range(1))[0]
    a, b = svm.w_mm_nuc(X, Z, alpha, IPM), svm.w_mm_nuc(X, Z, alpha, CVX)
    assert a.status == b.status == svm.OPTIMAL
    assert corr(a.W, b.W) > 1 - 1e-6


def test_frobenius_solution_lies_in_span_of_constraint_matrices():
    """W^mm_F = sum_j mu_j A_j: the full d x d cvxpy model lands in span{A_j} and on NNLS."""
    X, Z, alpha = problems(4, 5, 7, range(3, 4))[0]
    dx, zq, _ = svm.constraints(X, Z, alpha)
    A = np.einsum("jd,je->jde", dx, zq).reshape(len(dx), -1)  # (m, d*d) rows vec(A_j)
    W = cp.Variable((7, 7))
    cons = [A @ cp.vec(W, order="C") >= 1]
    cp.Problem(cp.Minimize(cp.sum_squares(W)), cons).solve(
        solver="CLARABEL", tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12
    )
    w = W.value.reshape(-1)
    coef, *_ = np.linalg.lstsq(A.T, w, rcond=None)
    assert np.linalg.norm(A.T @ coef - w) <= 1e-6 * np.linalg.norm(w)
    nnls = svm.w_mm(X, Z, alpha, SolverConfig())
    assert corr(nnls.W, W.value) > 1 - 1e-9


def test_reduced_nuclear_space_keeps_constraints_and_never_increases_the_norm():
    """P_U W P_V has the same margins as W and ||P_U W P_V||_* <= ||W||_*, for any W."""
    rng = np.random.default_rng(0)
    X, Z, alpha = problems(3, 4, 9, range(1))[0]
    dx, _, _ = svm.constraints(X, Z, alpha)
    U, V = svm._reduced_basis(dx), svm._reduced_basis(Z)
    assert U.shape[1] <= len(dx) and V.shape[1] <= len(Z)
    for _ in range(20):
        W = rng.standard_normal((9, 9))
        Wr = U @ (U.T @ W @ V) @ V.T
        m_full, m_red = svm.margins_of(W, X, Z, alpha), svm.margins_of(Wr, X, Z, alpha)
        finite = np.isfinite(m_full)
        np.testing.assert_allclose(m_red[finite], m_full[finite], atol=1e-12)
        assert np.linalg.norm(Wr, "nuc") <= np.linalg.norm(W, "nuc") + 1e-12
    # so the full-space nuclear SVM and the reduced one have the same optimum
    Wf = cp.Variable((9, 9))
    a_full = np.einsum("jd,je->jde", dx, svm.constraints(X, Z, alpha)[1]).reshape(len(dx), -1)
    prob = cp.Problem(cp.Minimize(cp.normNuc(Wf)), [a_full @ cp.vec(Wf, order="C") >= 1])
    prob.solve(solver="CLARABEL", tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    red = svm.w_mm_nuc(X, Z, alpha, IPM)
    assert abs(np.linalg.norm(red.W, "nuc") - prob.value) <= 1e-6 * prob.value


def test_pipeline_fast_and_plain_nuclear_agree():
    base = dict(seeds=4, dataset=DatasetConfig(n=5, T=5, d=4))
    for train_ in (False, True):
        fast = run_job(RunConfig(train=train_, solver=IPM, **base)).runs
        plain = run_job(RunConfig(train=train_, solver=CVX, **base)).runs
        for col in ("status", "feasible", "rank_nuc", "rank_fro", "svm_status_nuc"):
            assert fast[col].fillna(-1).tolist() == plain[col].fillna(-1).tolist(), col
        if train_:
            np.testing.assert_allclose(fast.corr_nuc, plain.corr_nuc, atol=1e-6)


@pytest.mark.parametrize("kind", [Parameterization.w, Parameterization.kq])
def test_training_is_batch_invariant(kind):
    """A seed's trajectory is bit-identical alone and in a batch of 50."""
    cfg = DatasetConfig(n=4, T=5, d=6)
    pcfg, ocfg = ParameterizationConfig(kind=kind), OptimizerConfig(steps=60, checkpoint_every=20)
    batch = make_instances(cfg, list(range(50)))
    together = train(batch, make_head(HeadConfig(), batch), pcfg, ocfg)
    for r in (0, 17, 49):
        alone_inst = make_instances(cfg, [r])
        alone = train(alone_inst, make_head(HeadConfig(), alone_inst), pcfg, ocfg)
        assert torch.equal(alone.W[:, 0], together.W[:, r])
        assert torch.equal(alone.grad_norm[:, 0], together.grad_norm[:, r])
        assert torch.equal(alone.final_softmax[0], together.final_softmax[r])


def reference_loss_and_grad_w(W, inst, head):
    """The previous loss_and_grad_w, verbatim except for the padding of exp/sigmoid/softplus."""
    X, Y, Z = inst.X, inst.Y, inst.Z
    n = X.shape[1]
    Wz = torch.matmul(Z, W.transpose(-1, -2))
    a = torch.matmul(X, Wz.unsqueeze(-1)).squeeze(-1)
    s = torch.exp(F.log_softmax(a, dim=-1))
    f = head.output(s)
    margin = Y * f
    loss = sum_last(F.softplus(-margin)) / n
    c = -Y * torch.sigmoid(-margin) / n
    G = c.unsqueeze(-1) * s * head.centred_values(s)
    u = torch.matmul(G.unsqueeze(-2), X).squeeze(-2)
    return loss, s, torch.matmul(u.transpose(-1, -2), Z)


def test_simd_padding_changes_no_bit_where_the_old_code_was_batch_invariant():
    """R*n and R*n*T multiples of 64: the old kernels had no scalar tail, so old == new."""
    inst = make_instances(DatasetConfig(n=4, T=4, d=5), list(range(16)))
    head = make_head(HeadConfig(), inst)
    W = torch.randn(16, 5, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    for _ in range(30):
        new, old = loss_and_grad_w(W, inst, head), reference_loss_and_grad_w(W, inst, head)
        for a, b in zip(new, old, strict=True):
            assert torch.equal(a, b)
        W = W - 2.0 * new[2] / torch.linalg.vector_norm(new[2], dim=(-2, -1))[:, None, None]
    assert new[1].amin() < 1e-12  # reached the saturated regime


def reference_train(inst, head, pcfg, ocfg):
    """The previous train loop, verbatim: every quantity at every step, lists then stack."""
    from attnsvm.train.loop import frob, init_params

    def _step_size(cfg, gnorm):
        if cfg.kind is Optimizer.gd:
            return torch.full_like(gnorm, cfg.lr)
        scale = cfg.lr / (gnorm + cfg.eps)
        return torch.where(gnorm > 0, scale, torch.zeros_like(scale))

    p = init_params(pcfg, inst.seeds, inst.X.shape[-1], inst.X.dtype, inst.X.device)
    every, steps = ocfg.checkpoint_every, ocfg.steps
    rec = {k: [] for k in ("W", "loss", "gnorm", "smax", "smin", "sel")}
    for k in range(steps + 1):
        W = p.attention_matrix()
        loss, s, gW = loss_and_grad_w(W, inst, head)
        if p.W is None:
            gK = torch.matmul(gW, p.Q) + 2 * pcfg.penalty * p.K
            gQ = torch.matmul(gW.transpose(-1, -2), p.K) + 2 * pcfg.penalty * p.Q
            loss = loss + pcfg.penalty * (frob(p.K) ** 2 + frob(p.Q) ** 2)
            nK, nQ = frob(gK), frob(gQ)
            gnorm = torch.sqrt(nK**2 + nQ**2)
        else:
            gnorm = frob(gW)
        if k % every == 0 or k == steps:
            smax = s.max(dim=-1)
            for key, val in zip(
                rec,
                (
                    W.clone(),
                    loss,
                    gnorm,
                    sum_last(smax.values) / smax.values.shape[-1],
                    smax.values.min(-1).values,
                ),
                strict=False,
            ):
                rec[key].append(val)
            rec["sel"].append(smax.indices)
        if k == steps:
            break
        if p.W is None:
            p.K = p.K - _step_size(ocfg, nK)[:, None, None] * gK
            p.Q = p.Q - _step_size(ocfg, nQ)[:, None, None] * gQ
        else:
            p.W = p.W - _step_size(ocfg, gnorm)[:, None, None] * gW
    return {k: torch.stack(v) for k, v in rec.items()}, s


@pytest.mark.parametrize("kind", [Parameterization.w, Parameterization.kq])
@pytest.mark.parametrize("opt", ["ngd", "gd"])
def test_train_is_bit_identical_to_the_previous_loop(kind, opt):
    inst = make_instances(DatasetConfig(n=5, T=6, d=7), list(range(9)))
    head = make_head(HeadConfig(), inst)
    pcfg = ParameterizationConfig(kind=kind)
    ocfg = OptimizerConfig(kind=Optimizer(opt), steps=250, checkpoint_every=40)
    new = train(inst, head, pcfg, ocfg)
    ref, s = reference_train(inst, head, pcfg, ocfg)
    assert new.steps == [0, 40, 80, 120, 160, 200, 240, 250]
    pairs = {
        "W": new.W,
        "loss": new.loss,
        "gnorm": new.grad_norm,
        "smax": new.softmax_max,
        "smin": new.softmax_min_max,
        "sel": new.selected,
    }
    for key, val in pairs.items():
        assert torch.equal(val, ref[key]), key
    assert torch.equal(new.final_softmax, s)


@pytest.mark.parametrize("shape", [(3, 4, 5), (20, 10, 20), (5, 25, 25), (7, 150, 3)], ids=str)
def test_batch_invariant_matmul_sums_in_index_order(shape):
    """Both routes of batchops.matmul (torch's per-matrix loop below NAIVE_LIMIT, rank-one
    accumulation above) sum a_i1 b_1j + a_i2 b_2j + ... in index order: the bits of a plain
    sequential loop, for a batch and for each of its instances alone."""
    r, k, c = shape
    g = torch.Generator().manual_seed(0)
    a = torch.randn(6, r, k, generator=g, dtype=torch.float64)
    b = torch.randn(6, k, c, generator=g, dtype=torch.float64)
    ref = torch.zeros(6, r, c, dtype=torch.float64)
    for j in range(k):  # the sequential sum, one exactly rounded mul and add per term
        ref = ref + a[:, :, j : j + 1] * b[:, j : j + 1, :]
    out = batchops.matmul(a, b)
    assert torch.equal(out, ref)
    assert torch.allclose(out, a @ b, rtol=1e-12, atol=1e-12)
    assert torch.equal(batchops.matmul(a[2:3], b[2:3]), out[2:3])
