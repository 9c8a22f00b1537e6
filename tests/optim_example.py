"""A user's own step rule, as the README shows it: sign descent, X - lr sign(G).

python -m attnsvm.run optimizer.kind=optim_example.make +optimizer.kwargs.decay=0.5
"""

import torch


class SignDescent:
    def __init__(self, lr: float, decay: float = 0.0):
        self.lr, self.decay, self.k = lr, decay, 0

    def update(self, X, G, grad_norm):
        lr = self.lr / (1 + self.decay * self.k) ** 0.5  # optional 1/sqrt decay per call
        self.k += 1
        return X - lr * torch.sign(G)


def make(cfg):
    """The factory attnsvm calls with the optimizer config (cfg.kwargs: its arguments)."""
    return SignDescent(cfg.lr, **cfg.kwargs)
