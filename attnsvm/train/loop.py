"""Gradient descent on 1-layer softmax attention, all seeds of a batch at once.

Parameters are W (R, d, d), the factors K, Q (R, d, m) with W = K Q^T, or one vector p (R, d)
per seed (the p-model: logits x~_it^T p on the keys x~ = M x, trained as W = p e_1^T with the
one query e_1, ``Instances.p_model_view``). Every operation is
per seed (batched matmuls, reductions over non-seed axes only), so a seed's trajectory is
bit-identical whether it trains alone or in a batch of a thousand. The gradient is written
by hand (docs/math.md#cancellation-after-saturation): autograd's form is mostly rounding error once
the softmax saturates.

    traj = train(inst, head, param_cfg, opt_cfg)   # checkpoints every k steps
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

from attnsvm.config.enums import Engine, Gradient, Init, Loss
from attnsvm.config.schema import OptimizerConfig, ParameterizationConfig
from attnsvm.data.generators import Instances
from attnsvm.kernel.batchops import dot_last, elementwise, matmul, sum_last
from attnsvm.train.heads import LinearHead
from attnsvm.train.minibatch import minibatches
from attnsvm.train.state import (  # noqa: F401  (re-exported: the loop's public names)
    INIT_SEED_OFFSET,
    Params,
    Trajectory,
    checkpoint_steps,
    init_params,
)
from attnsvm.train.step_rules import make_optimizer


def softmax_probs(W: torch.Tensor, X: torch.Tensor, Z: torch.Tensor, mask=None):
    """Scores a_it = x_it^T W z_i and s_i = softmax(a_i), via log-softmax in the input dtype;
    tokens hidden by ``mask`` (R, n, T) (causal attention) get probability exactly 0."""
    Wz = matmul(Z, W.transpose(-1, -2))  # (R, n, d) rows (W z_i)^T
    a = matmul(X, Wz.unsqueeze(-1)).squeeze(-1)  # (R, n, T)
    if mask is not None:
        a = a.masked_fill(~mask, float("-inf"))
    return elementwise(torch.exp, F.log_softmax(a, dim=-1))


def _ones(u: torch.Tensor) -> torch.Tensor:
    return torch.ones_like(u)


# loss -> (l(u), -l'(u)) of the margin u = Y_i f_i, elementwise and batch-invariant
LOSSES = {
    Loss.logistic: (
        lambda u: elementwise(F.softplus, -u),
        lambda u: elementwise(torch.sigmoid, -u),
    ),
    Loss.exponential: (
        lambda u: elementwise(torch.exp, -u),
        lambda u: elementwise(torch.exp, -u),
    ),
    Loss.correlation: (lambda u: -u, _ones),
}


def loss_and_grad_w(
    W: torch.Tensor, inst: Instances, head, with_loss: bool = True, loss=Loss.logistic
):
    """Loss (R,) (None unless ``with_loss``; logistic unless ``loss``), softmax s (R, n, T) and
    dL/dW (R, d, d) for the head's outputs."""
    value, s, grad, _ = loss_and_grads(W, inst, head, with_loss, loss)
    return value, s, grad


def loss_and_grads(
    W: torch.Tensor, inst: Instances, head, with_loss: bool = True, loss=Loss.logistic, weights=None
):
    """``loss_and_grad_w`` and dL/df (R, n), what a trained head's gradient is made of.
    Scores use the keys ``inst.K`` (x~ = M x for the p-model), the head the tokens X.
    ``weights`` (R, n): a minibatch's per-sequence weights on dL/df (attnsvm/train/minibatch.py);
    the loss stays the full batch's."""
    K, Y, Z = inst.K, inst.Y, inst.Z
    n = K.shape[1]
    s = softmax_probs(W, K, Z, getattr(inst, "mask", None))
    f = head.output(s)  # (R, n)
    margin = Y * f
    value, slope = LOSSES[Loss(loss)]
    total = sum_last(value(margin)) / n if with_loss else None  # (R,)
    c = -Y * slope(margin) / n  # (R, n) dL/df_i
    if weights is not None:
        c = c * weights
    G = c.unsqueeze(-1) * s * head.centred_values(s)  # (R, n, T) dL/da_it
    u = matmul(G.unsqueeze(-2), K).squeeze(-2)  # (R, n, d) sum_t G_it x~_it
    grad = matmul(u.transpose(-1, -2), Z)  # (R, d, d) sum_i u_i z_i^T
    return total, s, grad, c


