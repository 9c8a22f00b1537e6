"""Step rules of the torch training engine: ``optimizer.kind`` picks one; yours by import path.

A step rule updates one parameter tensor of the batch (W, or each of K and Q separately: each
factor is normalized by its own gradient norm, docs/math.md#the-epsilon-freeze):

    rule = make_optimizer(cfg.optimizer)   # one per parameter tensor (Adam keeps moments)
    X_new = rule.update(X, G, grad_norm)   # X, G (R, a, b); grad_norm (R,) = ||G|| per seed

A rule with ``needs_loss = True`` (Polyak) is also given ``loss=`` (R,): the loss at X above
its infimum (``train.loss_floor``).

Your own: ``optimizer.kind=mylab.optim:make`` with ``make(cfg) -> rule`` (``cfg.kwargs`` its
arguments); it trains with the torch engine (the fused engine implements ngd and gd in C).
"""

from __future__ import annotations

import torch

from attnsvm.config.checks import ConfigError
from attnsvm.config.enums import Optimizer, Schedule
from attnsvm.config.plugins import load_object
from attnsvm.config.schema import OptimizerConfig
from attnsvm.kernel.batchops import matmul, sum_last


class NormalizedGD:
    """X - lr G / (||G|| + eps) per seed; a zero gradient takes no step (published NGD)."""

    svm_norm = "fro"  # the SVM norm of its geometry: the limit it is compared with

    def __init__(self, cfg: OptimizerConfig):
        self.lr, self.eps = cfg.lr, cfg.eps

    def update(self, X: torch.Tensor, G: torch.Tensor, grad_norm: torch.Tensor) -> torch.Tensor:
        step = torch.where(grad_norm > 0, self.lr / (grad_norm + self.eps), 0.0)
        return X - _per_seed(step, G) * G


class GD:
    """X - lr G."""

    svm_norm = "fro"

    def __init__(self, cfg: OptimizerConfig):
        self.lr = cfg.lr

    def update(self, X: torch.Tensor, G: torch.Tensor, grad_norm: torch.Tensor) -> torch.Tensor:
        return X - _per_seed(torch.full_like(grad_norm, self.lr), G) * G


