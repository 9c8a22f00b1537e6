"""A step rule whose limit is a KKT point, not an SVM (``kkt_ball`` in
attnsvm/train/step_rules.py): AdamW with decoupled decay lambda reaches, where full-batch AdamW
converges, a KKT point of min L(W) s.t. ||W||_max <= 1/lambda (Xie & Li 2024).

Per checkpoint it is measured by ``lam_w_max`` = lambda ||W||_max (<= 1 inside the ball, 1 on
its boundary) and ``kkt_linf``, the larger of the Frank-Wolfe gap of the problem over its
largest value and the ball's violation:

    gap      = max_{||V||_max <= 1/lambda} <G, W - V> / (||G||_1 / lambda)
             = 1 + lambda <G, W> / ||G||_1,     G = dL/dW (full batch),
    kkt_linf = max(|gap|, lambda ||W||_max - 1),

0 exactly at a KKT point (W in the ball and -G in its normal cone at W); inside the ball the
gap lies in [0, 2] and is the residual; outside it the gap can fall below 0, so the violation
counts instead. Scale-free (a vanishing gradient does not read as converged); the gap is 0
where G = 0.
"""

from __future__ import annotations

import numpy as np
import torch

from attnsvm.config.enums import Parameterization
from attnsvm.train.heads import make_head
from attnsvm.train.loop import loss_and_grad_w
from attnsvm.train.step_rules import kkt_ball

LABEL = "l_inf-ball KKT point"


def linf_ball_residual(W: torch.Tensor, G: torch.Tensor, lam: float) -> torch.Tensor:
    """(...) kkt_linf of W, G (..., d, d) for the ball ||W||_max <= 1/lam (module docstring)."""
    g1 = G.abs().flatten(-2).sum(-1)
    inner = (G * W).flatten(-2).sum(-1)
    safe = torch.where(g1 > 0, g1, torch.ones_like(g1))
    gap = torch.where(g1 > 0, 1 + lam * inner / safe, torch.zeros_like(g1))
    return torch.maximum(gap.abs(), lam * W.abs().flatten(-2).max(-1).values - 1)


RESIDUALS = {"max": linf_ball_residual}  # the ball's norm -> its KKT residual


def kkt_curves(cfg, inst, traj) -> dict[str, np.ndarray]:
    """(C, R) ``lam_w_max`` and ``kkt_linf`` per checkpoint where the step rule's limit is a
    KKT point (W-parameterization, fixed head: the problem is in W); {} otherwise."""
    ball = kkt_ball(cfg.optimizer)
    if ball is None or cfg.parameterization.kind != Parameterization.w or cfg.head.train:
        return {}
    lam = cfg.optimizer.weight_decay
    head = make_head(cfg.head, inst)
    W = traj.W  # (C, R, d, d)
    G = torch.stack([loss_and_grad_w(W[c], inst, head, False, cfg.loss)[2] for c in range(len(W))])
    return {
        "lam_w_max": (lam * W.abs().flatten(-2).max(-1).values).numpy(),
        "kkt_linf": RESIDUALS[ball](W, G, lam).numpy(),
    }
