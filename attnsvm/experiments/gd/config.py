"""gd's job config, ``RunConfig``: the keys every job has (RunBase) and the groups the paper's
pipeline reads: its data set, parameterization, step rule, SVM solver, head and metrics, and
``train`` and ``loss``. conf/experiment/gd.yaml composes it with one option per group."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from attnsvm.config.constraints import Interval
from attnsvm.config.enums import Loss
from attnsvm.config.schema import (
    HeadConfig,
    MetricsConfig,
    OptimizerConfig,
    ParameterizationConfig,
    RunBase,
    SolverConfig,
)
from attnsvm.data.dataset_config import DatasetConfig


@dataclass
class RunConfig(RunBase):
    """One job of the paper's pipeline (experiment=gd, the default)."""

    experiment: str = "gd"
    dataset: DatasetConfig = field(default_factory=DatasetConfig)
    parameterization: ParameterizationConfig = field(default_factory=ParameterizationConfig)
    optimizer: OptimizerConfig = field(default_factory=OptimizerConfig)
    solver: SolverConfig = field(default_factory=SolverConfig)
    head: HeadConfig = field(default_factory=HeadConfig)
    metrics: MetricsConfig = field(default_factory=MetricsConfig)
    train: bool = True  # false: only the SVMs at alpha = opt (rank / feasibility experiments)
    loss: Loss = Loss.logistic  # l(u) of the loss (1/n) sum_i l(Y_i f_i)
    artifacts: bool = True  # arrays.npz: each seed's final W (v), tokens, SVMs, draw identity
    artifact_checkpoints: bool = False  # arrays.npz also keeps W (and v) at every checkpoint
    artifact_max_mb: float = 10.0  # arrays larger than this (MB, uncompressed) are not kept; 0: any

    CONSTRAINTS: ClassVar = {
        **RunBase.CONSTRAINTS,
        "artifact_max_mb": Interval(float, 0, finite=True, noun="megabytes"),
    }