def grad_v(inst: Instances, s: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    """dL/dv (R, d) of the linear head f_i = v^T xbar_i: sum_i c_i xbar_i, xbar_i = X_i^T s_i."""
    xbar = matmul(s.unsqueeze(-2), inst.X).squeeze(-2)  # (R, n, d)
    return matmul(c.unsqueeze(-2), xbar).squeeze(-2)  # (R, d)


def frob(A: torch.Tensor) -> torch.Tensor:
    """Per-seed Frobenius norm of a (R, a, b) batch."""
    flat = A.reshape(A.shape[0], -1)
    return torch.sqrt(dot_last(flat, flat))


def train(
    inst: Instances,
    head,
    pcfg: ParameterizationConfig,
    ocfg: OptimizerConfig,
    params: Params | None = None,
    engine: Engine = Engine.torch,
    threads: int = 1,
    train_head: bool = False,
    loss: Loss = Loss.logistic,
    on_steps: Callable[[int, int], None] | None = None,
) -> Trajectory:
    """Run ``ocfg.steps`` steps of the configured step rule; checkpoint every k steps and at
    the end. ``train_head``: the linear head's v (from ``inst.v``) is trained too, by its own
    instance of the rule (normalized by its own gradient norm). ``loss``: l of (1/n) sum l(Y f).
    The p-model needs ``inst`` in its view (``Instances.p_model_view``). ``on_steps(seeds,
    steps)``: told at every checkpoint that the batch's seeds made that many more steps
    (``attnsvm.progress``); it changes no number.

    ``engine=fused`` hands the whole run to the C kernel (``attnsvm.train.fused``; ``threads``
    groups
    of seeds at once). Here, with torch, loss, penalty and ||grad|| are only formed at
    checkpoints (or every step for a rule that needs the loss), into preallocated buffers.
    """
    if engine == Engine.fused:
        from attnsvm.train.fused import train_fused  # imports this module

        return train_fused(inst, head, pcfg, ocfg, params, threads, on_steps)
    R, n, _, d = inst.X.shape
    if params is None and pcfg.init == Init.published:
        params = Params(p=inst.p0.clone())
    p = params or init_params(pcfg, inst.seeds, d, inst.X.dtype, inst.X.device)
    names = p.names
    rules = {name: make_optimizer(ocfg) for name in names + ["v"] * train_head}
    needs_loss = getattr(rules[names[0]], "needs_loss", False)
    floor = loss_floor(inst, head, loss) if needs_loss and not train_head else 0.0
    v = inst.v.clone() if train_head else None
    ckpts = checkpoint_steps(ocfg.steps, ocfg.checkpoint_every)
    rec = _empty_trajectory(ckpts, R, n, d, inst.X, train_head)
    c, C, told = 0, len(ckpts), 0
    batches = minibatches(ocfg, inst.seeds, n, inst.X)
    for k in range(ocfg.steps + 1):
        at_ckpt = c < C and ckpts[c] == k
        weights = None if batches is None else batches.weights()
        value, s, grads, norms = _step_grads(
            p, inst, head, pcfg, ocfg, loss, v, at_ckpt or needs_loss, weights
        )
        if at_ckpt:
            _record(rec, c, p, value, s, norms, names, v)
            c += 1
            if on_steps is not None and k > told:
                on_steps(R, k - told)
                told = k
        if k == ocfg.steps:
            break
        extra = {"loss": value - floor} if needs_loss else {}
        v = _apply_rules(rules, p, v, grads, norms, extra)
    rec.final_softmax = s
    return rec


def _step_grads(
    p: Params, inst: Instances, head, pcfg, ocfg, loss: Loss, v, full: bool, weights=None
):
    """(value, s, grads, norms) at the current parameters: autograd's, or the hand-written
    gradient (``full``: also the loss and the norms a checkpoint records; ``weights``: a
    minibatch's); with a trained head (``v`` not None) also v's gradient and its norm."""
    if ocfg.gradient == Gradient.autograd:
        return autograd_loss_and_grads(p, inst, head, pcfg, loss, v)
    if v is not None:
        head = LinearHead(inst, v)
    value, s, grads, norms = _loss_and_grads(p, inst, head, pcfg, full, loss, weights)
    if v is not None:
        grads["v"] = grad_v(inst, s, norms.pop("c"))
        norms["v"] = frob(grads["v"].unsqueeze(-1))
    return value, s, grads, norms


def _apply_rules(rules: dict, p: Params, v, grads: dict, norms: dict, extra: dict):
    """One step of every rule on its tensor (p's in place, by attribute); returns the new v."""
    for name, rule in rules.items():
        tensor = v if name == "v" else getattr(p, name)
        new = rule.update(tensor, grads[name], norms[name], **extra)
        if name == "v":
            v = new
        else:
            setattr(p, name, new)
    return v


def loss_floor(inst: Instances, head, loss: Loss = Loss.logistic) -> torch.Tensor:
    """(R,) the loss when every sequence's softmax is one-hot on its best token:
    mean_i min_t l(Y_i f_i(e_t)). Attention can only approach it by saturating; for
    the linear head it is the infimum over W, the optimal value a Polyak step needs (with a
    trained head the infimum is 0)."""
    R, n, T, _ = inst.X.shape
    eye = torch.eye(T, dtype=inst.X.dtype, device=inst.X.device)
    f = torch.stack([head.output(eye[t].expand(R, n, T)) for t in range(T)], -1)  # (R, n, T)
    best = (inst.Y[..., None] * f).max(-1).values  # (R, n)
    return sum_last(LOSSES[Loss(loss)][0](best)) / n


def _empty_trajectory(ckpts, R, n, d, like_t, train_head) -> Trajectory:
    """Preallocated checkpoint buffers."""
    C = len(ckpts)
    like = dict(dtype=like_t.dtype, device=like_t.device)
    return Trajectory(
        steps=ckpts,
        W=torch.empty(C, R, d, d, **like),
        loss=torch.empty(C, R, **like),
        grad_norm=torch.empty(C, R, **like),
        softmax_max=torch.empty(C, R, **like),
        softmax_min_max=torch.empty(C, R, **like),
        selected=torch.empty(C, R, n, dtype=torch.long, device=like_t.device),
        final_softmax=None,
        v=torch.empty(C, R, d, **like) if train_head else None,
    )


def _loss_and_grads(p: Params, inst, head, pcfg, with_loss: bool, kind=Loss.logistic, weights=None):
    """Loss (penalty included for (K,Q)), softmax, gradients and their per-seed norms by
    parameter name ("W", "p", or "K" and "Q"); norms["c"] is dL/df for a trained head."""
    W = p.attention_matrix()
    loss, s, gW, c = loss_and_grads(W, inst, head, with_loss, kind, weights)
    if p.W is not None:
        return loss, s, {"W": gW}, {"W": frob(gW), "c": c}
    if p.p is not None:  # dL/dp = sum_i sum_t G_it x~_it, column 0 of dL/dW (z_i = e_1)
        gp = gW[..., 0].contiguous()
        return loss, s, {"p": gp}, {"p": frob(gp.unsqueeze(-1)), "c": c}
    gK = matmul(gW, p.Q) + 2 * pcfg.penalty * p.K  # chain rule, plus the vanishing penalty
    gQ = matmul(gW.transpose(-1, -2), p.K) + 2 * pcfg.penalty * p.Q
    if with_loss:
        loss = loss + pcfg.penalty * (frob(p.K) ** 2 + frob(p.Q) ** 2)
    return loss, s, {"K": gK, "Q": gQ}, {"K": frob(gK), "Q": frob(gQ), "c": c}


# l(u) as the published notebooks write it, for optimizer.gradient=autograd
NAIVE_LOSSES = {
    Loss.logistic: lambda u: torch.log(1 + torch.exp(-u)),
    Loss.exponential: lambda u: torch.exp(-u),
    Loss.correlation: lambda u: -u,
}


def autograd_loss_and_grads(p: Params, inst, head, pcfg, kind=Loss.logistic, v=None):
    """``_loss_and_grads`` in the published notebooks' form (``optimizer.gradient=autograd``):
    torch.softmax of the scores, the loss as written, differentiated by autograd. After the
    softmax saturates the masked tokens' share of the gradient is lost to cancellation
    (docs/math.md#cancellation-after-saturation); in float32 the gradient becomes exactly 0 and
    normalized GD stops: the freeze of the published pictures. ``v``: a trained linear head's v,
    differentiated too."""
    leaves = {name: getattr(p, name).detach().requires_grad_() for name in p.names}
    if v is not None:
        leaves["v"] = v.detach().requires_grad_()
        head = LinearHead(inst, leaves["v"])
    W = Params(**{k: t for k, t in leaves.items() if k != "v"}).attention_matrix()
    a = torch.einsum("rntd,rde,rne->rnt", inst.K, W, inst.Z)
    if getattr(inst, "mask", None) is not None:
        a = a.masked_fill(~inst.mask, float("-inf"))
    s = torch.softmax(a, dim=-1)
    value = NAIVE_LOSSES[Loss(kind)](inst.Y * head.output(s)).mean(-1)  # (R,)
    if "K" in leaves:
        value = value + pcfg.penalty * (
            leaves["K"].square().sum((1, 2)) + leaves["Q"].square().sum((1, 2))
        )
    grads = dict(zip(leaves, torch.autograd.grad(value.sum(), list(leaves.values())), strict=True))
    norms = {k: frob(g.reshape(g.shape[0], -1, 1)) for k, g in grads.items()}
    return value.detach(), s.detach(), grads, norms


def _record(rec: Trajectory, c: int, p: Params, loss, s, norms, names, v) -> None:
    """Checkpoint c: W, loss, ||grad|| of the attention parameters, softmax statistics."""
    n = s.shape[1]
    gnorm = norms[names[0]] if len(names) == 1 else torch.sqrt(norms["K"] ** 2 + norms["Q"] ** 2)
    smax = s.max(dim=-1)
    rec.W[c] = p.attention_matrix()
    rec.loss[c] = loss
    rec.grad_norm[c] = gnorm
    rec.softmax_max[c] = sum_last(smax.values) / n
    rec.softmax_min_max[c] = smax.values.min(-1).values
    rec.selected[c] = smax.indices
    if v is not None:
        rec.v[c] = v
