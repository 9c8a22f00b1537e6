"""Batch-invariant tensor primitives: a seed's numbers never depend on the other seeds.

With one torch thread, matmuls of fixed per-seed shapes and exactly rounded elementwise ops
(+, *, /, sqrt) give the same bits whatever the batch size. Two kinds of op do not, and are
routed through these helpers: transcendental elementwise functions (SIMD body vs scalar
tail) and reductions (vectorised across or along rows depending on the row count).
"""

from __future__ import annotations

import torch

SIMD_BLOCK = 64  # a multiple of every CPU kernel's vector block (2 x 8 doubles on AVX-512)
DOT_BLOCK = 128  # bmm of (1, k) @ (k, 1) with k < 400 uses torch's plain per-matrix loop


def elementwise(fn, x: torch.Tensor) -> torch.Tensor:
    """``fn(x)`` for a transcendental elementwise ``fn`` (exp, sigmoid, softplus), batch-invariant.

    Torch's CPU kernels run a SIMD body and a scalar tail whose exp/log differ in the last bit,
    so an element's value would depend on its position in the batch. Padding the flat tensor to
    a multiple of SIMD_BLOCK sends every element through the SIMD body (with one thread).
    """
    flat = x.reshape(-1)
    pad = -flat.numel() % SIMD_BLOCK
    if pad:
        flat = torch.cat([flat, flat.new_zeros(pad)])
    return fn(flat)[: x.numel()].view(x.shape)


def dot_last(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """sum_k x[..., k] y[..., k] as small matmuls per row, batch-invariant.

    Torch's ``sum`` vectorises across rows or along them depending on how many rows there
    are, and a long (1, k) @ (k, 1) product goes to BLAS by a batch-dependent route; both change
    a row's rounding with the batch size. Blocks of at most DOT_BLOCK products, reduced by
    torch's plain batched-matmul loop, reduce every row the same way.
    """
    x, y = torch.broadcast_tensors(x, y)
    k = x.shape[-1]
    if k > DOT_BLOCK:
        pad = -k % DOT_BLOCK
        x, y = (torch.nn.functional.pad(t, (0, pad)) for t in (x, y))
        blocks = x.shape[:-1] + (-1, DOT_BLOCK)
        return sum_last(dot_last(x.reshape(blocks), y.reshape(blocks)))
    return torch.matmul(x.unsqueeze(-2), y.unsqueeze(-1))[..., 0, 0]


def sum_last(x: torch.Tensor) -> torch.Tensor:
    """Batch-invariant sum over the last axis."""
    return dot_last(x, torch.ones_like(x))
