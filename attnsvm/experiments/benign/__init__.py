"""experiment=benign: benign overfitting in single-head attention trained on noisy labels (Magen
et al., NeurIPS 2025; Sakamoto & Sato, ICML 2025; docs/benign.md).

Two settings: ``two_token`` (f = v^T X^T softmax(X p), a signal and an orthogonal noise token,
p and v trained) and ``token_selection`` (f = sum_t softmax(X W p)_t x_t^T nu, W and p trained,
nu fixed). A share eta of training labels is flipped, the test set is clean. Per seed: which
labels are fit (clean / flipped), the clean test accuracy against the Bayes-optimal one, where
attention goes (signal token for clean, noise token for flipped samples?), the max-margin
interpolator at the selected tokens, and benign / harmful / not interpolating, at log-spaced
checkpoints including steps 1 and 2.

    python -m attnsvm.run experiment=benign benign.snr=1
    python -m attnsvm.run -m +sweeps=benign_snr
"""

from __future__ import annotations

from attnsvm.experiments.experiment import Experiment
from attnsvm.results.columns import Columns

from .config import BenignRun, Config, Init, Rule, Setting

# its summary, console table and report: the fit of clean and flipped labels, where attention
# goes, the clean test accuracy against the max-margin interpolator's and the Bayes-optimal one
_COLUMNS = Columns(
    counts={},
    metrics=("test_acc", "mm_test_acc", "bayes_acc", "fit_clean", "fit_flipped", "attn_clean")
    + ("attn_flipped", "corr_q", "corr_v", "loss", "grad_norm", "train_seconds"),
    console=("test_acc_mean", "mm_test_acc_mean", "bayes_acc_mean", "fit_clean_mean")
    + ("fit_flipped_mean", "attn_flipped_mean"),
    labels={"mm_test_acc": "test_acc, max-margin", "bayes_acc": "test_acc, Bayes"},
)


EXPERIMENT = Experiment(
    name="benign",
    package=__name__,  # its functions: job.py's run_job, summary.py's, plots.py's, ...
    Run=BenignRun,
    Config=Config,
    config_group="benign",
    columns=_COLUMNS,
    fused_unfit="its own batched loop trains (p, v) or (W, p) on noisy labels",
    instead={"optimizer.kind": "benign.rule", "optimizer.checkpoint_every": "benign.checkpoints"},
    doc=__doc__,
)


__all__ = [
    "EXPERIMENT",
    "Config",
    "Init",
    "Rule",
    "Setting",
]
