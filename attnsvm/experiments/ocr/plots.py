"""Sweep figures of experiment ``ocr`` from the concatenated tables of its jobs.

``ocr_heldout.png``: held-out implication accuracy against step, one line per model (merged,
factorized) and step rule, with the Frobenius and nuclear OV-SVMs' held-out accuracy as dashed
levels. ``ocr_corr.png``: corr(W_OV(t), W_fro) and corr(W_OV(t), W_nuc) against step.
``ocr_rank.png`` (several ranks r of the factorized model): final held-out accuracy against r.
Mean over ok seeds, bands one standard deviation; ``ocr_table.csv``: summary.table.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

SVM_LEVELS = {
    "heldout_acc_fro": ("Frobenius OV-SVM", ":"),
    "heldout_acc_nuc": ("nuclear OV-SVM", "--"),
}


def _model(frame: pd.DataFrame) -> pd.Series:
    """'factorized, adamw' (the model and step rule of each row)."""
    return frame["ocr.ov"].astype(str) + ", " + frame["ocr.rule"].astype(str)


def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _svm_levels(ax, runs: pd.DataFrame) -> None:
    for col, (label, style) in SVM_LEVELS.items():
        if col in runs and runs[col].notna().any():
            ax.axhline(runs[col].mean(), color="grey", ls=style, lw=1, label=label)


def _heldout_figure(traj: pd.DataFrame, runs: pd.DataFrame, out_dir: Path) -> Path:
    fig, ax = plt.subplots(figsize=(6.5, 4))
    sns.lineplot(traj.assign(model=_model(traj)), x="step", y="heldout_acc", hue="model",
                 errorbar="sd", ax=ax)  # fmt: skip
    _svm_levels(ax, runs)
    ax.set(ylim=(-0.02, 1.02), ylabel="held-out implication accuracy")
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1), fontsize=8)
    return _save(fig, out_dir / "ocr_heldout.png")


def _corr_figure(traj: pd.DataFrame, out_dir: Path) -> Path:
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)
    frame = traj.assign(model=_model(traj))
    for ax, (col, title) in zip(axes, [("corr_fro", "Frobenius"), ("corr_nuc", "nuclear")],
                                strict=True):  # fmt: skip
        sns.lineplot(frame, x="step", y=col, hue="model", errorbar="sd", ax=ax,
                     legend=ax is axes[-1])  # fmt: skip
        ax.set(title=f"corr(W_OV(t), {title} OV-SVM)", ylabel="corr")
    sns.move_legend(axes[-1], "upper left", bbox_to_anchor=(1.02, 1), fontsize=8)
    return _save(fig, out_dir / "ocr_corr.png")


def _rank_figure(runs: pd.DataFrame, out_dir: Path) -> Path:
    fig, ax = plt.subplots(figsize=(6, 4))
    sns.lineplot(runs, x="ocr.rank", y="heldout_acc", marker="o", errorbar="sd", ax=ax,
                 label="factorized W_O W_V, final")  # fmt: skip
    _svm_levels(ax, runs)
    ax.set(xscale="log", xlabel="rank r of W_O W_V", ylim=(-0.02, 1.02),
           ylabel="held-out implication accuracy")  # fmt: skip
    ax.set_xticks(sorted(runs["ocr.rank"].unique()))
    ax.xaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
    ax.minorticks_off()
    ax.legend(fontsize=8)
    return _save(fig, out_dir / "ocr_rank.png")


def figures(runs: pd.DataFrame, trajectory: pd.DataFrame, out_dir, sweep=None) -> list[Path]:
    """The figures its jobs allow (the module docstring) and ``ocr_table.csv``, in out_dir."""
    from .summary import table

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    table(runs).round(6).to_csv(out_dir / "ocr_table.csv", index=False)
    written = [out_dir / "ocr_table.csv"]
    ok = runs[runs.status == "ok"]
    if ok.empty:
        return written
    keep = ok[["config_hash", "seed"]] if "config_hash" in ok else None
    traj = trajectory if keep is None else trajectory.merge(keep, on=["config_hash", "seed"])
    written += [_heldout_figure(traj, ok, out_dir), _corr_figure(traj, out_dir)]
    fact = ok[ok["ocr.ov"].astype(str) == "factorized"]
    if fact["ocr.rank"].nunique() > 1:
        written.append(_rank_figure(fact, out_dir))
    return written
