"""The few lines printed after an ``icl`` job, in the experiment's symbols, and the table per
config point that aggregate writes (``icl_table.csv``) and the README quotes once published."""

from __future__ import annotations

import pandas as pd


def _first(runs: pd.DataFrame, key: str, default="?"):
    return runs[key].iloc[0] if key in runs and len(runs) else default


def summary_text(runs: pd.DataFrame, seconds: float) -> str:
    """Learned A vs Gamma^{-1} and the test losses against their baselines, over ok seeds."""
    ok = runs[runs.status == "ok"]
    head = (
        f"icl: d={_first(runs, 'icl.d')}, N={_first(runs, 'icl.N')}, "
        f"{_first(runs, 'icl.spectrum')} spectrum, {_first(runs, 'icl.parameterization')}, "
        f"L={_first(runs, 'icl.layers')}: {len(ok)}/{len(runs)} seeds ok in {seconds:.1f} s"
    )
    lines = [head]
    if ok.empty:
        reasons = "; ".join(sorted(set(runs.reason)))
        return "\n".join([*lines, f"  no seed finished: {reasons}"])
    if ok.rel_err_limit.notna().any():
        lines.append(
            f"  A vs Gamma^-1: corr {ok.corr_limit.mean():.4f} (min {ok.corr_limit.min():.4f}), "
            f"||A - Gamma^-1||_F / ||Gamma^-1||_F {ok.rel_err_limit.mean():.4f} "
            f"(max {ok.rel_err_limit.max():.4f})"
        )
    else:
        lines.append("  A vs Gamma^-1: defined for one layer (icl.layers=1)")
    lines.append(
        f"  test loss: trained {ok.icl_loss.mean():.4f}, "
        f"A = Gamma^-1 {ok.icl_loss_limit.mean():.4f}, "
        f"best one-step GD {ok.icl_loss_gd1.mean():.4f}, "
        f"fitted {_first(runs, 'icl.layers')}-step preconditioned GD {ok.icl_loss_pgd.mean():.4f}"
    )
    lines.append(
        f"  population loss at Gamma^-1 {ok.pop_loss_limit.iloc[0]:.4f}, "
        f"at the best GD step (eta* = {ok.gd1_step.iloc[0]:.4f}) {ok.pop_loss_gd1.iloc[0]:.4f}"
    )
    return "\n".join(lines)


KEYS = ["icl.N", "icl.spectrum", "icl.parameterization", "icl.layers"]


def table(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per config point over its ok seeds: the error of the learned A against
    Gamma^-1 (mean, largest), the least corr, the mean test losses of the model, of Gamma^-1,
    of one fitted GD step and of the fitted L-step preconditioned GD, seconds per seed."""
    ok = runs[runs.status == "ok"]
    keys = [k for k in KEYS if k in runs]
    out = ok.groupby(keys, sort=True).agg(
        ok=("seed", "size"),
        rel_err_mean=("rel_err_limit", "mean"),
        rel_err_max=("rel_err_limit", "max"),
        corr_min=("corr_limit", "min"),
        icl_loss=("icl_loss", "mean"),
        icl_loss_limit=("icl_loss_limit", "mean"),
        icl_loss_gd1=("icl_loss_gd1", "mean"),
        icl_loss_pgd=("icl_loss_pgd", "mean"),
        seconds=("seconds", "mean"),
    )
    return out.reset_index()
