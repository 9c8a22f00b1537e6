"""Heads: hand-written logit gradients match autograd; the lambda head selects a mixture."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attnsvm.composition import DatasetConfig, Generator
from attnsvm.config import Head, HeadConfig, Optimizer, OptimizerConfig, ParameterizationConfig
from attnsvm.data.generators import accepted_seeds, make_instances, relu_instance
from attnsvm.train.heads import make_head
from attnsvm.train.loop import loss_and_grad_w, train


def _autograd(W, inst, head):
    W = W.clone().requires_grad_(True)
    a = torch.einsum("rntd,rde,rne->rnt", inst.X, W, inst.Z)
    s = torch.softmax(a, dim=-1)
    f = head.output(s)
    loss = F.softplus(-inst.Y * f).mean(-1).sum()
    (g,) = torch.autograd.grad(loss, W)
    return g


CASES = [
    (Generator.random, HeadConfig(kind=Head.linear)),
    (Generator.relu, HeadConfig(kind=Head.relu)),
    (Generator.random, HeadConfig(kind=Head["lambda"], lam=0.7)),
    (Generator.orthonormal, HeadConfig(kind=Head["lambda"], lam=2.0)),
]


@pytest.mark.parametrize("generator,hcfg", CASES, ids=lambda c: getattr(c, "value", str(c)))
def test_gradient_matches_autograd(generator, hcfg):
    dcfg = DatasetConfig(generator=generator, n=3, T=4, d=5)
    inst = make_instances(dcfg, accepted_seeds(dcfg, 1, 4))
    head = make_head(hcfg, inst)
    W = torch.randn(4, 5, 5, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    _, _, grad = loss_and_grad_w(W, inst, head)
    np.testing.assert_allclose(grad.numpy(), _autograd(W, inst, head).numpy(), atol=1e-13)


def test_relu_generator_draw_order_and_skip():
    X, Y, Z, _, V = relu_instance(3, 3, 4, 6)
    g = torch.Generator().manual_seed(3)
    V0 = torch.randn((6, 6), generator=g)
    assert torch.equal(V, V0 / torch.norm(V0))  # V is the first draw
    assert abs(float(torch.norm(V)) - 1) < 1e-6
    dcfg = DatasetConfig(generator=Generator.relu, n=3, T=4, d=6)
    seeds = accepted_seeds(dcfg, 1, 20)
    all_pos = [s for s in range(1, seeds[-1]) if (relu_instance(s, 3, 4, 6)[1] > 0).all()]
    assert all_pos and not set(all_pos) & set(seeds)  # skipped seeds are exactly the all-+1 ones
    assert sorted(seeds + all_pos) == list(range(1, seeds[-1] + 1))
    inst = make_instances(dcfg, seeds)
    relu_scores = inst.Y[..., None] * torch.relu(inst.X @ inst.V[:, None]).sum(-1)
    assert torch.equal(inst.opt, relu_scores.argmax(-1))


def _water_filling(h: np.ndarray, lam: float) -> np.ndarray:
    """argmax over the simplex of h^T s - lam ||s||^2 (orthonormal tokens)."""
    for k in range(len(h), 0, -1):
        top = np.sort(h)[::-1][:k]
        tau = (top.sum() - 2 * lam) / k
        s = np.clip((h - tau) / (2 * lam), 0, None)
        if (s[np.argsort(h)[::-1][:k]] > 0).all():
            return s
    raise AssertionError


def test_lambda_head_selects_a_mixture_on_orthonormal_tokens():
    lam = 0.5
    dcfg = DatasetConfig(generator=Generator.orthonormal, n=2, T=4, d=6)
    inst = make_instances(dcfg, [0, 1])
    head = make_head(HeadConfig(kind=Head["lambda"], lam=lam), inst)
    traj = train(
        inst,
        head,
        ParameterizationConfig(),
        OptimizerConfig(kind=Optimizer.gd, lr=8.0, steps=1000, checkpoint_every=1000),
    )
    s = traj.final_softmax.numpy()
    h = head.h.numpy()
    target = np.stack([[_water_filling(h[r, i], lam) for i in range(2)] for r in range(2)])
    assert ((target > 0.05).sum(-1) >= 2).any()  # the optimum mixes tokens
    np.testing.assert_allclose(s, target, atol=0.03)
    assert ((s > 0.05).sum(-1) >= 2).any()  # and GD finds that mixture


def test_a_head_of_ones_own_trains_with_the_exact_gradient(small_instances):
    """head.kind=head_example.make (tests/head_example.py): the hand-written gradient through
    its centred values equals autograd of its output, and a job runs with it (torch engine)."""
    import torch.nn.functional as F

    import attnsvm
    from attnsvm.config import ConfigError, HeadConfig
    from attnsvm.train.heads import make_head
    from attnsvm.train.loop import loss_and_grad_w, softmax_probs

    inst = small_instances
    head = make_head(HeadConfig(kind="head_example.make", kwargs={"scale": 3.0}), inst)
    W = torch.randn(inst.R, 6, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(4))
    Wa = W.clone().requires_grad_()
    f = head.output(softmax_probs(Wa, inst.X, inst.Z))
    F.softplus(-inst.Y * f).mean(-1).sum().backward()
    _, _, grad = loss_and_grad_w(W, inst, head)
    torch.testing.assert_close(grad, Wa.grad, rtol=1e-10, atol=1e-13)

    cfg = attnsvm.compose(["head.kind=head_example.make", "seeds=2", "optimizer.steps=50"])
    runs = attnsvm.run_job(cfg).runs
    assert set(runs.status) == {"ok"} and set(runs.train_engine) == {"torch"}
    assert set(runs["head"]) == {"head_example.make"}
    with pytest.raises(ConfigError, match="head.kind='head_example.nothere' cannot be imported"):
        attnsvm.compose(["head.kind=head_example.nothere"])
    with pytest.raises(ConfigError, match="engine=fused cannot run here.*head_example.make"):
        attnsvm.compose(["head.kind=head_example.make", "engine=fused"])
