"""Batch-invariant tensor primitives: a seed's numbers never depend on the other seeds.

Exactly rounded elementwise ops (+, *, /, sqrt) give the same bits whatever the batch size.
Three kinds of op do not, and are routed through these helpers: transcendental elementwise
functions (SIMD body vs scalar tail), reductions (vectorised across or along rows depending on
the row count) and matrix products. A batched matmul above a few hundred multiply-adds goes
to BLAS (MKL in torch's CPU wheels), whose kernel, blocking and threading depend on the batch
size, the memory alignment and the CPU: on an AVX2-only or AMD CPU one seed's product changed
with its batch mates. So every product here is evaluated by torch's own per-matrix loop
(``baddbmm_cpu_kernel``: one sequential dot product per entry, the same code on every CPU),
never by BLAS. This is a property of the code, not of one machine's kernels.
"""

from __future__ import annotations

import functools

import torch

SIMD_BLOCK = 64  # a multiple of every CPU kernel's vector block (2 x 8 doubles on AVX-512)
NAIVE_LIMIT = 400  # torch's bmm uses its plain per-matrix loop below this many multiply-adds
DOT_BLOCK = 128  # so a (1, k) @ (k, 1) product with k <= DOT_BLOCK never reaches BLAS


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


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``a @ b`` for a (..., r, k) and b (..., k, c): every entry is the sequential sum
    ((0 + a_1 b_1) + a_2 b_2) + ... in exactly rounded ops, so the same bits whatever the batch,
    the thread count or the CPU's kernel level.

    Batch dims are broadcast explicitly so torch never folds the batch into one BLAS gemm.
    Three routes, one sum: small products (r k c < NAIVE_LIMIT) run in torch's per-matrix loop;
    larger float64 ones in the C kernel's ``attnsvm_seq_matmul`` (attnsvm/kernel/_fused.c, no FMA);
    without that build, or with autograd, k rank-one terms accumulated by elementwise mul and
    add (vectorised over the batch; never a fused multiply-add, whose use differs by kernel and
    position). On CUDA (no batch-invariance promised there) this is ``torch.matmul``.
    """
    if a.device.type != "cpu":
        return torch.matmul(a, b)
    (r, k), c = a.shape[-2:], b.shape[-1]
    batch = a.shape[:-2]
    if b.shape[:-2] != batch:  # broadcast_shapes costs more than a small product: only here
        batch = torch.broadcast_shapes(batch, b.shape[:-2])
        a, b = a.expand(*batch, r, k), b.expand(*batch, k, c)
    if not batch:
        return matmul(a.unsqueeze(0), b.unsqueeze(0))[0]
    if r * k * c < NAIVE_LIMIT:
        return torch.matmul(a, b)
    lib = _kernel()
    if (
        lib is not None
        and a.dtype == b.dtype == torch.float64
        and not (a.requires_grad or b.requires_grad)
    ):
        a, b = a.contiguous(), b.contiguous()
        out = torch.empty(*batch, r, c, dtype=torch.float64, device=a.device)
        lib.attnsvm_seq_matmul(out.numel() // (r * c), r, k, c, *_ptrs(a, b, out))
        return out
    out = torch.zeros(*batch, r, c, dtype=torch.result_type(a, b), device=a.device)
    for j in range(k):
        out = out + a[..., :, j : j + 1] * b[..., j : j + 1, :]
    return out


def _ptrs(*tensors: torch.Tensor) -> list[int]:
    return [t.data_ptr() for t in tensors]


@functools.cache
def _kernel():
    """The fused C build (None without one), loaded on first use."""
    from attnsvm.kernel import library

    return library()
