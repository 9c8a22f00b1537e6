"""Problem instances, batched over seeds: X (R, n, T, d), Y (R, n), Z (R, n, d), v (R, d).

The published generator (PAPER.md §2) is followed draw for draw, in float32 on the CPU with
one ``torch.Generator`` per seed, so seed s is exactly the published notebooks' instance s;
tensors are converted to the run's dtype and device afterwards. A seed's instance never
depends on which other seeds are drawn with it.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attnsvm.batchops import dot_last
from attnsvm.config import Attention, DatasetConfig, Generator


@dataclass
class Instances:
    """R problem instances; ``opt`` are the globally optimal token ids argmax_t gamma_it."""

    seeds: list[int]
    X: torch.Tensor  # (R, n, T, d) tokens, unit rows
    Y: torch.Tensor  # (R, n) labels in {-1, +1}
    Z: torch.Tensor  # (R, n, d) queries z_i
    v: torch.Tensor  # (R, d) linear head
    gamma: torch.Tensor  # (R, n, T) token scores Y_i v^T x_it
    opt: torch.Tensor  # (R, n) argmax_t gamma_it

    @property
    def R(self) -> int:
        return self.X.shape[0]

    def select(self, idx: list[int]) -> Instances:
        """The sub-batch at positions ``idx``."""
        ix = torch.as_tensor(idx, dtype=torch.long)
        return Instances(
            seeds=[self.seeds[i] for i in idx],
            **{
                k: getattr(self, k)[ix.to(self.X.device)]
                for k in ("X", "Y", "Z", "v", "gamma", "opt")
            },
        )


def published_instance(
    seed: int, n: int, T: int, d: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """One seed of the published generator: draws v, Y, X, Z in that order (float32)."""
    g = torch.Generator().manual_seed(seed)
    v = torch.randn(d, generator=g)
    v = v / torch.norm(v)
    Y = 2 * torch.ones(n) * (torch.randn(n, generator=g) > 0) - 1
    X = torch.randn((n, T, d), generator=g)
    X = X / torch.norm(X, dim=-1, keepdim=True)
    Z = torch.randn((n, d), generator=g)
    Z = Z / torch.norm(Z, dim=-1, keepdim=True)
    return X, Y, Z, v


def queries(X: torch.Tensor, Z: torch.Tensor, attention: Attention, query_index: int):
    """z_i: its own vector (cross-attention) or the token x_{i, query_index} (self-attention)."""
    if attention == Attention.self:
        return X[..., query_index, :].clone()
    return Z


def random_instances(cfg: DatasetConfig, seeds: list[int]):
    """The published random generator for every seed, stacked (float32 draws)."""
    draws = [published_instance(s, cfg.n, cfg.T, cfg.d) for s in seeds]
    return tuple(torch.stack([dr[k] for dr in draws]) for k in range(4))


# generator -> function(cfg, seeds) returning float32 (X, Y, Z, v) before query selection
GENERATORS = {
    Generator.random: random_instances,
}


def make_instances(
    cfg: DatasetConfig,
    seeds: list[int],
    dtype: torch.dtype = torch.float64,
    device: str | torch.device = "cpu",
) -> Instances:
    """Draw the instances of ``seeds`` with the configured generator and stack them."""
    if cfg.generator not in GENERATORS:
        raise NotImplementedError(
            f"dataset.generator={cfg.generator.value!r} has no implementation"
        )
    X, Y, Z, v = (t.to(dtype) for t in GENERATORS[cfg.generator](cfg, seeds))
    Z = queries(X, Z, cfg.attention, cfg.query_index)
    return finish_instances(seeds, X, Y, Z, v, device)


def finish_instances(seeds, X, Y, Z, v, device) -> Instances:
    """Move to ``device`` and derive the token scores and optimal tokens."""
    X, Y, Z, v = (t.to(device) for t in (X, Y, Z, v))
    gamma = Y[..., None] * dot_last(X, v[:, None, None, :])  # (R, n, T)
    return Instances(seeds, X, Y, Z, v, gamma, gamma.argmax(dim=-1))
