"""Signum, AdamW, learning-rate schedules and minibatches (docs/geometry.md): each update against
a plain reimplementation or torch's own optimizer, each limit resolved by default, minibatches
bit-identical however seeds are batched, bad input refused at composition, and every engine's
gradient at saturation against the stable form computed in 50-digit arithmetic."""

from __future__ import annotations

import mpmath
import numpy as np
import pandas as pd
import pytest
import torch

import attnsvm
import attnsvm.kernel as kernel
from attnsvm.composition import DatasetConfig
from attnsvm.composition.identity import config_hash
from attnsvm.config import ConfigError, OptimizerConfig, ParameterizationConfig
from attnsvm.data.generators import make_instances
from attnsvm.experiments.engine import train_engine
from attnsvm.experiments.gd import limits
from attnsvm.experiments.gd.kkt import linf_ball_residual
from attnsvm.experiments.gd.summary import Columns, closer_line, summary_text
from attnsvm.train.heads import LinearHead
from attnsvm.train.loop import autograd_loss_and_grads, loss_and_grad_w, train
from attnsvm.train.minibatch import Minibatches
from attnsvm.train.state import Params
from attnsvm.train.step_rules import make_optimizer
from bits import assert_tensors_identical

R, D = 3, 4
GEN = torch.Generator().manual_seed(7)
X0 = torch.randn(R, D, D, generator=GEN, dtype=torch.float64)
GS = [torch.randn(R, D, D, generator=GEN, dtype=torch.float64) for _ in range(6)]


def _norm(G):
    return G.flatten(1).norm(dim=-1)


def test_signum_is_sign_of_the_momentum_average():
    rule = make_optimizer(OptimizerConfig(kind="signum", lr=0.01, beta=0.9))
    X, m, want = X0, torch.zeros_like(X0), X0
    for G in GS:
        X = rule.update(X, G, _norm(G))
        m = 0.9 * m + 0.1 * G
        want = want - 0.01 * torch.sign(m)
    torch.testing.assert_close(X, want, rtol=0, atol=1e-15)


def test_adamw_matches_torch_adamw_over_several_steps():
    rule = make_optimizer(OptimizerConfig(kind="adamw", lr=0.01, eps=1e-8, weight_decay=0.5))
    param = X0.clone().requires_grad_(True)
    ref = torch.optim.AdamW([param], lr=0.01, eps=1e-8, weight_decay=0.5, foreach=False)
    X = X0
    for G in GS:
        X = rule.update(X, G, _norm(G))
        param.grad = G.clone()
        ref.step()
    torch.testing.assert_close(X, param.detach(), rtol=1e-14, atol=1e-15)


def test_poly_schedule_sets_lr_t_for_any_rule():
    a, lr = 0.7, 0.1
    rule = make_optimizer(OptimizerConfig(kind="gd", lr=lr, schedule="poly", decay_a=a))
    X, want = X0, X0
    for t, G in enumerate(GS):
        X = rule.update(X, G, _norm(G))
        want = want - lr * (t + 2) ** (-a) * G
    torch.testing.assert_close(X, want, rtol=1e-14, atol=1e-15)
    # Adam under the schedule = torch's Adam with its lr set before every step
    rule = make_optimizer(OptimizerConfig(kind="adam", lr=lr, eps=1e-8, schedule="poly", decay_a=a))
    param = X0.clone().requires_grad_(True)
    ref = torch.optim.Adam([param], lr=lr, eps=1e-8, foreach=False)
    X = X0
    for t, G in enumerate(GS):
        X = rule.update(X, G, _norm(G))
        ref.param_groups[0]["lr"] = lr * (t + 2) ** (-a)
        param.grad = G.clone()
        ref.step()
    torch.testing.assert_close(X, param.detach(), rtol=1e-14, atol=1e-15)


def test_constant_schedule_leaves_the_rule_unwrapped():
    rule = make_optimizer(OptimizerConfig(kind="adam"))
    assert type(rule).__name__ == "Adam"


