"""experiment=regpath's config: its group ``regpath`` (shapes of values only) and its job's
config ``RegpathRun`` (conf/experiment/regpath.yaml composes it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from attnsvm.config.constraints import Interval, Rule, check_constraints
from attnsvm.config.schema import HeadConfig, ParameterizationConfig, RunBase, SolverConfig
from attnsvm.data.dataset_config import DatasetConfig

POSITIVE = Interval(float, 0, closed="neither", finite=True)


@dataclass
class Config:
    """Regularization path: min L s.t. ||W||_F <= R, or ||K||^2 + ||Q||^2 <= 2R for (K,Q)."""

    r_min: float = 0.5
    r_max: float = 200.0
    points: int = 12  # geometric grid of R
    steps: int = 500  # projected GD steps per R (warm-started from the previous R)
    lr: float = 0.1  # normalized step, relative to R
    svm_start_noise: float = 0.1  # second start: SVM direction + this relative Gaussian noise

    CONSTRAINTS: ClassVar = {
        "r_min": POSITIVE,
        "r_max": POSITIVE,
        "points": Interval(int, 2),
        "steps": Interval(int, 1),
        "lr": POSITIVE,
        "svm_start_noise": Interval(float, 0, finite=True),
    }
    RULES: ClassVar = (
        Rule(
            "r_max",
            "floats > regpath.r_min",
            lambda c: c.r_max > c.r_min,
            actual=lambda c: f"{c.r_min:g}",
        ),
    )

    def __post_init__(self) -> None:
        check_constraints(self, "regpath")


@dataclass
class RegpathRun(RunBase):
    """One job of experiment=regpath: the data set, parameterization, head and SVM solver it
    shares with gd, and its own group (its projected GD's keys)."""

    experiment: str = "regpath"
    dataset: DatasetConfig = field(default_factory=DatasetConfig)
    parameterization: ParameterizationConfig = field(default_factory=ParameterizationConfig)
    solver: SolverConfig = field(default_factory=SolverConfig)
    head: HeadConfig = field(default_factory=HeadConfig)
    regpath: Config = field(default_factory=Config)
