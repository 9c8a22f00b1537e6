"""Optimizer geometry <-> SVM norm (docs/math.md#optimizer-geometry-and-the-svm-norm): each step
rule against a plain reimplementation, each SVM norm feasible and optimal against a generic cvxpy
model, the alignment metrics on cases with known answers, and the joint head's gradient."""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest
import torch

import attnsvm
from attnsvm import metrics
from attnsvm.composition import DatasetConfig
from attnsvm.config import ConfigError, OptimizerConfig, ParameterizationConfig, SolverConfig
from attnsvm.data.generators import make_instances
from attnsvm.experiments.engine import train_engine
from attnsvm.svm import norms
from attnsvm.svm import solve as svm
from attnsvm.train.heads import LinearHead
from attnsvm.train.loop import grad_v, loss_and_grads, train
from attnsvm.train.step_rules import make_optimizer
from bits import assert_tensors_identical

R, D = 3, 4
GEN = torch.Generator().manual_seed(5)
X0 = torch.randn(R, D, D, generator=GEN, dtype=torch.float64)
G0 = torch.randn(R, D, D, generator=GEN, dtype=torch.float64)


def _frob(G):
    return G.flatten(1).norm(dim=-1)


def _step(kind, steps=1, **kw):
    rule = make_optimizer(OptimizerConfig(kind=kind, **kw))
    X = X0
    for _ in range(steps):
        X = rule.update(
            X, G0, _frob(G0), **({"loss": torch.full((R,), 0.3)} if kind == "polyak" else {})
        )
    return X


@pytest.mark.parametrize("p", [1.75, 2.0, 3.0])
def test_mirror_descent_is_the_published_formula(p):
    lr, eps = 0.1, 2.220446049250313e-16
    q = p / (p - 1)
    want = []
    for r in range(R):  # one seed at a time, as the published SMD optimizer does
        W, g = X0[r], G0[r]
        prime = torch.sign(W) * W.abs() ** (p - 1) - lr * g / (g.norm(q) + eps)
        want.append(torch.sign(prime) * prime.abs() ** (1 / (p - 1)))
    torch.testing.assert_close(_step("md", p=p), torch.stack(want), rtol=1e-13, atol=1e-15)
    raw = torch.sign(X0) * X0.abs() ** (p - 1) - lr * G0  # normalize=false
    torch.testing.assert_close(
        _step("md", p=p, normalize=False), torch.sign(raw) * raw.abs() ** (1 / (p - 1))
    )


def test_md_with_p_2_is_normalized_gd():
    torch.testing.assert_close(_step("md", p=2.0), _step("ngd"), rtol=1e-13, atol=1e-15)


def test_sign_spectral_polyak_steps():
    torch.testing.assert_close(_step("sign", lr=0.01), X0 - 0.01 * torch.sign(G0))
    U, _, Vh = torch.linalg.svd(G0)
    torch.testing.assert_close(_step("spectral", lr=0.1), X0 - 0.1 * U @ Vh)
    step = 0.3 / _frob(G0) ** 2
    torch.testing.assert_close(_step("polyak", lr=1.0), X0 - step[:, None, None] * G0)


def test_adam_matches_torch_adam_over_several_steps():
    rule = make_optimizer(OptimizerConfig(kind="adam", lr=0.01, eps=1e-8))
    param = X0.clone().requires_grad_(True)
    ref = torch.optim.Adam([param], lr=0.01, betas=(0.9, 0.999), eps=1e-8, foreach=False)
    X = X0
    for k in range(5):
        G = G0 * (1 + k) - 0.3 * k  # a changing gradient
        X = rule.update(X, G, _frob(G))
        param.grad = G.clone()
        ref.step()
    torch.testing.assert_close(X, param.detach(), rtol=1e-14, atol=1e-15)


@pytest.mark.parametrize("kind", ["md", "sign", "adam", "spectral", "polyak"])
def test_new_rules_keep_seeds_independent_of_their_batch(kind):
    ds = DatasetConfig()
    pcfg = ParameterizationConfig(init="normal", init_scale=1.0)
    own = {"p": 3.0} if kind == "md" else {}  # md's potential: a key only md reads
    ocfg = OptimizerConfig(kind=kind, steps=60, checkpoint_every=20, lr=0.05, **own)
    big = make_instances(ds, list(range(7)))
    t_big = train(big, LinearHead(big), pcfg, ocfg)
    for r in (0, 6):
        alone = make_instances(ds, [r])
        t_alone = train(alone, LinearHead(alone), pcfg, ocfg)
        assert_tensors_identical(t_big.W[:, r], t_alone.W[:, 0], f"{kind}: seed {r}")


