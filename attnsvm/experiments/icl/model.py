"""L layers of linear self-attention on the prompt embedding E (d+1, N+1), batched over seeds.

Layer l: E <- E + W^PV_l E M E^T W^KQ_l E / N, M = diag(1, ..., 1, 0): the N examples are the
keys and values, the query column is not (with one layer and merged or structured weights this
is exactly f(E) = E + W^PV E (E^T W^KQ E) / N, whose query label is 0). The prediction is
y_hat = -E_L[d+1, N+1]: the label row then carries the residuals y_i - x_i^T w_l of GD, so L
layers with W^PV_l = [[0, 0], [0, -1]], W^KQ_l = [[P_l^T, 0], [0, 0]] are exactly L steps
w_{l+1} = w_l + P_l (1/N) sum_i (y_i - x_i^T w_l) x_i from w_0 = 0, y_hat = x_q^T w_L.

Parameters per seed (all batched (R, L, ...)): merged A_l = P_l; structured u_l, W_l with
A_l = -u_l W_l^T; full W^PV_l, W^KQ_l. With one layer y_hat = x_q^T A h + (terms that only add
variance), A = -(p22 Q11^T + q21 p21^T) for W^PV = [[P11, p12], [p21^T, p22]],
W^KQ = [[Q11, q12], [q21^T, q22]] (``effective_A``).
"""

from __future__ import annotations

import torch

from .config import Config, Parameterization


def init_params(cfg: Config, gens: list, dtype, device) -> dict[str, torch.Tensor]:
    """Initial weights, init_scale * N(0, 1) entries, each seed from its own generator."""
    L, d, D = cfg.layers, cfg.d, cfg.d + 1
    shapes = {
        Parameterization.merged: {"A": (L, d, d)},
        Parameterization.structured: {"u": (L,), "W": (L, d, d)},
        Parameterization.full: {"pv": (L, D, D), "kq": (L, D, D)},
    }[cfg.parameterization]
    out = {}
    for name, shape in shapes.items():
        draws = [torch.randn(shape, generator=g, dtype=dtype, device=device) for g in gens]
        out[name] = (cfg.init_scale * torch.stack(draws)).requires_grad_(True)
    return out


def gd_weights(P: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(W^PV, W^KQ) (..., d+1, d+1) whose layer is one GD step preconditioned by P (..., d, d)."""
    d = P.shape[-1]
    pv = P.new_zeros((*P.shape[:-2], d + 1, d + 1))
    pv[..., d, d] = -1.0
    kq = torch.nn.functional.pad(P.transpose(-1, -2), (0, 1, 0, 1))
    return pv, kq


def weights(cfg: Config, params: dict) -> tuple[torch.Tensor, torch.Tensor]:
    """(W^PV, W^KQ), each (R, L, d+1, d+1), of the parameters."""
    if cfg.parameterization == Parameterization.merged:
        return gd_weights(params["A"])
    if cfg.parameterization == Parameterization.full:
        return params["pv"], params["kq"]
    u, W = params["u"], params["W"]  # (R, L), (R, L, d, d)
    pv = torch.nn.functional.pad(u[..., None, None], (cfg.d, 0, cfg.d, 0))
    kq = torch.nn.functional.pad(W, (0, 1, 0, 1))
    return pv, kq


def forward(pv: torch.Tensor, kq: torch.Tensor, E: torch.Tensor) -> torch.Tensor:
    """y_hat (R, B) of weights pv, kq (R, L, D, D) (or (1, L, D, D) for every seed) on
    embeddings E (R, B, D, N+1), one seed at a time: MKL's AVX2 and AVX-512 batched products
    give a matrix bits that depend on where it sits in the batch, so with the seeds folded into
    one batch a seed's numbers depended on how many seeds ran beside it (on an Intel Xeon; on
    an AMD EPYC they did not). A seed's own products are the same calls whatever the seeds."""
    one = len(pv) == 1
    return torch.cat(
        [
            _forward(pv if one else pv[r : r + 1], kq if one else kq[r : r + 1], E[r : r + 1])
            for r in range(len(E))
        ]
    )


def _forward(pv: torch.Tensor, kq: torch.Tensor, E: torch.Tensor) -> torch.Tensor:
    """``forward`` of one seed: pv, kq (1, L, D, D), E (1, B, D, N+1)."""
    N, last = E.shape[-1] - 1, pv.shape[1] - 1
    for layer in range(last):
        ctx = E[..., :N]  # (R, B, D, N): keys and values
        G = ctx @ ctx.transpose(-1, -2) / N  # (R, B, D, D)
        E = E + pv[:, layer, None] @ G @ kq[:, layer, None] @ E  # (R, B, D, N+1)
    # the last layer: only the query's label entry, e_D^T W^PV G W^KQ E[:, N]
    ctx = E[..., :N]
    G = ctx @ ctx.transpose(-1, -2) / N  # (R, B, D, D)
    row = torch.einsum("rj,rbji->rbi", pv[:, last, -1], G)  # (R, B, D)
    col = torch.einsum("rij,rbj->rbi", kq[:, last], E[..., N])  # (R, B, D)
    return -(E[..., -1, N] + (row * col).sum(-1))


def effective_A(cfg: Config, params: dict) -> torch.Tensor | None:
    """A (R, d, d) with y_hat = x_q^T A h (+ variance-only terms for full); None for L > 1."""
    if cfg.layers != 1:
        return None
    if cfg.parameterization == Parameterization.merged:
        return params["A"][:, 0]
    if cfg.parameterization == Parameterization.structured:
        return -params["u"][:, 0, None, None] * params["W"][:, 0].transpose(-1, -2)
    pv, kq = params["pv"][:, 0], params["kq"][:, 0]  # (R, D, D)
    d = cfg.d
    p22, p21 = pv[:, d, d, None, None], pv[:, d, :d]  # (R, 1, 1), (R, d)
    Q11, q21 = kq[:, :d, :d], kq[:, d, :d]  # (R, d, d), (R, d)
    return -(p22 * Q11.transpose(-1, -2) + q21[:, :, None] * p21[:, None, :])
