"""The few lines printed after a ``regpath`` job: the path's end against the SVM."""

from __future__ import annotations

import pandas as pd


def summary_text(runs: pd.DataFrame, seconds: float) -> str:
    """End-of-path correlations with the SVM matching the parameterization; the seeds that
    are not ok counted by status, with a reason."""
    from attnsvm.results.contract import not_ok_lines

    first, ok = runs.iloc[0], runs[runs.status == "ok"]
    svm_name = "W^mm_* (nuclear)" if first.parameterization == "kq" else "W^mm (Frobenius)"
    lines = [
        f"attnsvm regpath: n={first.n} T={first['T']} d={first.d} {first.attention}, "
        f"parameterization={first.parameterization}, head={first['head']}, "
        f"R up to {first.r_max:g}, {len(runs)} seeds ({len(ok)} ok)",
    ]
    lines += not_ok_lines(runs)
    if len(ok):
        lines += [
            f"  largest R before the gradient underflows (r_end): median {ok.r_end.median():.4g}",
            f"  corr(W̄_R, {svm_name}) at r_end: mean {ok['corr'].mean():.4f}, "
            f"min {ok['corr'].min():.4f}; the init chain alone: mean {ok.corr_init.mean():.4f}",
            f"  the path selects the optimal tokens in {int(ok.selected_is_opt.sum())}/{len(ok)}"
            f" seeds; the SVM-started chain had the lower loss in "
            f"{int((ok.best_chain == 'svm').sum())}",
        ]
    return "\n".join([*lines, f"  time: {seconds:.2f} s"])
