"""The limit of experiment ``icl``: A* = Gamma^{-1}, and closed-form population losses.

With S = (1/N) sum_i x_i x_i^T, h = (1/N) sum_i y_i x_i and y_hat = x_q^T A h, the population
loss is (1/2) E[(y_hat - y_q)^2] = (1/2) [tr(Lam A H A^T) - 2 tr(Lam A Lam) + tr Lam + sigma^2]
with H = E[h h^T] = Lam (Gamma + sigma^2/N I), Gamma = (1 + 1/N) Lam + (tr Lam / N) I (Gaussian
fourth moments: E[S^2] = Lam Gamma). Its minimizer is A* = (Gamma + sigma^2/N I)^{-1}.

    Lam = covariance(Config(spectrum="linear", kappa=4))
    A_star = limit(Lam, N=20)
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from .config import Config, Spectrum


def covariance(cfg: Config) -> torch.Tensor:
    """Lam (d, d) float64 of the prompts' x ~ N(0, Lam) (a ValueError names a bad file)."""
    if cfg.spectrum == Spectrum.identity:
        return torch.eye(cfg.d, dtype=torch.float64)
    if cfg.spectrum == Spectrum.linear:
        return torch.diag(torch.linspace(1.0, cfg.kappa, cfg.d, dtype=torch.float64))
    return _from_file(cfg.spectrum_file, cfg.d)


def _from_file(path: str, d: int) -> torch.Tensor:
    key = f"icl.spectrum_file={path!r}"
    accepted = f"a .npy or text file of {d} positive eigenvalues or a {d} x {d} covariance"
    try:
        a = np.load(path) if Path(path).suffix == ".npy" else np.loadtxt(path, ndmin=1)
    except (OSError, ValueError) as exc:
        raise ValueError(f"{key}: accepted {accepted} ({exc})") from None
    a = np.asarray(a, dtype=np.float64)
    if a.shape == (d,) and np.all(a > 0):
        return torch.diag(torch.from_numpy(a))
    if a.shape == (d, d) and np.allclose(a, a.T) and np.linalg.eigvalsh(a).min() > 0:
        return torch.from_numpy((a + a.T) / 2)
    raise ValueError(f"{key}: accepted {accepted}; got shape {a.shape} (icl.d={d})")


def gamma(Lam: torch.Tensor, N: int) -> torch.Tensor:
    """Gamma = (1 + 1/N) Lam + (tr Lam / N) I, so that E[S^2] = Lam Gamma."""
    eye = torch.eye(Lam.shape[-1], dtype=Lam.dtype)
    return (1 + 1 / N) * Lam + torch.trace(Lam) / N * eye


def limit(Lam: torch.Tensor, N: int, noise: float = 0.0) -> torch.Tensor:
    """A* = (Gamma + sigma^2/N I)^{-1}: the population minimizer over A of y_hat = x_q^T A h."""
    eye = torch.eye(Lam.shape[-1], dtype=Lam.dtype)
    return torch.linalg.inv(gamma(Lam, N) + noise**2 / N * eye)


def h_moment(Lam: torch.Tensor, N: int, noise: float = 0.0) -> torch.Tensor:
    """H = E[h h^T] = Lam (Gamma + sigma^2/N I)."""
    eye = torch.eye(Lam.shape[-1], dtype=Lam.dtype)
    return Lam @ (gamma(Lam, N) + noise**2 / N * eye)


def population_loss(A: torch.Tensor, Lam: torch.Tensor, N: int, noise: float = 0.0):
    """(1/2) E[(x_q^T A h - y_q)^2] for A (..., d, d); differentiable in A."""
    H = h_moment(Lam, N, noise).to(A)
    Lam = Lam.to(A)
    quad = torch.einsum("ij,...jk,kl,...il->...", Lam, A, H, A)  # tr(Lam A H A^T)
    cross = torch.einsum("ij,...jk,ki->...", Lam, A, Lam)  # tr(Lam A Lam)
    return 0.5 * (quad - 2 * cross + torch.trace(Lam) + noise**2)


def gd1_step(Lam: torch.Tensor, N: int, noise: float = 0.0) -> float:
    """The best step size eta of one plain GD step from w = 0 (A = eta I):
    eta* = tr(Lam^2) / tr(Lam H)."""
    H = h_moment(Lam, N, noise)
    return float(torch.trace(Lam @ Lam) / torch.trace(Lam @ H))
