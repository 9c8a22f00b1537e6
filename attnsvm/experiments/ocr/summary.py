"""The few lines printed after an ``ocr`` job, and the table per config point that its figures
write (``ocr_table.csv``)."""

from __future__ import annotations

import pandas as pd


def _first(runs: pd.DataFrame, key: str, default="?"):
    return runs[key].iloc[0] if key in runs and len(runs) else default


def summary_text(runs: pd.DataFrame, seconds: float) -> str:
    """Held-out implication accuracy of the model and of each OV-SVM, over ok seeds."""
    ok = runs[runs.status == "ok"]
    head = (
        f"ocr: {_first(runs, 'ocr.ov')} W_OV (r={_first(runs, 'ocr.rank')}), "
        f"{_first(runs, 'ocr.attention')} attention, {_first(runs, 'ocr.rule')}, "
        f"{_first(runs, 'ocr.names')} names, d={_first(runs, 'ocr.d')}: "
        f"{len(ok)}/{len(runs)} seeds ok in {seconds:.1f} s"
    )
    if ok.empty:
        return "\n".join([head, f"  no seed finished: {'; '.join(sorted(set(runs.reason)))}"])
    return "\n".join(
        [
            head,
            f"  accuracy: facts {ok.fact_acc.mean():.3f}, trained implications "
            f"{ok.impl_acc.mean():.3f}, held-out implications {ok.heldout_acc.mean():.3f} "
            f"(min {ok.heldout_acc.min():.3f}; chance 1/{_first(runs, 'ocr.animals')})",
            f"  OV-SVMs on the held-out implications: Frobenius {ok.heldout_acc_fro.iloc[0]:.3f}, "
            f"nuclear {ok.heldout_acc_nuc.iloc[0]:.3f}",
            f"  W_OV: rank {ok['rank'].mean():.1f}, corr to W_fro {ok.corr_fro.mean():.3f}, "
            f"to W_nuc {ok.corr_nuc.mean():.3f}",
        ]
    )


KEYS = ["ocr.ov", "ocr.rank", "ocr.attention", "ocr.rule", "ocr.names", "ocr.steps"]


def table(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per config point over its ok seeds: mean (and least) held-out accuracy, the
    OV-SVMs' held-out accuracy, facts and trained implications, W_OV's rank and its corr to
    each SVM, seconds per seed."""
    ok = runs[runs.status == "ok"]
    keys = [k for k in KEYS if k in runs]
    out = ok.groupby(keys, sort=True).agg(
        ok=("seed", "size"),
        heldout_acc=("heldout_acc", "mean"),
        heldout_acc_min=("heldout_acc", "min"),
        heldout_acc_fro=("heldout_acc_fro", "first"),
        heldout_acc_nuc=("heldout_acc_nuc", "first"),
        fact_acc=("fact_acc", "mean"),
        impl_acc=("impl_acc", "mean"),
        rank=("rank", "mean"),
        corr_fro=("corr_fro", "mean"),
        corr_nuc=("corr_nuc", "mean"),
        seconds=("train_seconds", "mean"),
    )
    return out.reset_index()
