"""Prediction heads f_i = phi(X_i^T s_i), seen through what gradient descent needs from them.

A head gives the output f (R, n) and, for the logit gradient, the *centred token values*
``sum_u s_iu (e_it - e_iu)`` where ``e_it = grad phi(xbar_i) . x_it``: then
``df_i/da_it = s_it * sum_u s_iu (e_it - e_iu)``. Written as a softmax-weighted sum of
per-token differences it stays accurate after saturation, whereas the textbook
``e_it - f_i`` loses 40-90 % to cancellation (PAPER.md §6.1).
"""

from __future__ import annotations

import torch

from attnsvm.batchops import dot_last, matmul, sum_last
from attnsvm.config import Head, HeadConfig
from attnsvm.data import Instances


class LinearHead:
    """f_i = v^T X_i^T s_i with the instance's fixed unit vector v (PAPER.md §1)."""

    def __init__(self, inst: Instances):
        self.h = dot_last(inst.X, inst.v[:, None, None, :])  # (R, n, T) h_it = v^T x_it
        self.h_diff = self.h[..., :, None] - self.h[..., None, :]  # (R, n, T, T) h_it - h_iu

    def output(self, s: torch.Tensor) -> torch.Tensor:
        return dot_last(s, self.h)  # (R, n)

    def centred_values(self, s: torch.Tensor) -> torch.Tensor:
        return matmul(self.h_diff, s.unsqueeze(-1)).squeeze(-1)  # (R, n, T)


class ReLUHead:
    """f_i = 1^T ReLU(V^T xbar_i) with the instance's fixed V, ||V||_F = 1 (PAPER.md §1).

    grad phi(xbar) = V 1[V^T xbar > 0], so e_it = sum_j 1[(V^T xbar_i)_j > 0] (V^T x_it)_j.
    """

    def __init__(self, inst: Instances):
        if inst.V is None:
            raise ValueError("head.kind=relu needs a value matrix V: use dataset.generator=relu")
        self.P = matmul(inst.X, inst.V.unsqueeze(1))  # (R, n, T, d) rows (V^T x_it)^T

    def output(self, s: torch.Tensor) -> torch.Tensor:
        pbar = matmul(s.unsqueeze(-2), self.P).squeeze(-2)  # (R, n, d) V^T xbar_i
        return sum_last(torch.relu(pbar))  # (R, n)

    def centred_values(self, s: torch.Tensor) -> torch.Tensor:
        pbar = matmul(s.unsqueeze(-2), self.P).squeeze(-2)  # (R, n, d)
        active = (pbar > 0).to(self.P.dtype)  # (R, n, d) ReLU'
        e = matmul(self.P, active.unsqueeze(-1)).squeeze(-1)  # (R, n, T) e_it
        return _centred(e, s)


class LambdaHead:
    """f_i = v^T xbar_i - lam ||xbar_i||^2 (PAPER.md §1): the quadratic term rewards mixtures.

    grad phi(xbar) = v - 2 lam xbar, so e_it = v^T x_it - 2 lam xbar_i^T x_it.
    """

    def __init__(self, inst: Instances, lam: float):
        self.lam = lam
        self.X = inst.X
        self.h = dot_last(inst.X, inst.v[:, None, None, :])  # (R, n, T) h_it = v^T x_it

    def _xbar(self, s: torch.Tensor) -> torch.Tensor:
        return matmul(s.unsqueeze(-2), self.X).squeeze(-2)  # (R, n, d)

    def output(self, s: torch.Tensor) -> torch.Tensor:
        xbar = self._xbar(s)
        return dot_last(s, self.h) - self.lam * dot_last(xbar, xbar)  # (R, n)

    def centred_values(self, s: torch.Tensor) -> torch.Tensor:
        q = matmul(self.X, self._xbar(s).unsqueeze(-1)).squeeze(-1)  # (R, n, T) xbar^T x_t
        return _centred(self.h, s) - 2 * self.lam * _centred(q, s)


def _centred(e: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
    """sum_u s_iu (e_it - e_iu) (R, n, T), differences taken before weighting (PAPER §6.1)."""
    diff = e[..., :, None] - e[..., None, :]  # (R, n, T, T)
    return matmul(diff, s.unsqueeze(-1)).squeeze(-1)


def make_head(cfg: HeadConfig, inst: Instances):
    """The configured head for a batch of instances."""
    if cfg.kind == Head.linear:
        return LinearHead(inst)
    if cfg.kind == Head.relu:
        return ReLUHead(inst)
    if cfg.kind == Head["lambda"]:
        return LambdaHead(inst, cfg.lam)
    raise NotImplementedError(f"head.kind={cfg.kind.value!r} has no implementation")
