"""``experiment=nexttoken``: next-token prediction; does GD find the graph-SVM of the
token-priority graphs, and the finite part on their cycles? (job.py, docs/nexttoken.md)

    python -m attnsvm.run -m +sweeps=nexttoken_global
"""

from __future__ import annotations

from attnsvm.config.checks import ConfigError, plain_name
from attnsvm.config.enums import Device, Init, Optimizer
from attnsvm.experiments.experiment import Experiment
from attnsvm.results.columns import Columns

from .config import Config, NexttokenRun

# its summary, console table and report: which graph-SVM the direction reached and attention
# selects, and the correlations against the graph-SVM and its parts
_COLUMNS = Columns(
    counts={
        "reached_global": "reached_global",
        "reached_local": "reached_local",
        "selects_global": "selects_global",
    },
    metrics=("corr_svm", "corr_svm_fin", "corr_proj", "corr_local_svm", "fin_dist", "scc_mass")
    + ("R", "w_norm", "loss", "grad_norm"),
    console=("reached_global", "selects_global", "corr_svm_mean", "corr_svm_fin_mean")
    + ("fin_dist_mean",),
    labels={
        "corr_svm": "corr(W, W^svm)",
        "corr_svm_fin": "corr(W, W^fin + R W^svm)",
        "corr_proj": "corr(W^svm, W − Π_S W)",
        "corr_local_svm": "corr(W, local graph-SVM)",
        "fin_dist": "‖Π_S W − W^fin‖",
    },
)


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


EXPERIMENT = Experiment(
    name="nexttoken",
    package=__name__,  # its functions: job.py's run_job, summary.py's, plots.py's, ...
    Run=NexttokenRun,
    Config=Config,  # its config group (key: name)
    columns=_COLUMNS,
    check=check,
    datasets=("nexttoken",),  # a vocabulary, sequences of ids and labels: read by nothing else
    fused_unfit="its losses train in torch",
    doc=__doc__,
)
