"""The linear maps of the nuclear SDP's rank-2 constraints (nuclear_ipm.py): the operator
A(Y)_j = a_j^T Y12 b_j, its adjoint and the Schur complement M_jk = <A_j, X A_k Z^{-1}> of a
Newton step, batched over instances and built from the distinct right factors b_i, never from
m x m expansions of them where every sequence has the same number of constraints.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from attnsvm.kernel import batchops, library
from attnsvm.kernel.batchops import dot_last


@dataclass
class Constraints:
    """The constraint vectors of a batch: a_j = A[:, j] (p), b_j = Bd[:, rows_j] (q).

    The right factors repeat: every constraint of sequence i has b_j = V^T z_i, so only the
    distinct ones ``Bd`` (B, n, q) enter the m x m products of the Schur complement (4 of its 6
    products shrink from m^2 to m n). ``mm`` computes every product: batchops.matmul (the same
    bits whatever the batch) or, for one large instance, torch.matmul (BLAS). The transposes
    and the gathered b_j are made once; ``shared`` is k when every sequence of every instance
    has k constraints in order (no mask), so the m x m expansions are block copies, not
    gathers."""

    A: torch.Tensor  # (B, m, p)
    Bd: torch.Tensor  # (B, n, q)
    rows: torch.Tensor  # (B, m) long
    mm: Callable = batchops.matmul
    Bq: torch.Tensor | None = None  # (B, m, q) b_j
    At: torch.Tensor | None = None  # (B, p, m)
    Bdt: torch.Tensor | None = None  # (B, q, n)
    shared: int | None = None  # k when every instance's rows are 0^k 1^k ... (n-1)^k, else None

    def __post_init__(self):
        if self.Bq is None:
            self.Bq = torch.gather(
                self.Bd, 1, self.rows.unsqueeze(-1).expand(-1, -1, self.Bd.shape[-1])
            )
            self.At = self.A.transpose(-1, -2).contiguous()
            self.Bdt = self.Bd.transpose(-1, -2).contiguous()
            self.shared = _blocked(self.rows, self.Bd.shape[1])

    def take(self, k: torch.Tensor) -> Constraints:
        A, Bd, rows, Bq, At, Bdt = (
            t[k] for t in (self.A, self.Bd, self.rows, self.Bq, self.At, self.Bdt)
        )
        return Constraints(A, Bd, rows, self.mm, Bq, At, Bdt, self.shared)

    def abt(self, a, M, bt):
        """a M b^T."""
        return self.mm(self.mm(a, M), bt)


def sym(M: torch.Tensor) -> torch.Tensor:
    return (M + M.transpose(-1, -2)) / 2


def _blocks(Y, p):
    return Y[..., :p, :p], Y[..., :p, p:], Y[..., p:, p:]


def _blocked(rows: torch.Tensor, n: int) -> int | None:
    """k if every row of ``rows`` (B, m) is 0^k 1^k ... (n-1)^k (m = n k), else None."""
    m = rows.shape[-1]
    if not len(rows) or m % n:
        return None
    k = m // n
    blocks = torch.arange(n, device=rows.device).repeat_interleave(k)
    return k if bool((rows == blocks).all()) else None


def _rows_cols(S: torch.Tensor, con: Constraints) -> torch.Tensor:
    """(B, m, m) S[rows_j, rows_k] from (B, n, n)."""
    if con.shared is not None:  # each entry repeated in a k x k block: one strided copy
        nb, n, k = S.shape[0], S.shape[1], con.shared
        return S[:, :, None, :, None].expand(nb, n, k, n, k).reshape(nb, n * k, n * k)
    rows = con.rows
    R = torch.gather(S, 1, rows.unsqueeze(-1).expand(-1, -1, S.shape[-1]))  # (B, m, n)
    return _cols(R, con)


def _cols(S: torch.Tensor, con: Constraints) -> torch.Tensor:
    """(B, m, m) S[:, j, rows_k] from (B, m, n)."""
    if con.shared is not None:
        nb, m, n, k = *S.shape, con.shared
        return S[:, :, :, None].expand(nb, m, n, k).reshape(nb, m, n * k)
    return torch.gather(S, 2, con.rows.unsqueeze(1).expand(-1, S.shape[1], -1))


def schur(con: Constraints, X, Zi, x, z):
    """M_jk = <A_j, X A_k Z^{-1}> + diag(x/z), A_j = (u_j v_j^T + v_j u_j^T)/2: its lower
    triangle, which is all the Cholesky factorisation reads (above it ``_schur_blocked``'s C
    route writes zeros; the torch routes also fill M's other entries)."""
    a, p = con.A, con.A.shape[-1]
    X11, X12, X22 = _blocks(X, p)
    Z11, Z12, Z22 = _blocks(Zi, p)
    at, bdt = con.At, con.Bdt
    ux_u, uz_u = con.abt(a, X11, at), con.abt(a, Z11, at)  # (B, m, m)
    vx_v, vz_v = con.abt(con.Bd, X22, bdt), con.abt(con.Bd, Z22, bdt)  # (B, n, n) distinct
    ux_v, uz_v = con.abt(a, X12, bdt), con.abt(a, Z12, bdt)  # (B, m, n) distinct
    if con.shared is None:
        vx_v, vz_v = _rows_cols(vx_v, con), _rows_cols(vz_v, con)  # (B, m, m)
        ux_v, uz_v = _cols(ux_v, con), _cols(uz_v, con)
        T1 = (ux_v.transpose(-1, -2) * uz_v).contiguous()  # (v_j X u_k)(v_k Zi u_j)
        M = T1 + T1.transpose(-1, -2)  # its transpose: the term (u_j X v_k)(u_k Zi v_j)
        M = M + vx_v * uz_u + ux_u * vz_v
        M = M / 4
    else:
        M = _schur_blocked(ux_u, uz_u, vx_v, vz_v, ux_v, uz_v, con.shared)
    M.diagonal(dim1=-2, dim2=-1).add_(x / z)
    return M


def _schur_blocked(ux_u, uz_u, vx_v, vz_v, ux_v, uz_v, k: int) -> torch.Tensor:
    """``schur``'s sum where every sequence has k constraints in order: the (B, n, n) and
    (B, m, n) factors broadcast over the k x k blocks. The 1/4 is taken on the small factors (a
    power of two scales exactly, subnormals aside), and the sums run in ``schur``'s order, so
    the bits are those of the expanded sum ((T1 + T1^T) + uz_u * vx_v + ux_u * vz_v) / 4.
    The C kernel (``attnsvm_schur_lower``: one pass over M where the torch ops make seven)
    writes the lower triangle only; where it is not built, the torch ops below make the whole
    matrix, their lower triangle the same bits."""
    nb, n = vx_v.shape[:2]
    m, blocks = n * k, (nb, n, k, n, k)
    uz_v = uz_v / 4
    # T1[(i,s), (i',s')] = ux_v[(i',s'), i] * uz_v[(i,s), i'], and T1^T the same with the roles
    # swapped; the permuted factors made contiguous first (n^2 k entries each)
    ux_t, uz_t = (t.view(nb, n, k, n).permute(0, 3, 1, 2).contiguous() for t in (ux_v, uz_v))
    vx_v, vz_v = vx_v / 4, vz_v / 4
    lib = library() if ux_v.device.type == "cpu" and ux_v.dtype == torch.float64 else None
    if lib is not None:
        args = [t.contiguous() for t in (ux_v, uz_v, ux_t, uz_t, uz_u, ux_u, vx_v, vz_v)]
        M = torch.empty(nb, m, m, dtype=torch.float64, device=ux_v.device)
        lib.attnsvm_schur_lower(nb, n, k, *(t.data_ptr() for t in (*args, M)))
        return M
    # into buffers of the blocks' shape: left to allocate its output, mul was several times
    # slower at m = 960
    M, T2 = (torch.empty(blocks, dtype=ux_v.dtype, device=ux_v.device) for _ in range(2))
    torch.mul(ux_t[:, :, None], uz_v.view(nb, n, k, n, 1), out=M)
    M.add_(torch.mul(ux_v.view(nb, n, k, n, 1), uz_t[:, :, None], out=T2))
    M.add_(uz_u.view(blocks).mul_(vx_v[:, :, None, :, None]))
    M.add_(ux_u.view(blocks).mul_(vz_v[:, :, None, :, None]))
    return M.view(nb, m, m)


def op(con: Constraints, Y):
    """A(Y)_j = u_j^T Y v_j = a_j^T Y12 b_j, (B, m)."""
    p = con.A.shape[-1]
    return dot_last(con.mm(con.A, Y[..., :p, p:]), con.Bq)


def adjoint(con: Constraints, y):
    """sum_j y_j (u_j v_j^T + v_j u_j^T)/2, (B, N, N)."""
    a, b = con.A, con.Bq
    p, q = a.shape[-1], b.shape[-1]
    G = con.mm(con.At, y.unsqueeze(-1) * b) / 2  # (B, p, q)
    out = torch.zeros(a.shape[0], p + q, p + q, dtype=a.dtype, device=a.device)
    out[:, :p, p:] = G
    out[:, p:, :p] = G.transpose(-1, -2)
    return out