@pytest.mark.parametrize(
    "kind, overrides",
    [
        ("signum", {}),
        ("adamw", {"weight_decay": 0.1}),
        ("ngd", {"minibatch": 3}),
        ("sign", {"minibatch": 4, "replacement": True, "schedule": "poly"}),
        ("adam", {"minibatch": 2, "schedule": "poly", "decay_a": 0.3}),
    ],
)
def test_seeds_independent_of_their_batch(kind, overrides):
    ds = DatasetConfig()
    pcfg = ParameterizationConfig(init="normal", init_scale=1.0)
    ocfg = OptimizerConfig(kind=kind, steps=40, checkpoint_every=20, lr=0.05, **overrides)
    big = make_instances(ds, list(range(5)))
    t_big = train(big, LinearHead(big), pcfg, ocfg)
    for r in (0, 4):
        alone = make_instances(ds, [r])
        t_alone = train(alone, LinearHead(alone), pcfg, ocfg)
        assert_tensors_identical(t_big.W[:, r], t_alone.W[:, 0], f"{kind}: seed {r}")
        assert_tensors_identical(t_big.grad_norm[:, r], t_alone.grad_norm[:, 0], kind)


def test_minibatch_of_all_n_without_replacement_is_the_full_batch():
    inst = make_instances(DatasetConfig(), [0, 1])
    pcfg = ParameterizationConfig()
    full = train(inst, LinearHead(inst), pcfg, OptimizerConfig(steps=30))
    all_n = train(inst, LinearHead(inst), pcfg, OptimizerConfig(steps=30, minibatch=6))
    assert_tensors_identical(all_n.W, full.W, "B = n")
    some = train(inst, LinearHead(inst), pcfg, OptimizerConfig(steps=30, minibatch=2))
    assert not torch.equal(some.W[-1], full.W[-1])


@pytest.mark.parametrize("replacement", [False, True])
def test_minibatch_weights_count_the_draws(replacement):
    like = torch.zeros(1, dtype=torch.float64)
    cfg = OptimizerConfig(minibatch=3, replacement=replacement)
    w = torch.cat([Minibatches(cfg, [0, 1, 2], 5, like).weights() for _ in range(4)])
    counts = w * 3 / 5
    assert torch.equal(counts, counts.round()) and torch.all(counts.sum(-1) == 3)
    if not replacement:
        assert counts.max() == 1
    seeds = [Minibatches(cfg, [s], 5, like).weights() for s in (0, 1, 2)]
    assert_tensors_identical(torch.cat(seeds), Minibatches(cfg, [0, 1, 2], 5, like).weights(), "")


def test_limits_resolved_by_default():
    own = {k: limits.own_norm(attnsvm.compose([f"optimizer={k}"])) for k in ("sign", "adam")}
    own["signum"] = limits.own_norm(attnsvm.compose(["optimizer=signum"]))
    assert own == {"sign": "max", "adam": "max", "signum": "max"}
    signum = attnsvm.compose(["optimizer=signum"])
    assert signum.optimizer.beta == 0.99 and signum.optimizer.lr == 0.01
    assert "max" in limits.solved_norms(signum)
    from attnsvm.train.step_rules import kkt_ball

    adamw = attnsvm.compose(["optimizer=adamw"])
    assert kkt_ball(adamw.optimizer) == "max" and adamw.optimizer.weight_decay > 0
    assert kkt_ball(signum.optimizer) is None
    assert train_engine(attnsvm.compose(["optimizer.schedule=poly"])).value == "torch"


def test_new_keys_at_their_defaults_keep_the_hash():
    base = config_hash(attnsvm.compose([]))
    same = ["optimizer.beta=0.99", "optimizer.schedule=constant", "optimizer.minibatch=null"]
    assert config_hash(attnsvm.compose(same)) == base
    assert config_hash(attnsvm.compose(["optimizer.minibatch=3"])) != base


