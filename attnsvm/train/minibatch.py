"""Minibatches of sequences (``optimizer.minibatch``): B of a seed's n sequences per step.

A step's gradient is (1/B) sum over the drawn sequences, written as the full batch's with
per-sequence weights count_i * n / B on dL/df_i, so every seed of a batch keeps one shape and
nothing but the weights changes. Each seed draws from its own stream (seed +
MINIBATCH_SEED_OFFSET), so its draws, and its trajectory, are the same however seeds are batched.
"""

from __future__ import annotations

import torch

from attnsvm.config.schema import OptimizerConfig

MINIBATCH_SEED_OFFSET = 2_000_000_011  # apart from the data's and the init's streams


class Minibatches:
    """The per-step sequence weights (R, n) of a batch of seeds, drawn with or without
    replacement (``optimizer.replacement``)."""

    def __init__(self, cfg: OptimizerConfig, seeds: list[int], n: int, like: torch.Tensor):
        if not cfg.replacement and cfg.minibatch > n:
            raise ValueError(
                f"optimizer.minibatch={cfg.minibatch} exceeds the n={n} sequences drawn "
                "without replacement: set optimizer.minibatch <= n, or optimizer.replacement=true"
            )
        self.B, self.n, self.replacement = cfg.minibatch, n, cfg.replacement
        self.like = dict(dtype=like.dtype, device=like.device)
        self.generators = [torch.Generator().manual_seed(s + MINIBATCH_SEED_OFFSET) for s in seeds]

    def draw(self, g: torch.Generator) -> torch.Tensor:
        """(B,) one seed's sequence indices for one step."""
        if self.replacement:
            return torch.randint(self.n, (self.B,), generator=g)
        return torch.randperm(self.n, generator=g)[: self.B]

    def weights(self) -> torch.Tensor:
        """(R, n) count_i * n / B for the next step: 1 on average, 0 for a sequence not drawn."""
        counts = torch.stack(
            [torch.bincount(self.draw(g), minlength=self.n) for g in self.generators]
        )
        return counts.to(**self.like) * (self.n / self.B)


def minibatches(cfg: OptimizerConfig, seeds: list[int], n: int, like: torch.Tensor):
    """The batch's ``Minibatches``, or None for full-batch steps (``optimizer.minibatch`` null)."""
    return None if cfg.minibatch is None else Minibatches(cfg, seeds, n, like)
