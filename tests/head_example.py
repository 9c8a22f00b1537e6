"""A user's own head, as the README shows it: f_i = tanh(v^T xbar_i).

    python -m attnsvm.run head.kind=head_example.make

grad phi(xbar) = (1 - f_i^2) v, so e_it = (1 - f_i^2) v^T x_it and the centred values are
(1 - f_i^2) sum_u s_iu (h_it - h_iu), the linear head's times (1 - f_i^2).
"""

import torch

from attnsvm.kernel.batchops import dot_last
from attnsvm.train.heads import LinearHead


class TanhHead:
    def __init__(self, inst, scale: float = 1.0):
        self.linear = LinearHead(inst)
        self.scale = scale

    def output(self, s: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.scale * dot_last(s, self.linear.h))  # (R, n)

    def centred_values(self, s: torch.Tensor) -> torch.Tensor:
        f = self.output(s)
        return (self.scale * (1 - f**2)).unsqueeze(-1) * self.linear.centred_values(s)


def make(inst, cfg):
    """The factory attnsvm calls: head.kind=head_example.make, head.kwargs.scale=..."""
    return TanhHead(inst, **cfg.kwargs)
