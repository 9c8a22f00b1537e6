"""What training starts from and what it records: parameters, their initialisation, the
checkpoints. Shared by both engines (the torch loop, attnsvm/train/loop.py, and the fused C
kernel, attnsvm/train/fused.py), so neither imports the other's internals.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from attnsvm.config.enums import Init, Parameterization
from attnsvm.config.schema import ParameterizationConfig
from attnsvm.kernel.batchops import matmul

INIT_SEED_OFFSET = 1_000_000_007  # init draws use their own stream: seed + offset


@dataclass
class Params:
    """W-parameterization holds ``W``; (K,Q) holds ``K`` and ``Q`` and W = K Q^T; the p-model
    holds ``p`` (R, d) and W = p e_1^T (its one query is e_1)."""

    W: torch.Tensor | None = None
    K: torch.Tensor | None = None
    Q: torch.Tensor | None = None
    p: torch.Tensor | None = None

    @property
    def names(self) -> list[str]:
        """The trained tensors' names."""
        return ["W"] if self.W is not None else ["p"] if self.p is not None else ["K", "Q"]

    def attention_matrix(self) -> torch.Tensor:
        if self.W is not None:
            return self.W
        if self.p is not None:
            return F.pad(self.p.unsqueeze(-1), (0, self.p.shape[-1] - 1))  # (R, d, d) p e_1^T
        return matmul(self.K, self.Q.transpose(-1, -2))


def init_params(cfg: ParameterizationConfig, seeds: list[int], d: int, dtype, device) -> Params:
    """Per-seed initialisation, drawn in float32 from the stream ``seed + INIT_SEED_OFFSET``.

    ``torch`` is nn.Linear's default U(-1/sqrt(d), 1/sqrt(d)) as in the published notebooks
    (there Q is drawn before K); ``zeros`` is W(0) = 0, and for (K,Q) Q(0) = 0 with
    K(0) = init_scale * N(0, 1), since K = Q = 0 is a stationary point. p is drawn as a
    (d, 1) matrix would be (``published`` starts come with the data: ``train``).
    """
    m = cfg.m or d
    mats = []
    for seed in seeds:
        g = torch.Generator().manual_seed(seed + INIT_SEED_OFFSET)
        shapes = {Parameterization.w: [(d, d)], Parameterization.p: [(d, 1)]}.get(
            cfg.kind,
            [(d, m), (d, m)],  # (K,Q): Q, K
        )
        draws = []
        for i, shape in enumerate(shapes):
            if cfg.init == Init.torch:
                bound = 1.0 / d**0.5
                draws.append((torch.rand(shape[::-1], generator=g) * 2 - 1).T * bound)
            elif cfg.init == Init.normal:
                draws.append(cfg.init_scale * torch.randn(shape, generator=g))
            elif cfg.kind == Parameterization.kq and i == 1:  # zeros: K(0) random, Q(0) = 0
                draws.append(cfg.init_scale * torch.randn(shape, generator=g))
            else:
                draws.append(torch.zeros(shape))
        mats.append(draws)
    stacked = [
        torch.stack([m_[k] for m_ in mats]).to(dtype=dtype, device=device)
        for k in range(len(mats[0]))
    ]
    if cfg.kind == Parameterization.w:
        return Params(W=stacked[0].contiguous())
    if cfg.kind == Parameterization.p:
        return Params(p=stacked[0][..., 0].contiguous())
    return Params(Q=stacked[0].contiguous(), K=stacked[1].contiguous())


@dataclass
class Trajectory:
    """Checkpoints of one batch: index c of every tensor is step ``steps[c]``."""

    steps: list[int]
    W: torch.Tensor  # (C, R, d, d) attention matrix (K Q^T for (K,Q))
    loss: torch.Tensor  # (C, R)
    grad_norm: torch.Tensor  # (C, R) ||dL/dW|| (or sqrt(|dL/dK|^2 + |dL/dQ|^2))
    softmax_max: torch.Tensor  # (C, R) mean_i max_t s_it (softmax saturation)
    softmax_min_max: torch.Tensor  # (C, R) min_i max_t s_it
    selected: torch.Tensor  # (C, R, n) argmax_t s_it
    final_softmax: torch.Tensor  # (R, n, T)
    v: torch.Tensor | None = None  # (C, R, d) the trained linear head (head.train=true)

    @property
    def final_W(self) -> torch.Tensor:
        return self.W[-1]


def checkpoint_steps(steps: int, every: int) -> list[int]:
    """Steps at which ``train`` records: every ``every`` steps and the last one."""
    return sorted(set(range(0, steps + 1, every)) | {steps})


def on_cpu(obj):
    """``obj`` (Instances, Trajectory) with every tensor on the CPU: one copy per tensor after
    training on a GPU, not one per seed in the analysis; a no-op on the CPU."""
    moved = {
        f.name: value.cpu()
        for f in dataclasses.fields(obj)
        if isinstance(value := getattr(obj, f.name), torch.Tensor)
    }
    return dataclasses.replace(obj, **moved)
