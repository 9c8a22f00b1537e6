"""GD: batch invariance, published generator order, and convergence to the SVM directions."""

from __future__ import annotations

import pytest
import torch

from attnsvm.composition import DatasetConfig, RunConfig
from attnsvm.config import Engine, Init, OptimizerConfig, Parameterization, ParameterizationConfig
from attnsvm.data.generators import make_instances, published_instance
from attnsvm.job import run_job
from attnsvm.train.heads import LinearHead
from attnsvm.train.loop import train
from bits import assert_frames_identical, assert_tensors_identical


@pytest.mark.parametrize("engine", [Engine.torch, Engine.fused])
@pytest.mark.parametrize("kind", ["w", "kq"])
@pytest.mark.parametrize("shape", [(6, 8, 10), (5, 5, 25)], ids=str)
def test_seed_trajectory_independent_of_batch(kind, shape, engine):
    """Bit-identical: rounding differences would grow through normalized GD
    (docs/math.md#numerical-traps).
    The fused engine runs the batch on two threads, and each seed alone in a padded group."""
    n, T, d = shape
    ds = DatasetConfig(n=n, T=T, d=d)
    pcfg = ParameterizationConfig(kind=Parameterization(kind))
    ocfg = OptimizerConfig(steps=400, checkpoint_every=10)
    big = make_instances(ds, list(range(23)))
    t_big = train(big, LinearHead(big), pcfg, ocfg, engine=engine, threads=2)
    for r in (0, 11, 22):
        alone = make_instances(ds, [r])
        t_alone = train(alone, LinearHead(alone), pcfg, ocfg, engine=engine)
        for field in ("W", "loss", "grad_norm", "softmax_max", "selected"):
            got, want = getattr(t_big, field)[:, r], getattr(t_alone, field)[:, 0]
            assert_tensors_identical(got, want, f"{field} of seed {r}, batch of 23 vs alone")


def test_job_rows_independent_of_batch_size():
    cfg = dict(dataset=DatasetConfig(n=3, T=4, d=4), seeds=5, optimizer=OptimizerConfig(steps=100))
    a = run_job(RunConfig(batch_size=5, **cfg)).runs
    b = run_job(RunConfig(batch_size=2, **cfg)).runs
    cols = [c for c in a.columns if "seconds" not in c and c != "batch_size"]
    assert_frames_identical(b[cols], a[cols], "runs, batch_size 2 vs 5")


def test_published_generator_draw_order():
    """v, Y, X, Z in that order from one generator, each normalised in float32
    (docs/math.md#the-published-data)."""
    n, T, d = 3, 4, 5
    X, Y, Z, v = published_instance(11, n, T, d)
    g = torch.Generator().manual_seed(11)
    v_ref = torch.randn(d, generator=g)
    y_ref = torch.randn(n, generator=g) > 0
    x_ref = torch.randn((n, T, d), generator=g)
    z_ref = torch.randn((n, d), generator=g)
    assert X.dtype == torch.float32
    assert torch.equal(v, v_ref / v_ref.norm())
    assert torch.equal(Y, torch.where(y_ref, 1.0, -1.0))
    assert torch.equal(X, x_ref / x_ref.norm(dim=-1, keepdim=True))
    assert torch.equal(Z, z_ref / z_ref.norm(dim=-1, keepdim=True))
    # the order matters: drawing X before Y gives another instance
    g = torch.Generator().manual_seed(11)
    torch.randn(d, generator=g)
    assert not torch.equal(torch.randn((n, T, d), generator=g)[0, 0, :n], y_ref.double())


def test_self_attention_queries_are_tokens():
    inst = make_instances(DatasetConfig(n=3, T=4, d=5, attention="self", query_index=2), [0, 1])
    assert torch.equal(inst.Z, inst.X[:, :, 2])


def test_opt_tokens_maximise_scores():
    inst = make_instances(DatasetConfig(), [0, 1, 2])
    h = torch.einsum("rntd,rd->rnt", inst.X, inst.v) * inst.Y[..., None]
    assert torch.equal(inst.opt, h.argmax(-1))


def test_init_options():
    from attnsvm.train.loop import init_params

    z = init_params(ParameterizationConfig(init=Init.zeros), [0], 4, torch.float64, "cpu")
    assert torch.count_nonzero(z.W) == 0
    kq = init_params(
        ParameterizationConfig(kind=Parameterization.kq, init=Init.zeros),
        [0],
        4,
        torch.float64,
        "cpu",
    )
    assert torch.count_nonzero(kq.Q) == 0 and torch.count_nonzero(kq.K) > 0
    t = init_params(ParameterizationConfig(), [0], 4, torch.float64, "cpu")
    assert t.W.abs().max() <= 0.5  # U(-1/sqrt(d), 1/sqrt(d))


@pytest.mark.parametrize(
    ("kind", "column"), [("w", "corr_fro"), ("kq", "corr_nuc")], ids=["W->W^mm", "KQ->W^mm_*"]
)
def test_gd_direction_matches_svm(kind, column):
    """The implicit bias: W-GD -> W^mm_alpha (Frobenius), (K,Q)-GD -> W^mm_*,alpha (nuclear),
    alpha = tokens selected by GD, at the published (6, 8, 10), 2000 steps."""
    runs = run_job(
        RunConfig(seeds=16, parameterization=ParameterizationConfig(kind=Parameterization(kind)))
    ).runs
    assert (runs.status == "ok").all()
    assert (runs[column] > 0.99).mean() >= 0.8
    other = "corr_nuc" if column == "corr_fro" else "corr_fro"
    assert runs[column].mean() > runs[other].mean() + 0.05  # the two biases are distinguishable
    assert (runs.softmax_min > 1 - 1e-6).all()


def test_a_step_rule_of_ones_own_trains_with_the_torch_engine():
    """optimizer.kind=optim_example.make (tests/optim_example.py): the step is the user's,
    the job is the framework's; the fused engine, which implements ngd and gd, is refused."""
    import attnsvm
    from attnsvm.config import ConfigError

    cfg = attnsvm.compose(["optimizer.kind=optim_example.make", "seeds=2", "optimizer.steps=1"])
    ds = cfg.dataset
    inst = make_instances(ds, [0, 1])
    traj = train(inst, LinearHead(inst), cfg.parameterization, cfg.optimizer)
    W0, W1 = traj.W[0], traj.W[-1]
    from attnsvm.train.loop import loss_and_grad_w

    _, _, G = loss_and_grad_w(W0, inst, LinearHead(inst))
    assert torch.equal(W1, W0 - cfg.optimizer.lr * torch.sign(G))
    runs = attnsvm.run_job(cfg).runs
    assert set(runs.train_engine) == {"torch"} and set(runs.optimizer) == {"optim_example.make"}
    with pytest.raises(ConfigError, match="engine=fused cannot run here.*optim_example.make"):
        attnsvm.compose(["optimizer.kind=optim_example.make", "engine=fused"])