def _per_seed(t: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """(R,) shaped to broadcast against ``like``, a (R, ...) parameter (W, K, Q or a head v)."""
    return t.reshape(-1, *[1] * (like.dim() - 1))


def _entrywise_norm(G: torch.Tensor, q: float) -> torch.Tensor:
    """(sum_jk |G_jk|^q)^(1/q) per seed, a batch-invariant sum."""
    return sum_last(G.abs().flatten(1) ** q) ** (1 / q)


class MirrorDescent:
    """lp mirror descent with potential psi(W) = ||W||_p^p / p, entrywise
    (docs/math.md#mirror-descent-and-lp-svms):
    W' = sign(W)|W|^(p-1) - lr G / (||G||_q + eps), q = p / (p - 1) (``normalize``; else
    lr G), then W = sign(W')|W'|^(1/(p-1)). It converges in direction to the lp-SVM."""

    def __init__(self, cfg: OptimizerConfig):
        self.lr, self.eps, self.p, self.normalize = cfg.lr, cfg.eps, cfg.p, cfg.normalize

    @staticmethod
    def limit_norm(cfg: OptimizerConfig) -> str:
        """The lp-SVM of its potential's p ("l3" for p = 3; p = 2 is the Frobenius one)."""
        return "fro" if cfg.p == 2 else f"l{cfg.p:g}"

    def update(self, X: torch.Tensor, G: torch.Tensor, grad_norm: torch.Tensor) -> torch.Tensor:
        p = self.p
        dual = torch.sign(X) * X.abs() ** (p - 1)  # grad psi(W)
        if self.normalize:
            step = self.lr / (_entrywise_norm(G, p / (p - 1)) + self.eps)
            dual = dual - _per_seed(step, G) * G
        else:
            dual = dual - self.lr * G
        return torch.sign(dual) * dual.abs() ** (1 / (p - 1))


class SignDescent:
    """X - lr sign(G): steepest descent in the entrywise l_inf norm (normalized: every entry
    moves by lr), conjectured to pick the max-norm SVM."""

    svm_norm = "max"  # entrywise l_inf steepest descent: the max-norm SVM

    def __init__(self, cfg: OptimizerConfig):
        self.lr = cfg.lr

    def update(self, X: torch.Tensor, G: torch.Tensor, grad_norm: torch.Tensor) -> torch.Tensor:
        return X - self.lr * torch.sign(G)


class SpectralDescent:
    """X - lr U V^T for G = U S V^T: steepest descent in the spectral norm (Muon without
    momentum), conjectured to pick the spectral-norm SVM; a zero gradient takes no step."""

    svm_norm = "spectral"

    def __init__(self, cfg: OptimizerConfig):
        self.lr = cfg.lr

    def update(self, X: torch.Tensor, G: torch.Tensor, grad_norm: torch.Tensor) -> torch.Tensor:
        M = G if G.dim() == 3 else G.unsqueeze(-1)  # a vector v: U V^T = g / ||g||
        U, _, Vh = torch.linalg.svd(M, full_matrices=False)
        step = torch.where(grad_norm > 0, self.lr, 0.0)
        return X - _per_seed(step, G) * matmul(U, Vh).reshape(G.shape)


class Adam:
    """torch.optim.Adam's update (no weight decay, no amsgrad), op for op as its single-tensor
    implementation: m <- lerp(m, G, 1 - b1), v <- b2 v + (1 - b2) G^2,
    X <- X - lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps). One instance per
    parameter tensor (train.py makes one for each), so the moments are that tensor's."""

    svm_norm = "max"  # sign descent with momentum: the max-norm SVM (conjectured)

    def __init__(self, cfg: OptimizerConfig):
        self.lr, self.eps, (self.b1, self.b2) = cfg.lr, cfg.eps, cfg.betas
        self.t, self.m, self.v = 0, None, None

    def update(self, X: torch.Tensor, G: torch.Tensor, grad_norm: torch.Tensor) -> torch.Tensor:
        if self.m is None:
            self.m, self.v = torch.zeros_like(X), torch.zeros_like(X)
        self.t += 1
        self.m = self.m.lerp(G, 1 - self.b1)
        self.v = self.v * self.b2 + (1 - self.b2) * G * G
        step_size = self.lr / (1 - self.b1**self.t)
        denom = self.v.sqrt() / (1 - self.b2**self.t) ** 0.5 + self.eps
        return X - step_size * (self.m / denom)


class AdamW(Adam):
    """torch.optim.AdamW's update: the decoupled decay X <- X (1 - lr lambda) (lambda =
    ``optimizer.weight_decay``), then Adam's step. Xie & Li (2024): where full-batch AdamW
    converges, it reaches a KKT point of min L s.t. ||W||_max <= 1/lambda (``kkt_ball``)."""

    svm_norm = "max"  # the SVM solved beside its own limit, for comparison
    kkt_ball = "max"  # its limit: a KKT point of min L over the max-norm ball of radius 1/lambda

    def __init__(self, cfg: OptimizerConfig):
        super().__init__(cfg)
        self.weight_decay = cfg.weight_decay

    def update(self, X: torch.Tensor, G: torch.Tensor, grad_norm: torch.Tensor) -> torch.Tensor:
        return super().update(X * (1 - self.lr * self.weight_decay), G, grad_norm)


class Signum:
    """X - lr sign(m), m <- beta m + (1 - beta) G (m(0) = 0, ``optimizer.beta``): sign descent
    on a momentum average. Proven for linear models to reach the l_inf max margin at any batch
    size (Baek, Song, Yun 2025), so its limit is the max-norm SVM."""

    svm_norm = "max"

    def __init__(self, cfg: OptimizerConfig):
        self.lr, self.beta, self.m = cfg.lr, cfg.beta, None

    def update(self, X: torch.Tensor, G: torch.Tensor, grad_norm: torch.Tensor) -> torch.Tensor:
        if self.m is None:
            self.m = torch.zeros_like(X)
        self.m = self.m.lerp(G, 1 - self.beta)
        return X - self.lr * torch.sign(self.m)


class Polyak:
    """GD with the Polyak step X - lr (L(X) - L*) / ||G||^2 G (Vasudeva et al.), L* the
    infimum of the loss (train.loss_floor: the best one-hot attention; 0 for a trained head);
    a zero gradient takes no step. ``needs_loss``: train.py gives it ``loss`` = L - L*."""

    svm_norm = "fro"

    needs_loss = True

    def __init__(self, cfg: OptimizerConfig):
        self.lr = cfg.lr

    def update(self, X, G, grad_norm, loss=None) -> torch.Tensor:
        safe = torch.where(grad_norm > 0, grad_norm, 1.0)
        step = torch.where(grad_norm > 0, self.lr * loss / safe**2, 0.0)
        return X - _per_seed(step, G) * G


OPTIMIZERS = {
    Optimizer.ngd: NormalizedGD,
    Optimizer.gd: GD,
    Optimizer.md: MirrorDescent,
    Optimizer.sign: SignDescent,
    Optimizer.spectral: SpectralDescent,
    Optimizer.adam: Adam,
    Optimizer.polyak: Polyak,
    Optimizer.signum: Signum,
    Optimizer.adamw: AdamW,
}

# optimizer.schedule -> the factor of lr at step t = 0, 1, ... (None: lr at every step)
SCHEDULES = {
    Schedule.constant: None,
    Schedule.poly: lambda t, a: (t + 2) ** (-a),  # Zhang, Zou, Cao (2024): Adam -> l_inf margin
}


class Scheduled:
    """A step rule whose ``lr`` follows ``optimizer.schedule``: before step t it is set to
    lr * factor(t, decay_a); everything else is the rule's own (``needs_loss`` included)."""

    def __init__(self, rule, cfg: OptimizerConfig):
        self.rule, self.base, self.a, self.t = rule, cfg.lr, cfg.decay_a, 0
        self.factor = SCHEDULES[cfg.schedule]

    def __getattr__(self, name: str):
        return getattr(self.rule, name)

    def update(self, X, G, grad_norm, **extra) -> torch.Tensor:
        self.rule.lr = self.base * self.factor(self.t, self.a)
        self.t += 1
        return self.rule.update(X, G, grad_norm, **extra)


def rule_class(kind):
    """The built-in step rule's class, or a plug-in's factory (None where it does not import
    here): where a rule's declarations (``svm_norm``, ``limit_norm``, ``kkt_ball``) are read."""
    return OPTIMIZERS.get(kind) or _plugin(kind)


def kkt_ball(cfg: OptimizerConfig) -> str | None:
    """The norm whose ball of radius 1/``optimizer.weight_decay`` the rule's limit is a KKT
    point in (AdamW: "max"), declared as ``kkt_ball``; None for a rule whose limit is an SVM."""
    return getattr(rule_class(cfg.kind), "kkt_ball", None)


def limit_norm(cfg: OptimizerConfig) -> str:
    """The SVM norm the step rule's geometry points to (its class's ``svm_norm``, or its
    ``limit_norm(cfg)`` where it depends on the config); a plug-in declares it the same way on
    its factory (``make.svm_norm = "max"``), else Frobenius. An experiment that compares a trained
    W with its limit solves this SVM whatever ``solver.norms`` lists."""
    rule = rule_class(cfg.kind)
    if hasattr(rule, "limit_norm"):
        return rule.limit_norm(cfg)
    return getattr(rule, "svm_norm", "fro")


def _plugin(path: str):
    """A plug-in step rule's factory; None where it does not import here (an aggregate of
    results written with it: its limit was resolved when the job ran)."""
    try:
        return load_object(path, "optimizer.kind")
    except ConfigError:
        return None


def make_optimizer(cfg: OptimizerConfig):
    """The configured step rule for one parameter tensor: a built-in, or your factory's; under
    a schedule other than constant, wrapped to set its ``lr`` before every step (``Scheduled``:
    a rule without ``lr`` cannot follow one)."""
    if cfg.kind in OPTIMIZERS:
        rule = OPTIMIZERS[cfg.kind](cfg)
    else:
        rule = load_object(cfg.kind, "optimizer.kind")(cfg)
    if SCHEDULES[cfg.schedule] is None:
        return rule
    if not hasattr(rule, "lr"):
        raise ConfigError(
            f"optimizer.schedule={cfg.schedule} sets the step rule's lr at every step, and "
            f"optimizer.kind={getattr(cfg.kind, 'value', cfg.kind)} has none: accepted values of "
            "optimizer.schedule for it: "
            "constant"
        )
    return Scheduled(rule, cfg)
