"""The few lines printed after a ``nexttoken`` job: statuses, the final correlations."""

from __future__ import annotations

import pandas as pd


def summary_text(runs: pd.DataFrame, seconds: float) -> str:
    """Status counts and the final correlations (mean, min) over ok seeds."""
    first, ok = runs.iloc[0], runs[runs.status == "ok"]
    counts = ", ".join(f"{k} {v}" for k, v in runs.status.value_counts().items())
    lines = [
        f"attnsvm nexttoken: n={first.n} T={first['T']} K={first['dataset.K']} d={first.d}, "
        f"{first['nexttoken.loss']} loss, {first.parameterization}, "
        f"{first['optimizer.steps']} {first.optimizer} steps; seeds: {counts}",
    ]
    for key in ("corr_svm", "corr_svm_fin", "corr_proj", "corr_local_svm"):
        if key in ok and len(ok):
            lines.append(f"  final {key:15s} mean {ok[key].mean():.6f}  min {ok[key].min():.6f}")
    if len(ok):
        lines.append(f"  reached the global graph-SVM: {ok.reached_global.mean():.0%} of ok seeds")
    lines.append(f"  time: {seconds:.2f} s")
    return "\n".join(lines)
