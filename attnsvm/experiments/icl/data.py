"""Prompts of experiment ``icl``: x_1..x_N, x_q ~ N(0, Lam), w ~ N(0, I_d), y = w^T x (+ eps).

Every seed draws from its own torch.Generator, so a seed's prompts never depend on which other
seeds share its batch. Streams: TRAIN (initial weights, then the fresh prompts of every step),
TEST (the seed's test prompts); FIT (the prompts the preconditioned-GD baseline is fitted on)
belongs to the job, not to a seed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

TRAIN, TEST, FIT = 0, 1, 2


def generator(seed: int, stream: int, device: str = "cpu") -> torch.Generator:
    """An independent generator for (seed, stream), whatever else runs."""
    state = np.random.SeedSequence([seed, stream]).generate_state(1, dtype=np.uint64)[0]
    return torch.Generator(device=device).manual_seed(int(state))


@dataclass
class Prompts:
    E: torch.Tensor  # (R, B, d+1, N+1) embedding, query label 0
    y_q: torch.Tensor  # (R, B) query target

    @property
    def x_q(self) -> torch.Tensor:  # (R, B, d)
        return self.E[..., :-1, -1]

    @property
    def h(self) -> torch.Tensor:  # (R, B, d): (1/N) sum_i y_i x_i
        ctx = self.E[..., :, :-1]
        return torch.einsum("rbin,rbn->rbi", ctx[..., :-1, :], ctx[..., -1, :]) / ctx.shape[-1]


def _normal(gen, shape: tuple, like: torch.Tensor) -> torch.Tensor:
    """N(0, 1) entries (normal_ fills float64 about twice as fast as randn here)."""
    return torch.empty(shape, dtype=like.dtype, device=like.device).normal_(generator=gen)


def _fill(E: torch.Tensor, gen, chol: torch.Tensor, noise: float) -> torch.Tensor:
    """Fill one seed's embeddings E (B, d+1, N+1) in place; returns y_q (B,)."""
    B, d, N = E.shape[0], chol.shape[0], E.shape[-1] - 1
    z = _normal(gen, (B, d, N + 1), chol)  # columns x_1..x_N, x_q
    diagonal = torch.equal(chol, torch.diag(torch.diagonal(chol)))
    x = z * torch.diagonal(chol)[:, None] if diagonal else chol @ z  # (B, d, N+1)
    w = _normal(gen, (B, d), chol)
    y = torch.einsum("bdn,bd->bn", x, w)  # (B, N+1)
    if noise > 0:
        y = y + noise * _normal(gen, (B, N + 1), chol)
    E[:, :d] = x
    E[:, d, :N] = y[:, :N]
    E[:, d, N] = 0.0
    return y[:, N]


def draw(gens: list, B: int, N: int, chol: torch.Tensor, noise: float) -> Prompts:
    """B prompts per generator (one generator per seed); chol: a factor of Lam, Lam = C C^T."""
    d = chol.shape[0]
    E = chol.new_empty((len(gens), B, d + 1, N + 1))  # (R, B, d+1, N+1)
    y_q = torch.stack([_fill(E[r], g, chol, noise) for r, g in enumerate(gens)])  # (R, B)
    return Prompts(E, y_q)
