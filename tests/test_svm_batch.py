"""The batched SVM stage (svm/fro_batch.py, svm.w_mm_batch, norms.solve_spread) against the
reference path: same statuses, the same W to rounding, certified answers, bits independent of
the batch and of the worker count, and no dependence on the data's scale."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnsvm.composition import DatasetConfig
from attnsvm.config import SolverConfig
from attnsvm.data.generators import make_instances
from attnsvm.svm import fro_batch, norms
from attnsvm.svm import solve as svm

CFG = SolverConfig()


def _problems(d: int, seeds: int, n: int = 6, T: int = 8, scale: float = 1.0) -> list:
    inst = make_instances(DatasetConfig(n=n, T=T, d=d), list(range(seeds)))
    X, Z, opt = inst.X.double().numpy(), inst.Z.double().numpy(), inst.opt.numpy()
    return [(scale * X[r], scale * Z[r], opt[r]) for r in range(seeds)]


def _one_minus_corr(a: np.ndarray, b: np.ndarray) -> float:
    return 1 - float(np.sum(a * b) / np.linalg.norm(a) / np.linalg.norm(b))


@pytest.mark.parametrize("d", [2, 3, 4, 6, 10])
def test_batched_frobenius_matches_the_reference_path(d):
    """d = 2, 3: many instances infeasible (G singular); d >= 6: nearly all batched."""
    probs = _problems(d, 40)
    batched = svm.w_mm_batch(probs, CFG)
    reference = [svm.w_mm(*p, CFG) for p in probs]
    assert [s.status for s in batched] == [s.status for s in reference]
    for got, want, (X, Z, alpha) in zip(batched, reference, probs, strict=True):
        if want.ok:
            assert _one_minus_corr(got.W, want.W) < 1e-12
            assert svm.margins_of(got.W, X, Z, alpha).min() >= 1 - CFG.feas_tol
    if d >= 6:
        assert sum(s.path == fro_batch.BATCHED for s in batched) >= 38


def test_batched_answers_are_kkt_points():
    """Every certified instance: u >= 0, s = G u - 1 >= 0, u s = 0 (scaled units)."""
    probs = _problems(10, 16)
    dx, zq = (np.stack([svm.constraints(*p)[c] for p in probs]) for c in (0, 1))
    G = fro_batch.gram(torch.as_tensor(dx), torch.as_tensor(zq))
    Gs = G / G.diagonal(dim1=-2, dim2=-1).amax(-1)[:, None, None]
    u, ended = fro_batch.complementary_points(Gs)
    assert ended.all()
    s = (Gs @ u[:, :, None])[:, :, 0] - 1
    assert u.min() >= 0 and s.min() > -1e-9 and (u * s).abs().max() < 1e-9
    assert fro_batch.certified(Gs, u).all()
    assert not fro_batch.certified(Gs, u * 0.5).any()  # a wrong point fails its certificate


def test_an_instances_bits_do_not_depend_on_its_batch():
    probs = _problems(10, 12)
    dx, zq = (np.stack([svm.constraints(*p)[c] for p in probs]) for c in (0, 1))
    W_all, ok_all = fro_batch.fro_svm_batch(dx, zq)
    W_some, ok_some = fro_batch.fro_svm_batch(dx[3:7], zq[3:7])
    assert ok_all.all() and ok_some.all()
    assert np.array_equal(W_all[3:7], W_some)


@pytest.mark.parametrize("scale", [1e-4, 1e3])
def test_feasibility_does_not_depend_on_the_datas_scale(scale):
    """X and Z x 1e-4 read infeasible where the unscaled instances are feasible (the slack
    was compared with 1e-12 in the Gram matrix's own units)."""
    for d in (3, 10):
        plain, scaled = _problems(d, 20), _problems(d, 20, scale=scale)
        for norm_of in (svm.w_mm, lambda *p: svm.w_mm_batch([p], CFG)[0]):
            a = [norm_of(*p, CFG) if norm_of is svm.w_mm else norm_of(*p) for p in plain]
            b = [norm_of(*p, CFG) if norm_of is svm.w_mm else norm_of(*p) for p in scaled]
            assert [s.status for s in a] == [s.status for s in b]
            for x, y in zip(a, b, strict=True):
                if x.ok:
                    assert _one_minus_corr(x.W, y.W) < 1e-12
    nuc = svm.w_mm_nuc_batch(scaled, CFG)
    assert all(s.status == svm.OPTIMAL for s in nuc if s.status != svm.INFEASIBLE)


def test_infeasible_only_with_a_certificate(monkeypatch):
    """A vanishing slack whose u does not put 0 in the hull is a solver error, not infeasible."""
    X, Z, alpha = _problems(10, 1)[0]
    m = len(svm.constraints(X, Z, alpha)[0])
    one_hot = np.eye(m)[0]  # 0 is far from A_0 alone: no certificate
    monkeypatch.setattr(svm, "least_distance_dual", lambda gram: (one_hot, 0.0))
    sol = svm.w_mm(X, Z, alpha, CFG)
    assert sol.status == svm.SOLVER_ERROR and "certificate" in sol.reason
    monkeypatch.undo()
    sols = [svm.w_mm(*p, CFG) for p in _problems(2, 30)]  # d = 2: most are infeasible
    infeasible = [s for s in sols if s.status == svm.INFEASIBLE]
    assert len(infeasible) > 10 and all("convex hull" in s.reason for s in infeasible)


@pytest.mark.parametrize("names", [None, ["fro", "nuc", "l3", "max"]])
def test_workers_give_the_bits_of_one(names):
    probs = _problems(6, 10) + _problems(3, 6)
    cfg = SolverConfig(norms=names)
    one = norms.solve_spread(lambda: norms.make_norms(cfg), probs, cfg, workers=1)
    two = norms.solve_spread(lambda: norms.make_norms(cfg), probs, cfg, workers=3)
    assert len(one) == len(two) == len(probs)
    for a, b in zip(one, two, strict=True):
        assert list(a) == list(b)
        for name in a:
            assert a[name].status == b[name].status and a[name].path == b[name].path
            assert (a[name].W is None and b[name].W is None) or np.array_equal(a[name].W, b[name].W)


@pytest.mark.slow
def test_against_the_reference_on_2200_seeds():
    """d = 2..12 at (n, T) = (6, 8), 200 seeds each (most infeasible at d = 2, 3): the batched
    Frobenius SVMs against the least-distance dual one seed at a time (statuses identical,
    1 - corr <= 1e-12), and on 10 seeds per d the batched nuclear SVMs against the cvxpy model
    (Clarabel): feasible wherever the Frobenius SVM is, 1 - corr <= 1e-9 where Clarabel
    certifies its own answer."""
    from attnsvm.config.enums import Backend

    clarabel = SolverConfig(backend=Backend.CLARABEL)
    infeasible, checked = 0, 0
    for d in range(2, 13):
        probs = _problems(d, 200)
        batched = svm.w_mm_batch(probs, CFG)
        reference = [svm.w_mm(*p, CFG) for p in probs]
        assert [s.status for s in batched] == [s.status for s in reference], f"d={d}"
        infeasible += sum(s.status == svm.INFEASIBLE for s in reference)
        for got, want in zip(batched, reference, strict=True):
            if want.ok:
                assert _one_minus_corr(got.W, want.W) < 1e-12, f"d={d}"
        some = [k for k in range(10) if batched[k].ok]
        nuc = svm.w_mm_nuc_batch([probs[k] for k in some], CFG, [True] * len(some))
        for k, got in zip(some, nuc, strict=True):
            assert got.status == svm.OPTIMAL, f"d={d} seed {k}: {got.reason}"
            want = svm.w_mm_nuc(*probs[k], clarabel)
            if want.status == svm.OPTIMAL:
                assert _one_minus_corr(got.W, want.W) < 1e-9, f"d={d} seed {k}"
                checked += 1
    assert infeasible > 200 and checked > 50
