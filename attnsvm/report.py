"""The short human summary printed at the end of a run."""

from __future__ import annotations

import pandas as pd


def summary_text(runs: pd.DataFrame, seconds: float) -> str:
    """The summary of the job's experiment (attnsvm/experiments.py), from its rows."""
    from attnsvm.experiments import module_of

    return module_of(runs.iloc[0].get("experiment", "gd")).summary_text(runs, seconds)


def gd_summary_text(runs: pd.DataFrame, seconds: float) -> str:
    """experiment=gd: seeds by status, mean final correlations, saturation, convergence types."""
    first = runs.iloc[0]
    engine = first.get("train_engine", "torch")  # results written before engines existed
    training = (
        f"{first['optimizer.steps']} {first.optimizer} steps ({engine} engine)"
        if "conv_type" in runs
        else "SVMs only"
    )
    head = (
        f"attnsvm: n={first.n} T={first['T']} d={first.d} {first.attention}-attention, "
        f"parameterization={first.parameterization}, head={first['head']}, {training}, "
        f"{len(runs)} seeds, nuclear SVM by {first['solver.backend']}"
    )
    counts = runs.status.value_counts().to_dict()
    if "conv_type" not in runs:  # train=false: SVMs only
        ok = runs[runs.feasible]
        return "\n".join(
            [
                head,
                "  seeds by status:    " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())),
                f"  SVM at opt feasible: {len(ok)}/{len(runs)}",
                f"  mean rank W^mm {ok.rank_fro.mean():.2f}, W^mm_* {ok.rank_nuc.mean():.2f}",
                f"  time: {seconds:.2f} s",
            ]
        )
    conv = runs.conv_type.value_counts().to_dict()
    lines = [
        head,
        "  seeds by status:    " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())),
        f"  SVM at opt feasible: {int(runs.feasible.sum())}/{len(runs)}",
        "  final corr(W, W^mm_a)   (Frobenius, a = GD-selected tokens): "
        f"mean {runs.corr_fro.mean():.4f}, min {runs.corr_fro.min():.4f}",
        "  final corr(W, W^mm_*,a) (nuclear,   a = GD-selected tokens): "
        f"mean {runs.corr_nuc.mean():.4f}, min {runs.corr_nuc.min():.4f}",
        f"  softmax saturation (mean_i max_t s_it): mean {runs.softmax_max.mean():.6f}",
        f"  GD selected the optimal tokens in {int(runs.selected_is_opt.sum())}/{len(runs)} seeds",
        "  convergence: "
        + ", ".join(f"{k} {conv.get(k, 0)}" for k in ("global", "local", "other")),
        f"  time: {seconds:.2f} s",
    ]
    return "\n".join(lines)