@pytest.mark.parametrize(
    "overrides, words",
    [
        (["optimizer.schedule=cosine"], ["optimizer.schedule", "constant, poly"]),
        (["optimizer.schedule=poly", "optimizer.decay_a=0"], ["optimizer.decay_a", "(0, 1]"]),
        (["optimizer.decay_a=0.3"], ["optimizer.decay_a", "optimizer.schedule=poly"]),
        (["optimizer=adamw", "optimizer.weight_decay=0"], ["optimizer.weight_decay", "adamw"]),
        (["optimizer=adam", "optimizer.weight_decay=0.1"], ["optimizer.weight_decay"]),
        (["optimizer=adamw", "parameterization=kq"], ["optimizer.kind=adamw"]),
        (["optimizer=signum", "optimizer.beta=1"], ["optimizer.beta", "[0, 1)"]),
        (["optimizer.minibatch=7"], ["optimizer.minibatch", "[1, 6]", "replacement"]),
        (["optimizer.minibatch=0"], ["optimizer.minibatch", "null or integers >= 1"]),
        (["optimizer.replacement=true"], ["optimizer.replacement", "minibatch"]),
        (
            ["optimizer.minibatch=2", "optimizer.gradient=autograd"],
            ["optimizer.minibatch", "autograd"],
        ),
        (["optimizer.minibatch=2", "engine=fused"], ["engine=fused", "optimizer.minibatch=2"]),
        (["optimizer=polyak", "optimizer.minibatch=2"], ["optimizer.minibatch", "full-batch loss"]),
        (["experiment=multitoken", "optimizer.schedule=poly"], ["optimizer.schedule", "gd"]),
    ],
)
def test_bad_input_fails_at_composition(overrides, words):
    with pytest.raises(ConfigError) as info:
        attnsvm.compose(overrides)
    for word in words:
        assert word in str(info.value), (word, str(info.value))


def test_kkt_residual_known_answers():
    G = torch.tensor([[[1.0, -2.0], [0.5, 0.0]]], dtype=torch.float64)
    lam = 0.5
    vertex = -torch.sign(G) / lam  # the ball's point most against G: a KKT point
    assert float(linf_ball_residual(vertex, G, lam)) == pytest.approx(0, abs=1e-15)
    assert float(linf_ball_residual(torch.zeros_like(G), G, lam)) == 1.0
    assert float(linf_ball_residual(-vertex, G, lam)) == pytest.approx(2.0)
    assert float(linf_ball_residual(vertex, torch.zeros_like(G), lam)) == 0.0
    # outside the ball the gap reads below 0: the violation lambda ||W||_max - 1 counts
    assert float(linf_ball_residual(3 * vertex, G, lam)) == pytest.approx(2.0)


def test_summary_counts_the_seeds_closer_to_the_limit():
    runs = pd.DataFrame(
        {"corr_limit": [0.9, 0.5, np.nan], "corr_fro": [0.8, 0.7, 0.6], "limit": ["m"] * 3}
    )
    (line,) = closer_line(Columns(runs), "max-norm SVM")
    assert "closer to max-norm SVM than to W^mm" in line and "1/3 seeds" in line
    assert closer_line(Columns(runs), "W^mm") == []


# ---- precision at saturation --------------------------------------------------------------
def _mp_gradient(inst, W):
    """dL/dW (d, d) of seed 0 at 50 digits: s_it (h_it - f_i) needs no care there."""
    mpmath.mp.dps = 50
    X, Z, Y, v = (t[0].tolist() for t in (inst.X, inst.Z, inst.Y, inst.v))
    Wm = mpmath.matrix(W[0].tolist())
    n, T, d = len(X), len(X[0]), len(v)
    G = mpmath.zeros(d, d)
    for i in range(n):
        z = mpmath.matrix(Z[i])
        a = [(mpmath.matrix(X[i][t]).T * Wm * z)[0] for t in range(T)]
        top = max(a)
        e = [mpmath.exp(x - top) for x in a]
        s = [x / sum(e) for x in e]
        h = [sum(mpmath.mpf(X[i][t][k]) * v[k] for k in range(d)) for t in range(T)]
        f = sum(s[t] * h[t] for t in range(T))
        c = -Y[i] / (1 + mpmath.exp(Y[i] * f)) / n
        for t in range(T):
            G += c * s[t] * (h[t] - f) * mpmath.matrix(X[i][t]) * z.T
    return np.array(G.tolist(), dtype=float)


