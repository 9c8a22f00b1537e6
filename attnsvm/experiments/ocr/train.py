"""Training of experiment ``ocr``: every seed of a batch at once, autograd's gradient, and the
step rules written out per entry (AdamW as torch.optim.AdamW computes it, plain GD, normalized
GD), so that a seed's numbers never depend on the others in its batch.

    rec = train(cfg, seeds, dtype)   # rec.W_ov (C, R, d, d), rec.metrics[name] (C, R), ...
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from . import data, model
from .config import Config, StepRule


@dataclass
class Record:
    """What training leaves, per checkpoint (C) and seed (R)."""

    steps: list[int]
    W_ov: torch.Tensor  # (C, R, d, d)
    q: torch.Tensor  # (C, R, d) the query's weight of each token
    metrics: dict[str, torch.Tensor]  # "<set>_acc", "<set>_loss" -> (C, R)
    finite: torch.Tensor  # (R,) bool: every parameter and loss stayed finite


class StepRuleState:
    """One step rule applied to the trained tensors in place (decoupled weight decay first)."""

    def __init__(self, cfg: Config, params: dict[str, torch.Tensor]):
        self.cfg, self.t = cfg, 0
        self.lr, self.wd = cfg.step_size, cfg.decay
        self.m = {k: torch.zeros_like(v) for k, v in params.items()}
        self.v = {k: torch.zeros_like(v) for k, v in params.items()}

    @torch.no_grad()
    def __call__(self, params: dict, grads: dict) -> None:
        cfg, lr = self.cfg, self.lr
        self.t += 1
        if cfg.rule == StepRule.ngd:  # each tensor along its own normalized gradient
            grads = {k: g / (g.flatten(1).norm(dim=1) + cfg.eps).view(-1, *[1] * (g.dim() - 1))
                     for k, g in grads.items()}  # fmt: skip
        for k, p in params.items():
            g = grads[k]
            if self.wd:
                p.mul_(1 - lr * self.wd)
            if cfg.rule != StepRule.adamw:
                p.sub_(lr * g)
                continue
            b1, b2 = cfg.betas
            self.m[k].lerp_(g, 1 - b1)
            self.v[k].mul_(b2).addcmul_(g, g, value=1 - b2)
            c1, c2 = 1 - b1**self.t, 1 - b2**self.t
            denom = (self.v[k].sqrt() / c2**0.5).add_(cfg.eps)
            p.addcdiv_(self.m[k], denom, value=-lr / c1)


def evaluate(cfg: Config, params: dict, sets: dict[str, data.Prompts]) -> dict[str, torch.Tensor]:
    """Accuracy and loss (R,) of each evaluation set."""
    out = {}
    with torch.no_grad():
        for name, p in sets.items():
            z = model.logits(cfg, params, p.counts)
            out[f"{name}_acc"] = model.accuracy(z, p.target)
            out[f"{name}_loss"] = model.cross_entropy(z, p.target)
    return out


def train(cfg: Config, seeds: list[int], dtype=torch.float64) -> Record:
    """Train ``seeds`` together for cfg.steps steps, a checkpoint every cfg.checkpoint_every."""
    v = data.vocab(cfg)
    gens = [data.generator(s, data.TRAIN) for s in seeds]
    params = model.init_params(cfg, gens, dtype)
    sets = data.eval_sets([data.generator(s, data.EVAL) for s in seeds], v, cfg, dtype)
    rule = StepRuleState(cfg, params)
    steps, Ws, qs, metrics = [], [], [], []
    finite = torch.ones(len(seeds), dtype=torch.bool)
    for step in range(cfg.steps + 1):
        if step % cfg.checkpoint_every == 0 or step == cfg.steps:
            steps.append(step)
            Ws.append(model.w_ov(params).detach().clone())
            qs.append(params["q"].detach().clone())
            metrics.append(evaluate(cfg, params, sets))
        if step == cfg.steps:
            break
        batch = data.train_batch(gens, v, cfg, dtype)
        loss = model.cross_entropy(model.logits(cfg, params, batch.counts), batch.target)
        finite &= torch.isfinite(loss.detach())
        grads = torch.autograd.grad(loss.sum(), list(params.values()))
        rule(params, dict(zip(params, grads, strict=True)))
    for p in params.values():
        finite &= torch.isfinite(p.detach().flatten(1)).all(1)
    stacked = {k: torch.stack([m[k] for m in metrics]) for k in metrics[0]}
    return Record(steps, torch.stack(Ws), torch.stack(qs), stacked, finite)
