"""The ``icl.*`` keys of experiment ``icl``: a leaf schema that imports nothing of attnsvm.

python -m attnsvm.run experiment=icl icl.N=40 icl.spectrum=linear icl.kappa=4
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import Enum

from attnsvm.config.checks import ConfigError


class Spectrum(str, Enum):
    identity = "identity"  # Lambda = I_d
    linear = "linear"  # eigenvalues evenly spaced from 1 to icl.kappa
    file = "file"  # icl.spectrum_file: d eigenvalues or a d x d covariance (.npy or text)


class Parameterization(str, Enum):
    merged = "merged"  # one d x d matrix per layer: y_hat = x_q^T A h
    structured = "structured"  # W^PV = [[0, 0], [0, u]], W^KQ = [[W11, 0], [0, 0]] per layer
    full = "full"  # both (d+1) x (d+1) matrices per layer, every entry trained


class Optimizer(str, Enum):
    sgd = "sgd"
    adam = "adam"


class Gradient(str, Enum):
    sample = "sample"  # autograd of the loss on icl.batch fresh prompts per step and seed
    population = "population"  # exact gradient of the closed-form population loss (one layer)


class Schedule(str, Enum):
    constant = "constant"
    cosine = "cosine"  # lr * (1 + cos(pi t / steps)) / 2: the last steps average the noise out


def _check(ok: bool, key: str, accepted: str, value) -> None:
    if not ok:
        raise ConfigError(f"icl.{key}={value!r}: accepted {accepted}")


def _enum(obj, key: str, kind: type[Enum]) -> None:
    value = getattr(obj, key)
    value = getattr(value, "value", value)
    accepted = [e.value for e in kind]
    _check(value in accepted, key, " | ".join(accepted), value)
    setattr(obj, key, kind(value))


@dataclass
class Config:
    """In-context linear regression with linear self-attention (docs/icl.md)."""

    d: int = 5
    N: int = 20  # context length: examples per prompt
    spectrum: Spectrum = Spectrum.identity
    kappa: float = 4.0  # spectrum=linear: the largest eigenvalue (the smallest is 1)
    spectrum_file: str | None = None  # spectrum=file
    noise: float = 0.0  # sigma: y_i = w^T x_i + eps_i, eps_i ~ N(0, sigma^2), the query too
    parameterization: Parameterization = Parameterization.merged
    layers: int = 1
    init_scale: float = 0.1  # every trained entry starts as init_scale * N(0, 1)
    optimizer: Optimizer = Optimizer.adam
    lr: float = 0.02
    betas: list[float] = field(default_factory=lambda: [0.9, 0.999])  # adam
    schedule: Schedule = Schedule.cosine
    steps: int = 500
    batch: int = 1000  # fresh prompts per step and seed
    gradient: Gradient = Gradient.sample
    checkpoint_every: int = 25
    test_prompts: int = 10000  # fresh test prompts per seed: icl_loss and its baselines
    fit_prompts: int = 20000  # prompts on which the L-step preconditioned-GD baseline is fitted

    def __post_init__(self) -> None:
        for key, kind in [
            ("spectrum", Spectrum),
            ("parameterization", Parameterization),
            ("optimizer", Optimizer),
            ("gradient", Gradient),
            ("schedule", Schedule),
        ]:
            _enum(self, key, kind)
        for key in ("d", "N", "layers", "steps", "batch", "checkpoint_every"):
            _check(getattr(self, key) >= 1, key, "integers >= 1", getattr(self, key))
        for key in ("test_prompts", "fit_prompts"):
            _check(getattr(self, key) >= 2, key, "integers >= 2", getattr(self, key))
        _check(self.kappa >= 1, "kappa", "floats >= 1 (eigenvalues from 1 to kappa)", self.kappa)
        _check(self.noise >= 0, "noise", "floats >= 0 (the label noise sigma)", self.noise)
        _check(self.init_scale >= 0, "init_scale", "floats >= 0", self.init_scale)
        _check(0 < self.lr < math.inf, "lr", "finite floats > 0", self.lr)  # not nan, not inf
        betas = list(self.betas)
        _check(
            len(betas) == 2 and all(0 <= b < 1 for b in betas),
            "betas",
            "two floats in [0, 1)",
            betas,
        )
        _check(
            (self.spectrum == Spectrum.file) == (self.spectrum_file is not None),
            "spectrum_file",
            "a path exactly when icl.spectrum=file",
            self.spectrum_file,
        )
        closed = self.layers == 1 and self.parameterization != Parameterization.full
        _check(
            self.gradient == Gradient.sample or closed,
            "gradient",
            "population only with icl.layers=1 and icl.parameterization=merged|structured "
            "(no closed form otherwise); sample",
            self.gradient.value,
        )
