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


def _one(gen, B: int, N: int, chol: torch.Tensor, noise: float) -> tuple:
    """x (B, N+1, d) and y (B, N+1) of one seed."""
    d = chol.shape[0]
    x = _normal(gen, (B, N + 1, d), chol) @ chol.T
    w = _normal(gen, (B, d), chol)
    y = torch.einsum("bnd,bd->bn", x, w)
    if noise > 0:
        y = y + noise * _normal(gen, (B, N + 1), chol)
    return x, y


def draw(gens: list, B: int, N: int, chol: torch.Tensor, noise: float) -> Prompts:
    """B prompts per generator (one generator per seed); chol: a factor of Lam, Lam = C C^T."""
    parts = [_one(g, B, N, chol, noise) for g in gens]
    x = torch.stack([p[0] for p in parts])  # (R, B, N+1, d)
    y = torch.stack([p[1] for p in parts])  # (R, B, N+1)
    labels = torch.cat([y[..., :-1], torch.zeros_like(y[..., -1:])], dim=-1)
    E = torch.cat([x.transpose(-1, -2), labels[..., None, :]], dim=-2)  # (R, B, d+1, N+1)
    return Prompts(E, y[..., -1])
