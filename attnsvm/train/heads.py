"""Prediction heads f_i = phi(X_i^T s_i), seen through what gradient descent needs from them.

A head gives the output f (R, n) and, for the logit gradient, the *centred token values*
``sum_u s_iu (e_it - e_iu)`` where ``e_it = grad phi(xbar_i) . x_it``: then
``df_i/da_it = s_it * sum_u s_iu (e_it - e_iu)``. Written as a softmax-weighted sum of
per-token differences it stays accurate after saturation, whereas the textbook
``e_it - f_i`` loses 40-90 % to cancellation (docs/math.md#cancellation-after-saturation).
"""

from __future__ import annotations

import torch

from attnsvm.config.enums import Head
from attnsvm.config.plugins import load_object
from attnsvm.config.schema import HeadConfig
from attnsvm.data.generators import Instances
from attnsvm.kernel.batchops import dot_last, matmul, sum_last


class LinearHead:
    """f_i = v^T X_i^T s_i with the instance's fixed unit vector v (docs/math.md#the-model), or
    ``v`` (R, d) given (a head being trained, head.train=true)."""

    def __init__(self, inst: Instances, v: torch.Tensor | None = None):
        v = inst.v if v is None else v
        self.h = dot_last(inst.X, v[:, None, None, :])  # (R, n, T) h_it = v^T x_it
        self.h_diff = self.h[..., :, None] - self.h[..., None, :]  # (R, n, T, T) h_it - h_iu

    def output(self, s: torch.Tensor) -> torch.Tensor:
        return dot_last(s, self.h)  # (R, n)

    def centred_values(self, s: torch.Tensor) -> torch.Tensor:
        return matmul(self.h_diff, s.unsqueeze(-1)).squeeze(-1)  # (R, n, T)

    def fused_values(self) -> tuple[torch.Tensor, bool]:
        """For the C engine: the token values h_it = v^T x_it, no ReLU."""
        return self.h, False


class ReLUHead:
    """f_i = 1^T ReLU(V^T xbar_i) with the instance's fixed V, ||V||_F = 1.

    grad phi(xbar) = V 1[V^T xbar > 0], so e_it = sum_j 1[(V^T xbar_i)_j > 0] (V^T x_it)_j.
    """

    def __init__(self, inst: Instances):
        if inst.V is None:
            raise ValueError("head.kind=relu needs a value matrix V: a data set that gives one")
        self.P = matmul(inst.X, inst.V.unsqueeze(1))  # (R, n, T, d) rows (V^T x_it)^T

    def output(self, s: torch.Tensor) -> torch.Tensor:
        pbar = matmul(s.unsqueeze(-2), self.P).squeeze(-2)  # (R, n, d) V^T xbar_i
        return sum_last(torch.relu(pbar))  # (R, n)

    def centred_values(self, s: torch.Tensor) -> torch.Tensor:
        pbar = matmul(s.unsqueeze(-2), self.P).squeeze(-2)  # (R, n, d)
        active = (pbar > 0).to(self.P.dtype)  # (R, n, d) ReLU'
        e = matmul(self.P, active.unsqueeze(-1)).squeeze(-1)  # (R, n, T) e_it
        return _centred(e, s)

    def fused_values(self) -> tuple[torch.Tensor, bool]:
        """For the C engine: the token value rows V^T x_it, through a ReLU."""
        return self.P, True


class LambdaHead:
    """f_i = v^T xbar_i - lam ||xbar_i||^2: the quadratic term rewards mixtures.

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
    """sum_u s_iu (e_it - e_iu) (R, n, T), differences taken before weighting
    (docs/math.md#cancellation-after-saturation)."""
    diff = e[..., :, None] - e[..., None, :]  # (R, n, T, T)
    return matmul(diff, s.unsqueeze(-1)).squeeze(-1)


# built-in heads by name; your own: head.kind="module:make", make(inst, cfg) -> a head
HEADS = {
    Head.linear: lambda inst, cfg: LinearHead(inst),
    Head.relu: lambda inst, cfg: ReLUHead(inst),
    Head["lambda"]: lambda inst, cfg: LambdaHead(inst, cfg.lam),
}


def make_head(cfg: HeadConfig, inst: Instances):
    """The configured head for a batch of instances: a built-in, or your factory's head.

    A head has ``output(s)`` (R, n) and ``centred_values(s)`` (R, n, T), the softmax-weighted
    differences sum_u s_iu (e_it - e_iu) of e_it = grad phi(xbar_i) . x_it (module docstring);
    ``fused_values()`` (token values and whether they pass a ReLU) lets the C engine train it.
    """
    if cfg.kind in HEADS:
        return HEADS[cfg.kind](inst, cfg)
    return load_object(cfg.kind, "head.kind")(inst, cfg)
