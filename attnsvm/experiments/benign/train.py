"""Full-batch training of experiment=benign, all seeds at once, with a record at log-spaced
checkpoints that always include steps 1 and 2 (Magen et al.: two steps suffice): per seed the
loss, which training labels are fit (clean and flipped apart), the attention on the signal
token, the clean test accuracy, and the attention vector q (p, or W p) and v.

    rec = train_benign(cfg, train, test, gens)     # data.Samples, on the run's device
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .config import Config
from .data import Samples
from .model import (
    attention_vector,
    forward,
    grad_norm,
    head,
    loss_and_grads,
    ordered_sum,
    start,
    step,
)


def checkpoint_steps(steps: int, count: int) -> list[int]:
    """Steps 0, 1, 2 (where they exist) and ``count`` log-spaced steps in [1, steps]."""
    logs = np.geomspace(1, steps, count)
    return sorted({0, 1, 2, steps} & set(range(steps + 1)) | {int(round(x)) for x in logs})


@dataclass
class Record:
    """Checkpoints of one batch: index c is step ``steps[c]``; tensors on the CPU."""

    steps: list[int]
    loss: torch.Tensor  # (C, R)
    fit_clean: torch.Tensor  # (C, R) share of unflipped training samples with y_i f_i > 0
    fit_flipped: torch.Tensor  # (C, R) the same over the flipped ones (NaN if none)
    attn_clean: torch.Tensor  # (C, R) mean attention on the signal token, unflipped samples
    attn_flipped: torch.Tensor  # (C, R) the same over the flipped ones
    test_acc: torch.Tensor  # (C, R) clean test accuracy
    q: torch.Tensor  # (C, R, d) the attention vector
    v: torch.Tensor | None  # (C, R, d) two_token's value vector
    grad_norm: torch.Tensor  # (C, R)
    selected: torch.Tensor  # (R, n) argmax_t s_it at the last step


def masked_mean(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean of x (R, m) over mask (R, m) per seed; NaN where the mask is empty."""
    count = ordered_sum(mask.to(x.dtype), -1)
    return ordered_sum(torch.where(mask, x, torch.zeros_like(x)), -1) / count


def accuracy(state, test: Samples, nu) -> torch.Tensor:
    """Share of test samples with clean_i f_i > 0 (R,)."""
    f, _, _ = forward(state, test.X, nu)
    return (test.clean * f > 0).sum(-1).to(f.dtype) / f.shape[-1]  # a count: exact


def _record(rec: Record, c: int, state, out, train: Samples, test: Samples, nu) -> None:
    loss, f, s, grads = out
    fit = (train.y * f > 0).to(f.dtype)
    on_signal = torch.gather(s, -1, train.signal[..., None])[..., 0]
    clean = ~train.flipped
    rec.loss[c] = loss.cpu()
    rec.fit_clean[c], rec.fit_flipped[c] = (masked_mean(fit, m).cpu() for m in (clean, ~clean))
    rec.attn_clean[c] = masked_mean(on_signal, clean).cpu()
    rec.attn_flipped[c] = masked_mean(on_signal, ~clean).cpu()
    rec.test_acc[c] = accuracy(state, test, nu).cpu()
    rec.q[c] = attention_vector(state).cpu()
    if rec.v is not None:
        rec.v[c] = state["v"].cpu()
    rec.grad_norm[c] = grad_norm(grads).cpu()


def train_benign(cfg: Config, train: Samples, test: Samples, gens: list, on_steps=None) -> Record:
    """``cfg.n_steps`` steps of ``cfg.rule`` from ``model.start``; recorded at the checkpoints.
    A seed whose numbers leave the finite range keeps going (NaN stays NaN, per seed).
    ``on_steps(seeds, steps)``, when given, hears of every step done (progress lines)."""
    R, dtype, device = train.X.shape[0], train.X.dtype, train.X.device
    state = start(cfg, gens, dtype, device)
    nu = head(cfg, dtype, device)
    ckpts = checkpoint_steps(cfg.n_steps, cfg.checkpoints)
    C, d = len(ckpts), cfg.d
    new = lambda *shape: torch.full(shape, float("nan"), dtype=dtype)  # noqa: E731
    rec = Record(ckpts, new(C, R), new(C, R), new(C, R), new(C, R), new(C, R), new(C, R),
                 new(C, R, d), new(C, R, d) if "v" in state else None, new(C, R), None)  # fmt: skip
    c = 0
    for k in range(cfg.n_steps + 1):
        out = loss_and_grads(state, train.X, train.y, nu)
        if ckpts[c] == k:
            _record(rec, c, state, out, train, test, nu)
            c += 1
        if k == cfg.n_steps:
            break
        grads = out[3]
        state = step(state, grads, grad_norm(grads) if cfg.rule.value == "ngd" else None, cfg)
        if on_steps is not None:
            on_steps(R, 1)
    rec.selected = out[2].argmax(-1).cpu()
    return rec
