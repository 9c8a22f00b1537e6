"""The hand-written gradient equals autograd, and stays accurate after saturation
(docs/math.md#cancellation-after-saturation)."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from attnsvm.composition import DatasetConfig
from attnsvm.config import OptimizerConfig, ParameterizationConfig
from attnsvm.data.generators import make_instances
from attnsvm.train.heads import LinearHead
from attnsvm.train.loop import loss_and_grad_w, train


def autograd_loss(W, inst):
    s = torch.softmax(torch.einsum("rntd,rde,rne->rnt", inst.X, W, inst.Z), dim=-1)
    f = torch.einsum("rnt,rntd,rd->rn", s, inst.X, inst.v)
    return F.softplus(-inst.Y * f).mean(-1).sum()


def test_grad_w_matches_autograd(small_instances):
    inst = small_instances
    W = torch.randn(inst.R, 6, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    Wa = W.clone().requires_grad_()
    autograd_loss(Wa, inst).backward()
    loss, _, grad = loss_and_grad_w(W, inst, LinearHead(inst))
    torch.testing.assert_close(grad, Wa.grad, rtol=1e-12, atol=1e-14)
    torch.testing.assert_close(loss.sum(), autograd_loss(W, inst), rtol=1e-13, atol=0)


def test_kq_factor_gradients_match_autograd(small_instances):
    inst = small_instances
    g = torch.Generator().manual_seed(2)
    K = torch.randn(inst.R, 6, 4, dtype=torch.float64, generator=g)
    Q = torch.randn(inst.R, 6, 4, dtype=torch.float64, generator=g)
    Ka, Qa = K.clone().requires_grad_(), Q.clone().requires_grad_()
    autograd_loss(Ka @ Qa.transpose(-1, -2), inst).backward()
    _, _, gW = loss_and_grad_w(K @ Q.transpose(-1, -2), inst, LinearHead(inst))
    torch.testing.assert_close(gW @ Q, Ka.grad, rtol=1e-12, atol=1e-14)
    torch.testing.assert_close(gW.transpose(-1, -2) @ K, Qa.grad, rtol=1e-12, atol=1e-14)


def _naive_grad_longdouble(W, X, Z, Y, v):
    """Textbook gradient (h_it - f_i) in 80-bit extended precision: a reference after saturation."""
    ld = np.longdouble
    W, X, Z, Y, v = (np.asarray(t, dtype=ld) for t in (W, X, Z, Y, v))
    a = np.einsum("ntd,de,ne->nt", X, W, Z)
    a = a - a.max(-1, keepdims=True)
    s = np.exp(a) / np.exp(a).sum(-1, keepdims=True)
    h = X @ v
    f = (s * h).sum(-1)
    c = -Y / (1 + np.exp(Y * f)) / len(Y)
    G = c[:, None] * s * (h - f[:, None])
    return np.einsum("nt,ntd,ne->de", G, X, Z)


def test_stable_gradient_after_saturation():
    """At a saturated iterate the stable form agrees with an extended-precision reference far
    better than the usual form computed in float64 does."""
    inst = make_instances(DatasetConfig(n=6, T=8, d=10), [0])
    traj = train(
        inst,
        LinearHead(inst),
        ParameterizationConfig(),
        OptimizerConfig(steps=1500, checkpoint_every=1500),
    )
    W = traj.final_W
    assert traj.softmax_min_max[-1, 0] > 1 - 1e-10  # saturated
    _, _, grad = loss_and_grad_w(W, inst, LinearHead(inst))
    args = (
        W[0].numpy(),
        inst.X[0].numpy(),
        inst.Z[0].numpy(),
        inst.Y[0].numpy(),
        inst.v[0].numpy(),
    )
    ref = _naive_grad_longdouble(*args).astype(np.float64)
    W64 = W.clone().requires_grad_()
    autograd_loss(W64, inst).backward()
    err_stable = np.linalg.norm(grad[0].numpy() - ref) / np.linalg.norm(ref)
    err_usual = np.linalg.norm(W64.grad[0].numpy() - ref) / np.linalg.norm(ref)
    assert err_stable < 1e-3
    assert err_usual > 10 * err_stable
