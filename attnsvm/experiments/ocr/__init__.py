"""experiment=ocr: out-of-context reasoning, and the output-value circuit's SVM (Huang, Zhu, Guo,
Jiao, Sojoudi, Jordan, Russell, Mei 2025, "Generalization or Hallucination?"; docs/ocr.md).

A one-layer attention-only model (one-hot embeddings, W_K = I) is trained on facts (name -> city,
every name) and implications (name -> the city's animal, a quarter of the names). Asked for an
implication it never saw, does it answer? The factorized W_O W_V does, the merged W_OV does not:
gradient descent's implicit bias is the nuclear-norm OV-SVM for the first and the Frobenius one
for the second, the output-value twin of (K, Q) -> W^mm_* against W -> W^mm.

    python -m attnsvm.run experiment=ocr ocr.ov=merged
    python -m attnsvm.run -m +sweeps=ocr
"""

from __future__ import annotations

from attnsvm.config.checks import ConfigError, plain_name
from attnsvm.experiments.experiment import Experiment
from attnsvm.results.columns import Columns

from .config import Config, OcrRun

# its summary, console table and report: the held-out implications, the model's and each
# OV-SVM's, and W_OV's alignment with each SVM (no attention SVM, no n, T, d of a data set)
_COLUMNS = Columns(
    axes=(),
    counts={},
    metrics=("heldout_acc", "heldout_acc_fro", "heldout_acc_nuc", "fact_acc", "impl_acc")
    + ("heldout_loss", "rank", "norm_fro", "norm_nuc", "corr_fro", "corr_nuc")
    + ("margin_model_fro", "margin_fro", "margin_model_nuc", "margin_nuc", "train_seconds"),
    console=("heldout_acc_mean", "heldout_acc_fro_mean", "heldout_acc_nuc_mean", "rank_mean")
    + ("corr_fro_mean", "corr_nuc_mean"),
    labels={
        "heldout_acc": "held-out implications",
        "heldout_acc_fro": "held-out, Frobenius OV-SVM",
        "heldout_acc_nuc": "held-out, nuclear OV-SVM",
        "fact_acc": "facts",
        "impl_acc": "trained implications",
        "rank": "rank W_OV",
        "corr_fro": "corr(W_OV, W_fro)",
        "corr_nuc": "corr(W_OV, W_nuc)",
    },
)


def check(run) -> None:
    """The device its training supports (its prompts and step rules run on the CPU)."""
    if plain_name(run.device) != "cpu":
        raise ConfigError(
            f"device={plain_name(run.device)} is invalid for experiment=ocr (it trains on the "
            f"cpu): accepted values are cpu"
        )


EXPERIMENT = Experiment(
    name="ocr",
    package=__name__,  # its functions: job.py's run_job, summary.py's, plots.py's, ...
    Run=OcrRun,
    Config=Config,
    config_group="ocr",
    columns=_COLUMNS,
    check=check,
    fused_unfit="a token-count model with its own step rules, trained in its own batched loop",
    instead={
        "optimizer.kind": "ocr.rule",
        "optimizer.lr": "ocr.lr",
        "optimizer.steps": "ocr.steps",
        "optimizer.checkpoint_every": "ocr.checkpoint_every",
        "parameterization.kind": "ocr.ov",
        "parameterization.init": "ocr.init",
        "parameterization.init_scale": "ocr.init_scale",
        "dataset.T": "ocr.T",
    },
    doc=__doc__,
)


__all__ = ["EXPERIMENT", "Config", "OcrRun"]
