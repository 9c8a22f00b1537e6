"""``experiment=nexttoken``: next-token prediction; does GD find the graph-SVM of the
token-priority graphs, and the finite part on their cycles? (job.py, docs/nexttoken.md)

    python -m attnsvm.run -m +sweeps=nexttoken_global
"""

from __future__ import annotations

from attnsvm.config.checks import ConfigError, plain_name
from attnsvm.config.enums import Device, Init, Optimizer
from attnsvm.config.plugins import later
from attnsvm.experiments.nexttoken.config import NexttokenConfig

Config = NexttokenConfig  # the entry's config group (key: NAME)

NAME = "nexttoken"
DATASETS = ("nexttoken",)  # a vocabulary, sequences of ids and labels: read by nothing else
FUSED_UNFIT = "its losses train in torch"
# not dtype: it trains in float64, whatever dtype says
READS = ("dataset", "parameterization", "optimizer", "solver", "metrics.epsilon")


def published() -> list:
    """Its sweeps' rows of the README's results tables (readme_rows.py)."""
    from attnsvm.experiments.nexttoken.readme_rows import SWEEPS

    return SWEEPS


run_job = later("attnsvm.experiments.nexttoken.job:run_job")
summary_text = later("attnsvm.experiments.nexttoken.job:summary_text")
figures = later("attnsvm.experiments.nexttoken.plots:figures")


def check(run) -> None:
    """Its data set, and the inits, step rules and device its training supports."""
    if run.dataset.generator.value != "nexttoken":
        raise ConfigError(
            f"experiment=nexttoken needs dataset=nexttoken (a vocabulary, sequences of ids "
            f"and labels); got dataset.generator={run.dataset.generator.value}"
        )
    if run.parameterization.init not in (Init.torch, Init.zeros):
        raise ConfigError(
            f"parameterization.init={run.parameterization.init.value} is invalid for "
            f"experiment=nexttoken: accepted values are torch, zeros"
        )
    if run.optimizer.kind not in (Optimizer.ngd, Optimizer.gd):
        raise ConfigError(
            f"optimizer.kind={plain_name(run.optimizer.kind)} is invalid for "
            f"experiment=nexttoken: accepted values are ngd, gd"
        )
    if run.device != Device.cpu:
        raise ConfigError(
            f"device={run.device.value} is invalid for experiment=nexttoken (it trains on "
            f"the cpu): accepted values are cpu"
        )
