"""experiment=nexttoken's config: its group ``nexttoken`` (shapes of values only) and its job's
config ``NexttokenRun`` (conf/experiment/nexttoken.yaml composes it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import ClassVar

from attnsvm.config.constraints import Interval, check_constraints
from attnsvm.config.schema import (
    MetricsConfig,
    OptimizerConfig,
    ParameterizationConfig,
    RunBase,
    SolverConfig,
)
from attnsvm.data.dataset_config import DatasetConfig


class NexttokenLoss(str, Enum):
    """Losses of experiment=nexttoken (docs/nexttoken.md)."""

    nll = "nll"  # -log(attention mass on the label's id) (global notebook)
    lsq2 = "lsq2"  # (1 - softmax_k(e_k^T X^T s)_y)^2, a vocabulary classifier (local notebook)


@dataclass
class Config:
    """Next-token prediction (docs/math.md#next-token-prediction): loss, local selection, which SVMs
    are solved."""

    loss: NexttokenLoss = NexttokenLoss.nll
    local_threshold: float = 0.01  # selected ids C_i = {k : attention mass on k > threshold}
    nuclear: bool | None = None  # solve the nuclear graph-SVMs; null: with parameterization=kq

    CONSTRAINTS: ClassVar = {"local_threshold": Interval(float, 0, 1, closed="neither")}

    def __post_init__(self) -> None:
        check_constraints(self, "nexttoken")


@dataclass
class NexttokenRun(RunBase):
    """One job of experiment=nexttoken: its data set (dataset=nexttoken), the parameterization,
    step rule, SVM solver and convergence threshold (metrics.epsilon) it shares with gd, and its
    own group. It trains in float64, whatever dtype says."""

    experiment: str = "nexttoken"
    dataset: DatasetConfig = field(default_factory=DatasetConfig)  # its YAML: dataset=nexttoken
    parameterization: ParameterizationConfig = field(default_factory=ParameterizationConfig)
    optimizer: OptimizerConfig = field(default_factory=OptimizerConfig)
    solver: SolverConfig = field(default_factory=SolverConfig)
    metrics: MetricsConfig = field(default_factory=MetricsConfig)
    nexttoken: Config = field(default_factory=Config)
