"""Training of experiment ``icl``: all seeds at once, fresh prompts every step.

Each seed's loss is a separate term of the summed objective and the optimizers act entrywise,
so a seed's weights never depend on the other seeds in the batch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from . import data, limits, model
from .config import Config, Gradient, Optimizer, Schedule


@dataclass
class Trajectory:
    steps: list[int]
    A: torch.Tensor | None  # (C, R, d, d) effective A per checkpoint (one layer), else None
    test_loss: torch.Tensor  # (C, R) loss on the seeds' test prompts per checkpoint
    params: dict[str, torch.Tensor]  # final weights, (R, ...) each


class _Step:
    """SGD or Adam on a dict of (R, ...) tensors, entrywise (no cross-seed reduction)."""

    def __init__(self, cfg: Config, params: dict):
        self.cfg, self.t = cfg, 0
        self.m = {k: torch.zeros_like(v) for k, v in params.items()}
        self.v = {k: torch.zeros_like(v) for k, v in params.items()}

    def __call__(self, params: dict, grads: dict) -> None:
        cfg = self.cfg
        lr = cfg.lr * _factor(cfg, self.t)
        self.t += 1
        b1, b2 = cfg.betas
        with torch.no_grad():
            for k, p in params.items():
                g = grads[k]
                if cfg.optimizer == Optimizer.sgd:
                    p -= lr * g
                    continue
                self.m[k].mul_(b1).add_((1 - b1) * g)
                self.v[k].mul_(b2).add_((1 - b2) * g * g)
                m_hat = self.m[k] / (1 - b1**self.t)
                v_hat = self.v[k] / (1 - b2**self.t)
                p -= lr * m_hat / (v_hat.sqrt() + 1e-8)


def _factor(cfg: Config, step: int) -> float:
    if cfg.schedule == Schedule.cosine:
        return 0.5 * (1 + math.cos(math.pi * step / cfg.steps))
    return 1.0


def squared_loss(y_hat: torch.Tensor, y_q: torch.Tensor) -> torch.Tensor:
    """(1/2) mean over prompts of (y_hat - y_q)^2, per seed: (R, B) -> (R,)."""
    return 0.5 * ((y_hat - y_q) ** 2).mean(-1)


def _loss(cfg: Config, params: dict, gens: list, chol, Lam) -> torch.Tensor:
    """Per-seed training loss (R,): fresh prompts, or the closed-form population loss."""
    if cfg.gradient == Gradient.population:
        return limits.population_loss(model.effective_A(cfg, params), Lam, cfg.N, cfg.noise)
    batch = data.draw(gens, cfg.batch, cfg.N, chol, cfg.noise)
    return squared_loss(model.forward(*model.weights(cfg, params), batch.E), batch.y_q)


def train(cfg: Config, seeds: list[int], test: data.Prompts, Lam: torch.Tensor) -> Trajectory:
    """Train the seeds' weights for cfg.steps steps; checkpoints every cfg.checkpoint_every."""
    dtype, device = test.E.dtype, test.E.device
    gens = [data.generator(s, data.TRAIN, str(device)) for s in seeds]
    params = model.init_params(cfg, gens, dtype, device)
    chol = torch.linalg.cholesky(Lam).to(dtype=dtype, device=device)
    step_rule = _Step(cfg, params)
    steps, As, losses = [], [], []
    for step in range(cfg.steps + 1):
        if step % cfg.checkpoint_every == 0 or step == cfg.steps:
            with torch.no_grad():
                steps.append(step)
                A = model.effective_A(cfg, params)
                As.append(None if A is None else A.detach().clone())
                y_hat = model.forward(*model.weights(cfg, params), test.E)
                losses.append(squared_loss(y_hat, test.y_q))
        if step == cfg.steps:
            break
        loss = _loss(cfg, params, gens, chol, Lam)  # (R,)
        grads = torch.autograd.grad(loss.sum(), list(params.values()))
        step_rule(params, dict(zip(params, grads, strict=True)))
    A = None if As[0] is None else torch.stack(As)
    final = {k: v.detach() for k, v in params.items()}
    return Trajectory(steps, A, torch.stack(losses), final)
