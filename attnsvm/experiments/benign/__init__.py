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


def published() -> list:
    """Its sweeps' rows of the README's results tables (readme_rows.py)."""
    from .readme_rows import SWEEPS

    return SWEEPS


def bench_cases(quick: bool) -> dict:
    """Its case of ``python -m attnsvm.bench`` (bench.py): the default two_token job, all seeds in
    one batch vs one seed at a time."""
    from .bench import bench_benign

    r = bench_benign(quick)
    return {f"two_token, default job (n={r['n']}, d={r['d']}), {r['steps']} steps": r}


def run_job(*args, **kwargs):
    """job.py's ``run_job``, imported when called (its imports are heavy)."""
    from .job import run_job

    return run_job(*args, **kwargs)


def summary_text(*args, **kwargs):
    """summary.py's ``summary_text``, imported when called (its imports are heavy)."""
    from .summary import summary_text

    return summary_text(*args, **kwargs)


def summary_table(*args, **kwargs):
    """summary.py's ``summary_table``, imported when called (its imports are heavy)."""
    from .summary import summary_table

    return summary_table(*args, **kwargs)


def figures(*args, **kwargs):
    """plots.py's ``figures``, imported when called (its imports are heavy)."""
    from .plots import figures

    return figures(*args, **kwargs)


EXPERIMENT = Experiment(
    name="benign",
    run_job=run_job,
    summary_text=summary_text,
    Run=BenignRun,
    Config=Config,
    config_group="benign",
    figures=figures,
    columns=_COLUMNS,
    fused_unfit="its own batched loop trains (p, v) or (W, p) on noisy labels",
    instead={"optimizer.kind": "benign.rule", "optimizer.checkpoint_every": "benign.checkpoints"},
    published=published,
    bench_cases=bench_cases,
    doc=__doc__,
)


__all__ = [
    "EXPERIMENT",
    "Config",
    "Init",
    "Rule",
    "Setting",
    "figures",
    "run_job",
    "summary_table",
    "summary_text",
]
