"""Baselines of experiment ``icl``: explicit preconditioned GD on the context, and its fit.

The recursion (w_0 = 0, l = 0..L-1, y_hat = x_q^T w_L):

    w_{l+1} = w_l + P_l (1/N) sum_i (y_i - x_i^T w_l) x_i

P_l = Gamma^{-1} with L = 1 is the limit; P_0 = eta* I with L = 1 is one plain GD step with the
best step size. ``fit_pgd`` fits L preconditioners diagonal in Lam's eigenbasis,
P_l = V diag(p_l) V^T, by L-BFGS on a fixed set of prompts (the job's, not a seed's).
"""

from __future__ import annotations

import torch

from . import data, limits
from .config import Config


def pgd_predict(P: torch.Tensor, prompts: data.Prompts) -> torch.Tensor:
    """y_hat (R, B) of L preconditioned GD steps, P (L, d, d) shared by all seeds."""
    E = prompts.E
    d, N = E.shape[-2] - 1, E.shape[-1] - 1
    x, y = E[..., :d, :N], E[..., d, :N]  # (R, B, d, N), (R, B, N)
    w = torch.zeros_like(E[..., :d, 0])  # (R, B, d)
    for P_l in P:
        residual = y - torch.einsum("rbdn,rbd->rbn", x, w)  # (R, B, N)
        g = torch.einsum("rbdn,rbn->rbd", x, residual) / N  # (R, B, d)
        w = w + g @ P_l.T
    return torch.einsum("rbd,rbd->rb", prompts.x_q, w)


def _loss(P: torch.Tensor, prompts: data.Prompts) -> torch.Tensor:
    return 0.5 * ((pgd_predict(P, prompts) - prompts.y_q) ** 2).mean()


def fit_pgd(cfg: Config, Lam: torch.Tensor, dtype, device) -> torch.Tensor:
    """P (L, d, d): the L-step preconditioned GD with diagonal-in-eigenbasis P_l of least
    loss on cfg.fit_prompts prompts; exactly Gamma^{-1} (the population optimum) for L = 1."""
    A_star = limits.limit(Lam, cfg.N, cfg.noise)
    if cfg.layers == 1:
        return A_star[None].to(dtype=dtype, device=device)
    gen = data.generator(0, data.FIT, str(device))
    chol = torch.linalg.cholesky(Lam).to(dtype=dtype, device=device)
    prompts = data.draw([gen], cfg.fit_prompts, cfg.N, chol, cfg.noise)
    _, V = torch.linalg.eigh(Lam)
    V = V.to(dtype=dtype, device=device)
    p0 = torch.diagonal(V.T @ A_star.to(V) @ V)  # start: every step Gamma^{-1}
    p = p0.repeat(cfg.layers, 1).clone().requires_grad_(True)  # (L, d)

    def precond() -> torch.Tensor:
        return V @ torch.diag_embed(p) @ V.T  # (L, d, d)

    opt = torch.optim.LBFGS([p], max_iter=200, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = _loss(precond(), prompts)
        loss.backward()
        return loss

    opt.step(closure)
    return precond().detach()
