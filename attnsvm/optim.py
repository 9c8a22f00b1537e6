"""Step rules of the torch training engine: ``optimizer.kind`` picks one; yours by import path.

A step rule updates one parameter tensor of the batch (W, or each of K and Q separately: each
factor is normalized by its own gradient norm, PAPER.md §6.2):

    rule = make_optimizer(cfg.optimizer)
    X_new = rule.update(X, G, grad_norm)   # X, G (R, a, b); grad_norm (R,) = ||G|| per seed

Your own: ``optimizer.kind=mylab.optim.make`` with ``make(cfg) -> rule`` (``cfg.kwargs`` its
arguments); it trains with the torch engine (the fused engine implements ngd and gd in C).
"""

from __future__ import annotations

import torch

from attnsvm.config import Optimizer, OptimizerConfig
from attnsvm.plugins import load_object


class NormalizedGD:
    """X - lr G / (||G|| + eps) per seed; a zero gradient takes no step (published NGD)."""

    def __init__(self, cfg: OptimizerConfig):
        self.lr, self.eps = cfg.lr, cfg.eps

    def update(self, X: torch.Tensor, G: torch.Tensor, grad_norm: torch.Tensor) -> torch.Tensor:
        step = torch.where(grad_norm > 0, self.lr / (grad_norm + self.eps), 0.0)
        return X - step[:, None, None] * G


class GD:
    """X - lr G."""

    def __init__(self, cfg: OptimizerConfig):
        self.lr = cfg.lr

    def update(self, X: torch.Tensor, G: torch.Tensor, grad_norm: torch.Tensor) -> torch.Tensor:
        return X - torch.full_like(grad_norm, self.lr)[:, None, None] * G


OPTIMIZERS = {Optimizer.ngd: NormalizedGD, Optimizer.gd: GD}


def make_optimizer(cfg: OptimizerConfig):
    """The configured step rule: a built-in, or your factory's."""
    if cfg.kind in OPTIMIZERS:
        return OPTIMIZERS[cfg.kind](cfg)
    return load_object(cfg.kind, "optimizer.kind")(cfg)