def test_trained_head_gradient_matches_autograd():
    inst = make_instances(DatasetConfig(n=3, T=4, d=5), [0, 1])
    W = torch.randn(2, 5, 5, generator=GEN, dtype=torch.float64)
    v = torch.randn(2, 5, generator=GEN, dtype=torch.float64).requires_grad_(True)
    loss, s, _, c = loss_and_grads(W, inst, LinearHead(inst, v.detach()))
    head = LinearHead(inst, v)
    f = head.output(s)
    auto = torch.nn.functional.softplus(-inst.Y * f).mean(-1).sum()
    (g,) = torch.autograd.grad(auto, v)
    torch.testing.assert_close(grad_v(inst, s, c), g, rtol=1e-12, atol=1e-14)


# ---- SVM norms: feasible, and optimal against a generic cvxpy model ----------------------
GENERIC = {
    "l1": lambda W: cp.norm(cp.vec(W, order="C"), 1),
    "l1.75": lambda W: cp.pnorm(cp.vec(W, order="C"), 1.75),
    "l2": lambda W: cp.norm(cp.vec(W, order="C"), 2),
    "l3": lambda W: cp.pnorm(cp.vec(W, order="C"), 3),
    "max": lambda W: cp.norm(cp.vec(W, order="C"), "inf"),
    "spectral": cp.sigma_max,
}


@pytest.mark.parametrize("name", list(GENERIC))
def test_norm_svm_is_feasible_and_optimal(name):
    cfg = SolverConfig()
    inst = make_instances(DatasetConfig(n=4, T=5, d=5), [0, 1])
    norm = norms.make_norm(name, cfg)
    for r in range(2):
        X, Z, a = inst.X[r].numpy(), inst.Z[r].numpy(), inst.opt[r].numpy()
        sol = norms.solve_all([norms.Frobenius(), norm], [(X, Z, a)], cfg)[0][norm.name]
        assert sol.status == "optimal", sol.reason
        assert svm.margins_of(sol.W, X, Z, a).min() >= 1 - 1e-8
        W = cp.Variable((5, 5))
        dx, zq, _ = svm.constraints(X, Z, a)
        ref = cp.Problem(cp.Minimize(GENERIC[name](W)), [cp.sum(cp.multiply(dx @ W, zq), 1) >= 1])
        ref.solve(solver="CLARABEL")
        assert norm.value(sol.W) == pytest.approx(ref.value, rel=1e-6)


def test_l2_is_the_frobenius_svm():
    inst = make_instances(DatasetConfig(), [0])
    X, Z, a = inst.X[0].numpy(), inst.Z[0].numpy(), inst.opt[0].numpy()
    sols = norms.solve_all(
        [norms.Frobenius(), norms.make_norm("l2", SolverConfig())], [(X, Z, a)], SolverConfig()
    )[0]
    np.testing.assert_array_equal(sols["l2"].W, sols["fro"].W)


# ---- metrics with known answers ----------------------------------------------------------
def test_bregman_is_zero_when_aligned_and_half_squared_distance_at_p_2():
    a = np.arange(1.0, 5.0).reshape(2, 2)
    B = np.stack([3 * a, -a, np.eye(2)])
    d3 = metrics.bregman(a, B, 3.0)
    assert d3[0] == pytest.approx(0, abs=1e-14) and d3[1] > d3[2] > 0
    d2 = metrics.bregman(a, B, 2.0)
    unit = lambda M: M / np.linalg.norm(M)  # noqa: E731
    assert d2[2] == pytest.approx(0.5 * np.linalg.norm(unit(a) - unit(np.eye(2))) ** 2)


