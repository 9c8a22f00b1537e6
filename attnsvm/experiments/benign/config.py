"""``benign.*``: the keys of experiment=benign and what each accepts (imports nothing of attnsvm
but the config's constraints), so a bad value is refused at composition, naming the key.

python -m attnsvm.run experiment=benign benign.setting=token_selection benign.snr=0.5
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from dataclasses import field as _field
from enum import Enum
from typing import ClassVar

from attnsvm.config.constraints import Interval, NoneOr, check_constraints
from attnsvm.config.constraints import Rule as KeyRule
from attnsvm.config.schema import RunBase


class Setting(str, Enum):
    """Which paper's model and data (docs/benign.md)."""

    two_token = "two_token"  # Magen et al. 2024: f = v^T X^T softmax(X p), p and v trained
    token_selection = "token_selection"  # Sakamoto & Sato 2025: f = sum_t softmax(XWp)_t x_t^T nu


class Rule(str, Enum):
    """Full-batch GD, or GD normalized by the joint gradient norm of the trained tensors."""

    gd = "gd"
    ngd = "ngd"


class Init(str, Enum):
    """paper: each paper's start (two_token: p, v ~ init_scale N(0, 1); token_selection:
    W Kaiming-uniform, p = 0); normal: every trained entry init_scale N(0, 1)."""

    paper = "paper"
    normal = "normal"


DEFAULT_T = {Setting.two_token: 2, Setting.token_selection: 8}
DEFAULT_LR = {Setting.two_token: 0.1, Setting.token_selection: 0.1}
DEFAULT_STEPS = {Setting.two_token: 100, Setting.token_selection: 300}


@dataclass
class Config:
    """One job of the benign-overfitting experiment (defaults: a laptop-sized two_token job)."""

    setting: Setting = Setting.two_token
    n: int = 20  # training samples (the classes balanced: n // 2 labelled +1)
    T: int | None = None  # tokens per sample; None: 2 (two_token, the only value), 8 otherwise
    d: int = 200  # token dimension (d >> n: the regime of both papers)
    snr: float = 0.5  # signal norm / sqrt(d): rho = snr sqrt(d) (two_token), s = snr sqrt(d)
    eta: float = 0.2  # label-flip rate: exactly round(eta n) training labels flipped
    rho: float = 0.1  # token_selection: the weak tokens carry rho mu_y and rho mu_{-y}
    test: int = 1000  # clean test samples per seed
    rule: Rule = Rule.gd
    lr: float | None = None  # None: 0.1 (both; the official token_selection value is 5e-3)
    steps: int | None = None  # None: 100 (two_token), 300 (token_selection)
    checkpoints: int = 20  # log-spaced checkpoint steps in [1, steps], plus steps 0, 1, 2
    init: Init = Init.paper
    init_scale: float = 0.01  # the scale of N(0, 1) starts (two_token, and init=normal)
    margin: float = 0.05  # benign: every label fit and test accuracy >= Bayes - margin
    eps: float = 2.220446049250313e-16  # ngd: g / (||g|| + eps)

    CONSTRAINTS: ClassVar = {
        "n": Interval(int, 2, note="both classes"),
        "d": Interval(int, 1),
        "snr": Interval(float, 0, closed="neither", finite=True),
        "eta": Interval(float, 0, 0.5),
        "rho": Interval(float, 0, 1),
        "test": Interval(int, 2),
        "lr": NoneOr(Interval(float, 0, closed="neither", finite=True)),
        "steps": NoneOr(Interval(int, 1)),
        "checkpoints": Interval(int, 2),
        "init_scale": Interval(float, 0),
        "margin": Interval(float, 0, 1),
        "eps": Interval(float, 0),
    }
    RULES: ClassVar = (
        KeyRule(
            "T",
            "null or 2 with benign.setting=two_token",
            lambda c: c.setting != Setting.two_token or c.T in (None, 2),
        ),
        KeyRule(
            "T",
            "null or integers >= 3 with benign.setting=token_selection",
            lambda c: c.setting == Setting.two_token or c.T is None or c.T >= 3,
        ),
        KeyRule(
            "d",
            "integers >= 3 with benign.setting=two_token (e_1, e_2 and noise)",
            lambda c: c.setting != Setting.two_token or c.d >= 3,
        ),
        KeyRule(
            "d",
            "integers >= 2 with benign.setting=token_selection (mu_1 = s e_1, mu_2 = s e_2)",
            lambda c: c.setting == Setting.two_token or c.d >= 2,
        ),
    )

    def __post_init__(self) -> None:
        check_constraints(self, "benign")

    @property
    def tokens(self) -> int:
        """T, or the setting's default."""
        return self.T if self.T is not None else DEFAULT_T[self.setting]

    @property
    def step_size(self) -> float:
        """lr, or the setting's default."""
        return self.lr if self.lr is not None else DEFAULT_LR[self.setting]

    @property
    def n_steps(self) -> int:
        """steps, or the setting's default."""
        return self.steps if self.steps is not None else DEFAULT_STEPS[self.setting]

    @property
    def signal(self) -> float:
        """The signal norm: snr sqrt(d) (the noise tokens' norm is about sqrt(d))."""
        return self.snr * math.sqrt(self.d)

    @property
    def flips(self) -> int:
        """How many training labels are flipped."""
        return int(round(self.eta * self.n))


@dataclass
class BenignRun(RunBase):
    """One job of experiment=benign: the keys every job has and its own group (its data, model
    and step rule are its own keys)."""

    experiment: str = "benign"
    benign: Config = _field(default_factory=Config)