def _saturated(scale):
    inst = make_instances(DatasetConfig(n=3, T=4, d=3), [0])
    from attnsvm.config import SolverConfig
    from attnsvm.svm import solve as svm

    sol = svm.w_mm(inst.X[0].numpy(), inst.Z[0].numpy(), inst.opt[0].numpy(), SolverConfig())
    return inst, torch.tensor(scale * sol.W)[None]  # every margin >= scale


def _rel(got, want):
    return float(np.linalg.norm(np.asarray(got) - want) / np.linalg.norm(want))


def test_every_engine_gradient_at_saturation_against_the_stable_form():
    inst, W = _saturated(25.0)
    head = LinearHead(inst)
    _, s, exact = loss_and_grad_w(W, inst, head)
    assert 1 - float(s.max(-1).values.min()) < 1e-8  # saturated
    want = _mp_gradient(inst, W)
    assert _rel(exact[0].numpy(), want) < 1e-10  # torch engine: every rule but fused ngd/gd
    _, _, auto, _ = autograd_loss_and_grads(Params(W=W.clone()), inst, head, None)
    assert _rel(auto["W"][0].numpy(), want) > 1e-6  # the published form: lost to cancellation


def test_fused_engine_gradient_at_saturation_against_the_stable_form():
    """The C kernel (ngd, gd): one gd step of lr 1e12 from a saturated W returns its gradient
    as (W0 - W1) / lr, to a relative 1e-27 / 1e-12 of rounding in W0 (|W0| ~ 25)."""
    if kernel.library() is None:
        pytest.skip("the fused extension is not built here (no C compiler at install)")
    from attnsvm.train.fused import train_fused

    inst, W = _saturated(25.0)
    lr = 1e12
    traj = train_fused(
        inst, LinearHead(inst), ParameterizationConfig(),
        OptimizerConfig(kind="gd", lr=lr, steps=1, checkpoint_every=1), Params(W=W.clone()),
    )  # fmt: skip
    want = _mp_gradient(inst, W)
    assert _rel(((W[0] - traj.W[-1, 0]) / lr).numpy(), want) < 1e-9
    assert float(traj.grad_norm[0, 0]) == pytest.approx(np.linalg.norm(want), rel=1e-12)


def test_signum_and_adamw_jobs_report_against_their_limits():
    short = ["seeds=2", "optimizer.steps=60", "optimizer.checkpoint_every=20"]
    signum = attnsvm.run_job(attnsvm.compose(["optimizer=signum", *short]))
    assert set(signum.runs.limit) == {"max-norm SVM"}
    text = summary_text(signum.runs, 1.0)
    assert "convergence measured against: max-norm SVM" in text
    assert "closer to max-norm SVM than to W^mm (final corr): " in text
    adamw = attnsvm.run_job(
        attnsvm.compose(["optimizer=adamw", "optimizer.weight_decay=1", *short])
    )
    runs, traj = adamw.runs, adamw.trajectory
    assert set(runs.limit) == {"l_inf-ball KKT point"}
    assert {"lam_w_max", "kkt_linf"} <= set(runs) and {"lam_w_max", "kkt_linf"} <= set(traj)
    np.testing.assert_allclose(runs.corr_limit, 1 - runs.kkt_linf)
    assert "final kkt_linf" in summary_text(runs, 1.0)
