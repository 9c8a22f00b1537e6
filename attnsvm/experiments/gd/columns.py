"""What gd's summary, console table and report show per config point (its entry's columns,
attnsvm/results/columns.py): the p-model's quantities (corr(p, p^mm), and with a trained head
corr(v, v^mm) and the relaxed SVM), else W's and (K,Q)'s against the Frobenius and nuclear-norm
SVMs: the convergence mix and correlations where it trained, the SVM ranks where it did not."""

from __future__ import annotations

from typing import TYPE_CHECKING

from attnsvm.results.columns import ATTENTION_SVM, CONVERGENCE, METRICS, Columns

if TYPE_CHECKING:
    import pandas as pd

P_MODEL = Columns(  # W = e p^T: its ranks are 1, corr_fro and corr_nuc are corr(p, p^mm)
    **ATTENTION_SVM,
    metrics=("corr_p_mm", "corr_relaxed", "corr_v_mm", "softmax_max", "softmax_min", "w_norm")
    + ("v_norm", "loss", "grad_norm", "seconds"),
    console=(*CONVERGENCE, "corr_p_mm_mean", "corr_relaxed_mean", "corr_v_mm_mean")
    + ("softmax_max_mean",),
    labels={
        "corr_p_mm": "corr(p, p^mm)",
        "corr_relaxed": "corr(p, p^relaxed)",
        "corr_v_mm": "corr(v, v^mm)",
        "w_norm": "‖p‖",
        "v_norm": "‖v‖",
    },
)
TRAINED = Columns(
    **ATTENTION_SVM,
    norms=True,
    console=(*CONVERGENCE, "corr_fro_mean", "corr_nuc_mean", "softmax_max_mean"),
)
SVMS_ONLY = Columns(  # train=false: the SVMs alone
    **ATTENTION_SVM,
    metrics=tuple(m for m in METRICS if m.startswith(("rank_", "norm_", "seconds"))),
    norms=True,
    console=("rank_fro_mean", "rank_fro_std", "rank_nuc_mean", "rank_nuc_std"),
)


def columns(runs: pd.DataFrame) -> Columns:
    """The columns of one config point's runs."""
    if "parameterization" in runs and set(runs.parameterization) == {"p"}:
        return P_MODEL
    return TRAINED if "conv_type" in runs and runs.conv_type.notna().any() else SVMS_ONLY
