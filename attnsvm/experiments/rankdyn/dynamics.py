"""Plain or normalized GD on (K, Q) or the merged W from a small start, all seeds at once,
recording the whole K Q^T at log-spaced checkpoints (the plateaus span decades of steps).

attnsvm's training loop records every k steps and never returns K and Q, so this is a small
loop of its own over the house's pieces: the cancellation-free dL/dW of ``train.loss_and_grads``
(logistic loss, the fixed linear head), the chain rule to K and Q with the paper's vanishing
penalty, and the step rules of ``attnsvm.train.step_rules`` (NGD normalizes each factor by its
own norm).
Every op is per seed (``batchops``), so a seed's numbers never depend on its batch mates.

    rec = train_rank(inst, head, cfg)      # cfg: rankdyn Config
    rec.W                                  # (C, R, d, d) K Q^T at rec.steps
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from attnsvm.config.schema import OptimizerConfig
from attnsvm.data.generators import Instances
from attnsvm.kernel.batchops import matmul, sum_last
from attnsvm.train.loop import INIT_SEED_OFFSET, frob, loss_and_grad_w
from attnsvm.train.step_rules import make_optimizer

from .config import Config, Param


def checkpoint_steps(steps: int, count: int) -> list[int]:
    """Step 0 and ``count`` log-spaced steps in [1, steps] (rounded, without repeats)."""
    logs = np.geomspace(1, steps, count)
    return sorted({0, steps} | {int(round(x)) for x in logs})


def unit_factors(seeds: list[int], d: int, m: int, dtype, device) -> tuple[torch.Tensor, ...]:
    """(K, Q) at alpha = 1, each (R, d, m): N(0, 1) entries drawn in float32 from the stream
    ``seed + INIT_SEED_OFFSET`` (Q first, then K, as attnsvm's ``init=normal`` draws them)."""
    Ks, Qs = [], []
    for seed in seeds:
        g = torch.Generator().manual_seed(seed + INIT_SEED_OFFSET)
        Qs.append(torch.randn((d, m), generator=g))
        Ks.append(torch.randn((d, m), generator=g))
    return tuple(torch.stack(t).to(dtype=dtype, device=device) for t in (Ks, Qs))


def init_state(cfg: Config, seeds: list[int], dtype, device) -> dict[str, torch.Tensor]:
    """The start: K, Q = alpha * (unit draws), scaled in the run's dtype (so K(alpha) is
    exactly alpha * K(1)); the merged control starts at the same matrix W(0) = K(0) Q(0)^T."""
    K1, Q1 = unit_factors(seeds, cfg.d, cfg.width, dtype, device)
    K, Q = cfg.alpha * K1, cfg.alpha * Q1
    if cfg.parameterization == Param.w:
        return {"W": matmul(K, Q.transpose(-1, -2)).contiguous()}  # (R, d, d)
    return {"K": K.contiguous(), "Q": Q.contiguous()}


def attention(state: dict[str, torch.Tensor]) -> torch.Tensor:
    """W (R, d, d): the merged matrix or K Q^T."""
    if "W" in state:
        return state["W"]
    return matmul(state["K"], state["Q"].transpose(-1, -2))


def loss_and_grads(state, inst: Instances, head, penalty: float, with_loss: bool):
    """Loss (R,) or None, softmax (R, n, T), and {name: dL/dname} of the trained tensors.
    For (K, Q): dL/dK = G Q + 2 lambda K, dL/dQ = G^T K + 2 lambda Q with G = dL/dW; the
    loss is the data loss (the penalty, ~1e-16 |K|^2, is left out of the record)."""
    W = attention(state)
    loss, s, G = loss_and_grad_w(W, inst, head, with_loss)  # G (R, d, d)
    if "W" in state:
        return loss, s, {"W": G}
    K, Q = state["K"], state["Q"]
    gK = matmul(G, Q) + 2 * penalty * K  # (R, d, m)
    gQ = matmul(G.transpose(-1, -2), K) + 2 * penalty * Q  # (R, d, m)
    return loss, s, {"K": gK, "Q": gQ}


@dataclass
class Record:
    """Checkpoints of one batch: index c is step ``steps[c]``."""

    steps: list[int]
    W: torch.Tensor  # (C, R, d, d) K Q^T (or W)
    loss: torch.Tensor  # (C, R) logistic loss
    grad_norm: torch.Tensor  # (C, R) sqrt of the sum of the trained tensors' |grad|^2
    softmax_max: torch.Tensor  # (C, R) mean_i max_t s_it
    selected: torch.Tensor  # (R, n) argmax_t s_it at the last step


def train_rank(inst: Instances, head, cfg: Config) -> Record:
    """Run ``cfg.steps`` steps of ``cfg.rule`` from ``init_state``; record at the checkpoints."""
    R, n, _, d = inst.X.shape
    like = dict(dtype=inst.X.dtype, device=inst.X.device)
    state = init_state(cfg, inst.seeds, **like)
    ocfg = OptimizerConfig(kind=cfg.rule.value, lr=cfg.step_size, eps=cfg.eps)
    rules = {name: make_optimizer(ocfg) for name in state}
    ckpts = checkpoint_steps(cfg.steps, cfg.checkpoints)
    C = len(ckpts)
    rec = Record(ckpts, torch.empty(C, R, d, d, **like), torch.empty(C, R, **like),
                 torch.empty(C, R, **like), torch.empty(C, R, **like), None)  # fmt: skip
    c = 0
    for k in range(cfg.steps + 1):
        at_ckpt = ckpts[c] == k
        loss, s, grads = loss_and_grads(state, inst, head, cfg.penalty, at_ckpt)
        norms = {name: frob(g) for name, g in grads.items()}  # (R,) each
        if at_ckpt:
            rec.W[c] = attention(state)
            rec.loss[c] = loss
            rec.grad_norm[c] = torch.sqrt(sum(v**2 for v in norms.values()))
            rec.softmax_max[c] = sum_last(s.max(-1).values) / n
            c += 1
        if k == cfg.steps:
            break
        state = {name: rules[name].update(t, grads[name], norms[name]) for name, t in state.items()}
    rec.selected = s.argmax(-1)
    return rec
