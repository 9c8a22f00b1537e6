"""Training of next-token prediction, batched over seeds (docs/math.md#next-token-prediction).

Scores a_it = x_it^T W z_i with z_i = x_iT (the last token), s_i = softmax_t(a_i) over the
positions a mask keeps (all of them for W, the label's SCC for the finite part W^fin). Losses:

* ``nll``:  L = -(1/n) sum_i log yhat_{i y_i}, yhat_ik = sum_{t: id(t)=k} s_it (ids are distinct
  in a sequence, so yhat at the label is s at its position);
* ``lsq2``: h_ik = e_k^T X_i^T s_i, pi_i = softmax_k(h_i), L = (1/n) sum_i (1 - pi_{i y_i})^2.

Gradients are written out, not left to autograd, in the forms that stay accurate after the
softmax saturates (docs/math.md#cancellation-after-saturation): 1 - s_iy as sum_{t != y} s_it, and
s_t (g_t - sum_u s_u g_u) as s_t sum_u s_u (g_t - g_u). Every product and reduction goes through
``batchops``, so a seed's numbers never depend on its batch mates. W (or K, Q with W = K Q^T, each
factor normalized by its own gradient norm) and W^fin (W-parameterized, from zero, on the reduced
sequences) step together."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from attnsvm.config.enums import Optimizer, Parameterization
from attnsvm.config.schema import OptimizerConfig
from attnsvm.kernel import batchops

from .config import NexttokenLoss


@dataclass
class Problem:
    """One batch of instances as tensors; ``mask``/``weight`` pick positions and sequences."""

    X: torch.Tensor  # (R, n, T, d) token embeddings
    Z: torch.Tensor  # (R, n, d) queries (last tokens)
    G: torch.Tensor  # (R, n, T, K) e_k . x_it (the lsq2 classifier's logits per token)
    pos: torch.Tensor  # (R, n) position of the label
    label: torch.Tensor  # (R, n) label id
    mask: torch.Tensor  # (R, n, T) bool: positions the softmax sees
    weight: torch.Tensor  # (R, n) 1/n for the sequences in the loss, else 0


def problem(E: np.ndarray, ids: np.ndarray, labels: np.ndarray, mask=None, rows=None) -> Problem:
    """Tensors of instances E (R, K, d), ids (R, n, T), labels (R, n); optional masks."""
    R, n, T = ids.shape
    Et = torch.from_numpy(E)
    idx = torch.from_numpy(ids)
    X = Et[torch.arange(R)[:, None, None], idx]  # (R, n, T, d)
    G = batchops.matmul(X.reshape(R, n * T, -1), Et.transpose(1, 2)).reshape(R, n, T, -1)
    lab = torch.from_numpy(labels)
    pos = (idx == lab[..., None]).int().argmax(-1)
    mask = torch.ones(R, n, T, dtype=torch.bool) if mask is None else torch.from_numpy(mask)
    rows = torch.ones(R, n, dtype=torch.bool) if rows is None else torch.from_numpy(rows)
    weight = rows.double() / n
    return Problem(X, X[:, :, -1], G, pos, lab, mask, weight)


def _softmax(a: torch.Tensor, mask: torch.Tensor):
    """Masked softmax (R, n, T) and log of its normaliser (relative to the max)."""
    a = a.masked_fill(~mask, -torch.inf)
    top = a.amax(-1, keepdim=True)
    e = batchops.elementwise(torch.exp, a - top)
    tot = batchops.sum_last(e)
    return e / tot[..., None], batchops.elementwise(torch.log, tot) + top[..., 0]


def scores(p: Problem, W: torch.Tensor) -> torch.Tensor:
    """a_it = x_it^T W z_i (R, n, T)."""
    Wz = batchops.matmul(p.Z, W.transpose(1, 2))  # (R, n, d): W z_i
    return batchops.matmul(p.X, Wz[..., None])[..., 0]


def _others(s: torch.Tensor, onehot: torch.Tensor) -> torch.Tensor:
    """sum over the non-hot entries: 1 - s_hot without cancellation."""
    return batchops.sum_last(s.masked_fill(onehot, 0.0))


def _dlogits(loss: NexttokenLoss, p: Problem, a: torch.Tensor):
    """(dL/da (R, n, T), L (R,), s (R, n, T))."""
    s, lse = _softmax(a, p.mask)
    hot = torch.nn.functional.one_hot(p.pos, a.shape[-1]).bool()
    w = p.weight[..., None]
    if loss == NexttokenLoss.nll:
        a_y = a.gather(-1, p.pos[..., None])[..., 0]
        L = batchops.sum_last(p.weight * (lse - a_y))
        return w * torch.where(hot, -_others(s, hot)[..., None], s), L, s
    h = batchops.matmul(s[..., None, :], p.G)[..., 0, :]  # (R, n, K)
    pi, _ = _softmax(h, torch.ones_like(h, dtype=torch.bool))
    khot = torch.nn.functional.one_hot(p.label, h.shape[-1]).bool()
    miss = _others(pi, khot)  # 1 - pi_y
    pi_y = pi.gather(-1, p.label[..., None])[..., 0]
    L = batchops.sum_last(p.weight * miss * miss)
    # dL/dh_k = -2 (1 - pi_y) pi_y (delta_ky - pi_k)
    dh = -2 * (miss * pi_y)[..., None] * torch.where(khot, miss[..., None], -pi)
    ds = batchops.matmul(dh[..., None, :], p.G.transpose(-1, -2))[..., 0, :]  # (R, n, T)
    diff = ds[..., :, None] - ds[..., None, :]  # (R, n, T, T)
    da = s * batchops.matmul(diff, s[..., None])[..., 0]
    return w * da, L, s


def grad_W(loss: NexttokenLoss, p: Problem, W: torch.Tensor):
    """(dL/dW (R, d, d), L (R,), s (R, n, T))."""
    ga, L, s = _dlogits(loss, p, scores(p, W))
    xg = batchops.matmul(ga[..., None, :], p.X)[..., 0, :]  # (R, n, d) sum_t g_it x_it
    return batchops.matmul(xg.transpose(1, 2), p.Z), L, s


def _norm(g: torch.Tensor) -> torch.Tensor:
    return torch.sqrt(batchops.sum_last(g.reshape(g.shape[0], -1) ** 2))


def _step(P: torch.Tensor, g: torch.Tensor, cfg: OptimizerConfig) -> torch.Tensor:
    if cfg.kind == Optimizer.gd:
        return P - cfg.lr * g
    nrm = _norm(g)[:, None, None]
    safe = torch.where(nrm > 0, nrm + cfg.eps, torch.ones_like(nrm))
    return P - cfg.lr * torch.where(nrm > 0, g / safe, torch.zeros_like(g))


@dataclass
class NTTrajectory:
    steps: np.ndarray  # (C,)
    W: np.ndarray  # (C, R, d, d) the attention weights (K Q^T for (K,Q))
    W_fin: np.ndarray  # (C, R, d, d)
    loss: np.ndarray  # (C, R)
    grad_norm: np.ndarray  # (C, R)
    s: np.ndarray  # (R, n, T) final softmax


def checkpoints(steps: int, every: int) -> list[int]:
    return sorted(set(range(0, steps + 1, every)) | {steps})


def train(p, p_fin, W0, K0, kind, loss: NexttokenLoss, opt: OptimizerConfig, penalty: float):
    """GD/NGD from W0 (or Q(0) = W0, K(0) = K0), and W^fin from zero, all seeds at once."""
    kq = kind == Parameterization.kq
    Wt, Qt, Kt = torch.from_numpy(W0).clone(), torch.from_numpy(W0).clone(), torch.from_numpy(K0)
    Wf = torch.zeros_like(Wt)
    marks = set(checkpoints(opt.steps, opt.checkpoint_every))
    out = {k: [] for k in ("W", "W_fin", "loss", "grad_norm")}
    for step in range(opt.steps + 1):
        W = batchops.matmul(Kt, Qt.transpose(1, 2)) if kq else Wt
        g, L, s = grad_W(loss, p, W)
        if step in marks:
            for key, val in (("W", W), ("W_fin", Wf), ("loss", L), ("grad_norm", _norm(g))):
                out[key].append(val.clone())
        if step == opt.steps:
            break
        if kq:
            gK = batchops.matmul(g, Qt) + 2 * penalty * Kt
            gQ = batchops.matmul(g.transpose(1, 2), Kt) + 2 * penalty * Qt
            Kt, Qt = _step(Kt, gK, opt), _step(Qt, gQ, opt)
        else:
            Wt = _step(Wt, g, opt)
        Wf = _step(Wf, grad_W(loss, p_fin, Wf)[0], opt)
    return NTTrajectory(
        steps=np.array(sorted(marks)),
        **{k: torch.stack(v).numpy() for k, v in out.items()},
        s=s.numpy(),
    )
