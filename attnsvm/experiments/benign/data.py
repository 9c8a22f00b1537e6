"""The samples of experiment=benign, drawn per seed so a seed's data never depends on its batch
mates: each seed has its own generators (stream TRAIN: labels, flips, tokens, then the start;
TEST: the clean test set), drawn on the CPU in float64 and moved to the run's device and dtype.

two_token (Magen et al.): a signal token mu_y (mu_+1 = rho e_1, mu_-1 = rho e_2) and a noise token
xi ~ N(0, I - e_1 e_1^T - e_2 e_2^T) in random order. token_selection (Sakamoto & Sato): T tokens
N(0, I_d), token 0 + mu_y, token 1 + rho mu_y, token 2 + rho mu_{-y}, mu_1 = s e_1, mu_2 = s e_2.
Training labels: n // 2 of class +1, the rest -1; exactly round(eta n) flipped, half from each
class (the remainder from class -1).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .config import Config, Setting

TRAIN, TEST = 0, 1


def generator(seed: int, stream: int) -> torch.Generator:
    """An independent CPU generator for (seed, stream)."""
    state = np.random.SeedSequence([seed, stream, 30]).generate_state(1, dtype=np.uint64)[0]
    return torch.Generator().manual_seed(int(state))


@dataclass
class Samples:
    """One batch of seeds' samples."""

    X: torch.Tensor  # (R, m, T, d)
    y: torch.Tensor  # (R, m) the labels trained on (flipped where ``flipped``), +-1
    clean: torch.Tensor  # (R, m) the true labels
    flipped: torch.Tensor  # (R, m) bool
    signal: torch.Tensor  # (R, m) long: the index of the token that carries mu_y

    def to(self, dtype, device) -> Samples:
        """On the run's device: X in ``dtype``, the labels too, the masks as they are."""
        put = dict(dtype=dtype, device=device)
        return Samples(self.X.to(**put), self.y.to(**put), self.clean.to(**put),
                       self.flipped.to(device=device), self.signal.to(device=device))  # fmt: skip


def _labels(cfg: Config, m: int, flips: int, gen) -> tuple[torch.Tensor, torch.Tensor]:
    """Balanced true labels (m // 2 of +1) and the mask of ``flips`` flipped ones."""
    clean = torch.ones(m, dtype=torch.float64)
    clean[m // 2 :] = -1.0
    flipped = torch.zeros(m, dtype=torch.bool)
    plus = torch.randperm(m // 2, generator=gen)[: flips // 2]
    minus = m // 2 + torch.randperm(m - m // 2, generator=gen)[: flips - flips // 2]
    flipped[plus], flipped[minus] = True, True
    return clean, flipped


def _tokens(cfg: Config, clean: torch.Tensor, gen) -> tuple[torch.Tensor, torch.Tensor]:
    """X (m, T, d) and the signal token's index (m,) for the true labels ``clean``."""
    m, T, d, s = len(clean), cfg.tokens, cfg.d, cfg.signal
    X = torch.randn((m, T, d), generator=gen, dtype=torch.float64)
    plus = clean > 0
    if cfg.setting == Setting.two_token:
        X[:, :, :2] = 0.0  # the noise is orthogonal to e_1, e_2
        where = torch.randint(0, 2, (m,), generator=gen)
        rows = torch.arange(m)
        X[rows, where] = 0.0
        X[rows[plus], where[plus], 0] = s
        X[rows[~plus], where[~plus], 1] = s
        return X, where
    for t, scale, sign in ((0, 1.0, plus), (1, cfg.rho, plus), (2, cfg.rho, ~plus)):
        X[sign, t, 0] += scale * s
        X[~sign, t, 1] += scale * s
    return X, torch.zeros(m, dtype=torch.long)


def draw_one(cfg: Config, seed: int, stream: int) -> tuple[Samples, torch.Generator]:
    """One seed's training (stream TRAIN, round(eta n) flipped) or clean test set (TEST); the
    generator is returned so the start is drawn from the same stream after the data."""
    gen = generator(seed, stream)
    m, flips = (cfg.n, cfg.flips) if stream == TRAIN else (cfg.test, 0)
    clean, flipped = _labels(cfg, m, flips, gen)
    X, signal = _tokens(cfg, clean, gen)
    y = torch.where(flipped, -clean, clean)
    one = Samples(X[None], y[None], clean[None], flipped[None], signal[None])
    return one, gen


def stack(parts: list[Samples]) -> Samples:
    """The seeds' samples as one batch."""
    return Samples(*(torch.cat([getattr(p, k) for p in parts])
                     for k in ("X", "y", "clean", "flipped", "signal")))  # fmt: skip


def bayes_accuracy(cfg: Config) -> float:
    """The clean test accuracy of the Bayes classifier (it knows mu): two_token 1 (the signal
    token is noiseless); token_selection Phi(s sqrt((1 + 2 rho^2) / 2)), the linear likelihood
    ratio (x_0 + rho x_1 - rho x_2)^T (mu_1 - mu_2) (the other tokens carry nothing)."""
    if cfg.setting == Setting.two_token:
        return 1.0
    from math import erf, sqrt

    z = cfg.signal * sqrt((1 + 2 * cfg.rho**2) / 2)
    return 0.5 * (1 + erf(z / sqrt(2)))
