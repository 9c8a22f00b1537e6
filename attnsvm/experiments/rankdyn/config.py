"""``rankdyn.*``: the keys of experiment=rankdyn and what each accepts (imports nothing of attnsvm
but the config's constraints).

python -m attnsvm.run experiment=rankdyn rankdyn.alpha=1e-3 rankdyn.rule=gd
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field as _field
from enum import Enum
from typing import ClassVar

from attnsvm.config.constraints import Interval, NoneOr, ReadOnlyWhen, check_constraints
from attnsvm.config.schema import RunBase, SolverConfig

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

    CONSTRAINTS: ClassVar = {
        "alpha": Interval(float, 0, closed="neither", finite=True),
        "rank_frac": Interval(float, 0, 1, closed="neither"),
        "lr": NoneOr(Interval(float, 0, closed="neither", finite=True)),  # nan, inf: non-finite
        "steps": Interval(int, 1),
        "checkpoints": Interval(int, 2),
        "n": Interval(int, 1),
        "T": Interval(int, 2, note="a choice between tokens"),
        "d": Interval(int, 1),
        "m": NoneOr(Interval(int, 1)),
        "eps": Interval(float, 0),
        "penalty": Interval(float, 0),
    }
    READ_ONLY: ClassVar = (
        ReadOnlyWhen("eps", "rule", "rankdyn.rule=ngd", lambda c: c.rule == Rule.ngd),
    )

    def __post_init__(self) -> None:
        check_constraints(self, "rankdyn")

    @property
    def step_size(self) -> float:
        """``lr``, or the rule's default: 0.5 for plain GD, the published 0.1 for NGD."""
        return self.lr if self.lr is not None else DEFAULT_LR[self.rule]

    @property
    def width(self) -> int:
        """The width of K and Q."""
        return self.m or self.d


@dataclass
class RankdynRun(RunBase):
    """One job of experiment=rankdyn: the keys every job has, its own group, and the SVM solver
    of its nuclear-norm SVMs (its instances, model and step rule are its own keys)."""

    experiment: str = "rankdyn"
    rankdyn: Config = _field(default_factory=Config)
    solver: SolverConfig = _field(default_factory=SolverConfig)
