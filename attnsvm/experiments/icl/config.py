"""The ``icl.*`` keys of experiment ``icl`` and what each accepts: a leaf schema that imports
nothing of attnsvm but the config's constraints.

python -m attnsvm.run experiment=icl icl.N=40 icl.spectrum=linear icl.kappa=4
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import ClassVar

from attnsvm.config.constraints import Interval, Rule, Several, check_constraints
from attnsvm.config.schema import RunBase


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

    CONSTRAINTS: ClassVar = {
        **{key: Interval(int, 1) for key in ("d", "N", "layers", "steps", "batch")},
        "checkpoint_every": Interval(int, 1),
        **{key: Interval(int, 2) for key in ("test_prompts", "fit_prompts")},
        "kappa": Interval(float, 1, note="eigenvalues from 1 to kappa"),
        "noise": Interval(float, 0, note="the label noise sigma"),
        "init_scale": Interval(float, 0),
        "lr": Interval(float, 0, closed="neither", finite=True),  # nan, inf: steps non-finite
        "betas": Several(Interval(float, 0, 1), 2),
    }
    RULES: ClassVar = (
        Rule(
            "spectrum_file",
            "a path exactly when icl.spectrum=file",
            lambda c: (c.spectrum == Spectrum.file) == (c.spectrum_file is not None),
        ),
        Rule(
            "gradient",
            "population only with icl.layers=1 and icl.parameterization=merged|structured "
            "(no closed form otherwise); sample",
            lambda c: (
                c.gradient == Gradient.sample
                or (c.layers == 1 and c.parameterization != Parameterization.full)
            ),
        ),
    )

    def __post_init__(self) -> None:
        check_constraints(self, "icl")


@dataclass
class IclRun(RunBase):
    """One job of experiment=icl: the keys every job has and its own group (its prompts, model
    and step rule are its own keys)."""

    experiment: str = "icl"
    icl: Config = field(default_factory=Config)
