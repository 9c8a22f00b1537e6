"""The few lines printed after a ``multitoken`` job: seeds accepted, 1 - corr against its SVMs."""

from __future__ import annotations

import pandas as pd


def summary_text(runs: pd.DataFrame, seconds: float) -> str:
    """Accepted/tried counts and final 1 - corr of the three SVMs over accepted seeds."""
    from attnsvm.results.contract import not_ok_lines

    first, ok = runs.iloc[0], runs[runs.status == "ok"]
    lines = [
        f"attnsvm multitoken: n={first.n} T={first['T']} d={first.d}, head={first['head']}, "
        f"{first['optimizer.steps']} {first.optimizer} steps",
        f"  accepted {len(ok)} of {len(runs)} seeds tried (published acceptance filters)",
    ]
    if "search_end" in runs:
        lines.append(f"  search ended: {first.search_end}")
    lines += not_ok_lines(runs)
    for key, name in (("corr_svmeq", "W^SVMeq"), ("corr_dir", "W^dir"), ("corr_1token", "W^1tok")):
        if key not in ok or ok.empty:
            continue  # no seed reached the analysis (e.g. every one diverged)
        err = 1 - ok[key]
        lines.append(
            f"  final 1 - corr(W, {name:8s}): mean {err.mean():.4g}, median {err.median():.4g}"
        )
    lines.append(f"  time: {seconds:.2f} s")
    return "\n".join(lines)
