"""Prediction heads f_i = phi(X_i^T s_i), seen through what gradient descent needs from them.

A head gives the output f (R, n) and, for the logit gradient, the *centred token values*
``sum_u s_iu (e_it - e_iu)`` where ``e_it = grad phi(xbar_i) . x_it``: then
``df_i/da_it = s_it * sum_u s_iu (e_it - e_iu)``. Written as a softmax-weighted sum of
per-token differences it stays accurate after saturation, whereas the textbook
``e_it - f_i`` loses 40-90 % to cancellation (PAPER.md §6.1).
"""

from __future__ import annotations

import torch

from attnsvm.batchops import dot_last
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
        return torch.matmul(self.h_diff, s.unsqueeze(-1)).squeeze(-1)  # (R, n, T)


def make_head(cfg: HeadConfig, inst: Instances) -> LinearHead:
    if cfg.kind == Head.linear:
        return LinearHead(inst)
    raise NotImplementedError(f"head.kind={cfg.kind.value!r} has no implementation")