def test_margin_ratio_is_one_at_every_max_margin_direction_only():
    inst = make_instances(DatasetConfig(n=4, T=5, d=5), [0])
    X, Z, a = inst.X[0].numpy(), inst.Z[0].numpy(), inst.opt[0].numpy()
    cfg = SolverConfig()
    norm = norms.make_norm("max", cfg)
    sol = norm.solve([(X, Z, a)], cfg)[0]
    fro = svm.w_mm(X, Z, a, cfg)
    Ws = np.stack([2.5 * sol.W, fro.W])
    least = svm.min_margins(Ws, X, Z, a)
    ratio = metrics.margin_ratio(norms.values(norm, Ws), least, float(norm.value(sol.W)))
    assert ratio[0] == pytest.approx(1, abs=1e-9) and ratio[1] < 1 - 1e-6


def test_rate_is_the_log_log_slope_over_the_last_decades():
    steps = np.arange(0, 10001, 10)
    corr = 1 - 3.0 * np.maximum(steps, 1) ** -0.5
    assert metrics.rate(steps, corr) == pytest.approx(-0.5, abs=1e-9)
    frozen = np.where(steps > 5000, corr[steps == 5000][0], corr)  # gradient underflowed
    assert metrics.rate(steps, frozen) == pytest.approx(-0.5, abs=1e-9)
    assert np.isnan(metrics.rate(steps, np.full(steps.shape, 0.9)))


# ---- composition --------------------------------------------------------------------------
@pytest.mark.parametrize(
    "overrides, words",
    [
        (["optimizer=md", "optimizer.p=1"], ["optimizer.p", "floats > 1 for optimizer=md"]),
        (["solver.norms=[fro,l0.5]"], ["solver.norms", "p >= 1"]),
        (["optimizer=md", "parameterization=kq"], ["optimizer.kind=md", "parameterization=w"]),
        (["optimizer=polyak", "parameterization=kq"], ["optimizer.kind=polyak"]),
        (["experiment=multitoken", "solver.norms=[fro,max]"], ["solver.norms", "experiment=gd"]),
        (["head.train=true", "head=relu", "dataset=relu"], ["head.train", "head.kind=linear"]),
        (["dataset=joint2d", "dataset.d=3"], ["joint2d", "dataset.d=2"]),
        (["optimizer.betas=[0.9,1.5]"], ["optimizer.betas", "[0, 1)"]),
    ],
)
def test_bad_geometry_input_fails_at_composition(overrides, words):
    with pytest.raises(ConfigError) as info:
        attnsvm.compose(overrides)
    for word in words:
        assert word in str(info.value), (word, str(info.value))


def test_new_optimizers_train_with_the_torch_engine():
    cfg = attnsvm.compose(["optimizer=sign", "seeds=1"])
    assert train_engine(cfg).value == "torch"
    with pytest.raises(ConfigError, match="engine=fused cannot run here"):
        attnsvm.compose(["optimizer=adam", "engine=fused"])
    with pytest.raises(ConfigError, match="head.train=true"):
        attnsvm.compose(["head.train=true", "engine=fused"])


def test_loss_floor_is_the_loss_of_the_best_one_hot_attention():
    from attnsvm.train.loop import loss_floor

    inst = make_instances(DatasetConfig(n=3, T=4, d=5), [0, 1])
    best = inst.gamma.max(-1).values  # (R, n): Y_i v^T x_{i opt}
    want = torch.nn.functional.softplus(-best).mean(-1)
    torch.testing.assert_close(loss_floor(inst, LinearHead(inst)), want, rtol=1e-14, atol=0)


def test_an_uncertified_solve_is_retried_once_at_a_looser_tolerance(monkeypatch):
    from attnsvm.svm import cvx

    tols = []

    def fake(problem, cfg):
        tols.append(cfg.tol)
        return ("inaccurate", "almost solved") if len(tols) == 1 else ("optimal", "")

    monkeypatch.setattr(cvx, "solve", fake)
    status, reason = cvx.solve_laddered(None, SolverConfig(tol=1e-10))
    assert status == "optimal" and tols == [1e-10, pytest.approx(1e-8)]
    assert "optimal at tol 1e-08" in reason and "almost solved at tol 1e-10" in reason
    tols.clear()
    monkeypatch.setattr(cvx, "solve", lambda p, c: (tols.append(c.tol), ("inaccurate", "x"))[1])
    assert cvx.solve_laddered(None, SolverConfig())[0] == "inaccurate" and len(tols) == 2
