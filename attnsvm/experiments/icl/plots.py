"""Sweep figures of experiment ``icl`` from the concatenated tables of its jobs.

``icl_N.png``: test loss of the trained model, of A = Gamma^{-1} and of one plain GD step with
the best step size against N (top), and ||A - Gamma^{-1}||_F / ||Gamma^{-1}||_F (bottom), one
column per spectrum (one-layer jobs). ``icl_trajectory.png``: the relative error against steps.
``icl_layers.png``: test loss against L, trained vs the fitted L-step preconditioned GD.
Mean over ok seeds, bands one standard deviation.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt
import matplotlib.ticker
import pandas as pd
import seaborn as sns

BASELINES = {
    "icl_loss_limit": "A = Gamma^-1",
    "icl_loss_gd1": "one GD step, best eta",
}


def _spectra(table: pd.DataFrame) -> list[str]:
    return sorted(table["icl.spectrum"].astype(str).unique())


def _axes(rows: int, cols: int):
    fig, axes = plt.subplots(rows, cols, figsize=(4.5 * cols, 3.4 * rows), squeeze=False)
    return fig, axes


def _n_axis(ax, values) -> None:
    """Log N axis labelled at the swept values only (the log y axis keeps its minor ticks: they
    are its only labels when the values span less than a decade)."""
    ax.set_xscale("log")
    ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    ax.set_xticks(sorted(set(values)))
    ax.xaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())


def _legends_outside(axes) -> None:
    for ax in axes:
        sns.move_legend(ax, "upper left", bbox_to_anchor=(1.02, 1))


def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _losses(runs: pd.DataFrame, x: str, extra: dict) -> pd.DataFrame:
    """Long table (x, spectrum, what, loss): the trained model per parameterization + baselines."""
    trained = runs.assign(what="trained, " + runs["icl.parameterization"].astype(str))
    parts = [trained[[x, "icl.spectrum", "what", "icl_loss"]].rename(columns={"icl_loss": "loss"})]
    for col, label in {**BASELINES, **extra}.items():
        base = runs.drop_duplicates(["config_hash", "seed"]) if "config_hash" in runs else runs
        base = base.groupby([x, "icl.spectrum", "seed"], as_index=False)[col].first()
        parts.append(base.assign(what=label).rename(columns={col: "loss"}))
    return pd.concat(parts, ignore_index=True)


def _n_figure(runs: pd.DataFrame, out_dir: Path) -> Path:
    spectra = _spectra(runs)
    fig, axes = _axes(2, len(spectra))
    long = _losses(runs, "icl.N", {})
    for j, spectrum in enumerate(spectra):
        sub = long[long["icl.spectrum"].astype(str) == spectrum]
        sns.lineplot(
            sub, x="icl.N", y="loss", hue="what", marker="o", errorbar="sd", ax=axes[0, j],
            legend=j == len(spectra) - 1,
        )  # fmt: skip
        axes[0, j].set(yscale="log", title=f"spectrum: {spectrum}", ylabel="test loss")
        err = runs[runs["icl.spectrum"].astype(str) == spectrum]
        sns.lineplot(
            err, x="icl.N", y="rel_err_limit", hue="icl.parameterization", marker="o",
            errorbar="sd", ax=axes[1, j], legend=j == len(spectra) - 1,
        )  # fmt: skip
        axes[1, j].set(yscale="log", ylabel="||A - Gamma^-1|| / ||Gamma^-1||")
        for ax in axes[:, j]:
            _n_axis(ax, runs["icl.N"])
    _legends_outside(axes[:, -1])
    return _save(fig, out_dir / "icl_N.png")


def _trajectory_figure(trajectory: pd.DataFrame, out_dir: Path) -> Path:
    spectra = _spectra(trajectory)
    fig, axes = _axes(1, len(spectra))
    hue = "icl.N" if trajectory["icl.N"].nunique() > 1 else "icl.parameterization"
    style = "icl.parameterization" if hue == "icl.N" else None
    for j, spectrum in enumerate(spectra):
        sub = trajectory[trajectory["icl.spectrum"].astype(str) == spectrum]
        last = j == len(spectra) - 1
        ax = axes[0, j]
        sns.lineplot(
            sub, x="step", y="rel_err_limit", hue=hue, style=style, errorbar=None, ax=ax,
            palette="viridis", legend="full" if last else False,
        )  # fmt: skip
        ax.set(yscale="log", title=f"spectrum: {spectrum}", ylabel="relative error to Gamma^-1")
    _legends_outside(axes[:, -1])
    return _save(fig, out_dir / "icl_trajectory.png")


def _layers_figure(runs: pd.DataFrame, out_dir: Path) -> Path:
    spectra = _spectra(runs)
    fig, axes = _axes(1, len(spectra))
    long = _losses(runs, "icl.layers", {"icl_loss_pgd": "L-step preconditioned GD (fitted)"})
    for j, spectrum in enumerate(spectra):
        sub = long[long["icl.spectrum"].astype(str) == spectrum]
        sns.lineplot(
            sub, x="icl.layers", y="loss", hue="what", marker="o", errorbar="sd", ax=axes[0, j],
            legend=j == len(spectra) - 1,
        )  # fmt: skip
        axes[0, j].set(title=f"spectrum: {spectrum}", xlabel="layers L", ylabel="test loss")
        axes[0, j].set(yscale="log", xticks=sorted(runs["icl.layers"].unique()))
    _legends_outside(axes[:, -1])
    return _save(fig, out_dir / "icl_layers.png")


def figures(runs: pd.DataFrame, trajectory: pd.DataFrame, out_dir, sweep=None) -> list[Path]:
    """The figures the sweep's axes allow (see the module docstring) and the sweep's table
    (``icl_table.csv``), written into out_dir."""
    from .summary import table

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    table(runs).round(6).to_csv(out_dir / "icl_table.csv", index=False)
    ok = runs[runs.status == "ok"]
    one = ok[ok["icl.layers"] == 1]
    written = [out_dir / "icl_table.csv"]
    if one["icl.N"].nunique() > 1:
        written.append(_n_figure(one, out_dir))
    if ok["icl.layers"].nunique() > 1:
        written.append(_layers_figure(ok, out_dir))
    traj = trajectory[(trajectory["icl.layers"] == 1) & trajectory.rel_err_limit.notna()]
    if not traj.empty:
        written.append(_trajectory_figure(traj, out_dir))
    return written
