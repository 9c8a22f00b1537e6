"""``rankdyn.*``: the keys of experiment=rankdyn and their checks (imports nothing of attnsvm).

python -m attnsvm.run experiment=rankdyn rankdyn.alpha=1e-3 rankdyn.rule=gd
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from enum import Enum

from attnsvm.config.checks import ConfigError

FLOAT64_EPS = 2.220446049250313e-16


class Param(str, Enum):
    """What is trained: the factors K, Q with W = K Q^T, or the merged W (the control)."""

    kq = "kq"
    w = "w"


class Rule(str, Enum):
    """Plain GD (the plateaus of small initialization) or the paper's normalized GD."""

    gd = "gd"
    ngd = "ngd"


DEFAULT_LR = {Rule.gd: 0.5, Rule.ngd: 0.1}


@dataclass
class Config:
    """One job of the incremental-rank experiment (defaults: the paper's (6, 8, 10) shape)."""

    alpha: float = 1e-2  # K, Q ~ alpha * N(0, 1) entries; W(0) = K(0) Q(0)^T for the control
    rank_frac: float = 0.05  # eff_rank = #{sigma_k > rank_frac * sigma_max} of K Q^T
    parameterization: Param = Param.kq
    rule: Rule = Rule.gd
    lr: float | None = None  # None: 0.5 for gd (small: the curvature is ~1e-2), 0.1 for ngd
    steps: int = 10000
    checkpoints: int = 240  # log-spaced checkpoint steps in [1, steps], plus step 0
    n: int = 6
    T: int = 8
    d: int = 10
    m: int | None = None  # width of K, Q (default d)
    eps: float = FLOAT64_EPS  # ngd: g / (||g|| + eps), the published value
    penalty: float = FLOAT64_EPS  # lambda (|K|^2 + |Q|^2), the paper's vanishing penalty

    def __post_init__(self) -> None:
        for f in fields(self):
            kind = {"parameterization": Param, "rule": Rule}.get(f.name)
            value = getattr(self, f.name)
            if kind is not None and not isinstance(value, kind):
                _require(value in {k.value for k in kind}, f.name, _names(kind), value)
                setattr(self, f.name, kind(value))
        _require(0 < self.alpha < math.inf, "alpha", "finite floats > 0", self.alpha)
        _require(0 < self.rank_frac < 1, "rank_frac", "floats in (0, 1)", self.rank_frac)
        lr_ok = self.lr is None or 0 < self.lr < math.inf  # nan and inf: every step non-finite
        _require(lr_ok, "lr", "null or finite floats > 0", self.lr)
        _require(self.steps >= 1, "steps", "integers >= 1", self.steps)
        _require(self.checkpoints >= 2, "checkpoints", "integers >= 2", self.checkpoints)
        for key in ("n", "T", "d"):
            _require(getattr(self, key) >= 1, key, "integers >= 1", getattr(self, key))
        _require(self.T >= 2, "T", "integers >= 2 (a choice between tokens)", self.T)
        _require(self.m is None or self.m >= 1, "m", "null or integers >= 1", self.m)
        _require(self.eps >= 0, "eps", "floats >= 0", self.eps)
        _require(self.penalty >= 0, "penalty", "floats >= 0", self.penalty)

    @property
    def step_size(self) -> float:
        """``lr``, or the rule's default: 0.5 for plain GD, the published 0.1 for NGD."""
        return self.lr if self.lr is not None else DEFAULT_LR[self.rule]

    @property
    def width(self) -> int:
        """The width of K and Q."""
        return self.m or self.d


def _names(kind: type[Enum]) -> str:
    return ", ".join(k.value for k in kind)


def _require(ok: bool, key: str, accepted: str, value: object) -> None:
    if not ok:
        raise ConfigError(f"rankdyn.{key}={value}: accepted {accepted}")
