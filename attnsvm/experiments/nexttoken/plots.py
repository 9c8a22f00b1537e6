"""Figures and table of the nexttoken experiment (docs/nexttoken.md).

    python -m attnsvm.aggregate outputs/sweeps/nexttoken_global  # figures + table there

``nexttoken_curves.png``: against iterations, the median over instances and the band from
its 10 % to its 90 % quantile (a log axis: a band of the values themselves, never mean - std
below them) of 1 - corr(W, W^svm), 1 - corr(W, W^fin + R W^svm), 1 - corr(W^svm, W - Pi_S W),
1 - corr(W, local graph-SVM) (top), and ||Pi_S W - W^fin|| (bottom, mean ± std), one column
per parameterization and graph kind (at d=8, K=6 when the sweep holds it). Series whose curves
agree within 10 % at every step (a few pixels on the log axis; on the global notebook's
instances all four do) are drawn once, labelled with all their names ("=" where equal, "≈"
where within 10 %, said in the legend's title).
``nexttoken_sweep.png`` (sweeps over d or K): the final correlations (mean ± std over ok
instances) and the share of instances whose final attention selects the global graph's tokens
and whose direction reached the global graph-SVM (corr >= 1 - metrics.epsilon), against d or K.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from attnsvm.figures.command import figure_cli, save_figure
from attnsvm.results.aggregate import load_sweep

CURVES = {
    "corr_svm": r"$W^{svm}$",
    "corr_svm_fin": r"$W^{fin} + R\,W^{svm}$",
    "corr_proj": r"$W^{svm}$ vs $W - \Pi_S W$",
    "corr_local_svm": "local graph-SVM",
}
GROUP = ["parameterization", "dataset.graphs", "nexttoken.loss"]
STYLES = ["-", "--", "-.", ":"]  # one per series: drawn over each other, each still visible


def load(sweep_dir: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """runs and trajectory of the nexttoken jobs under ``sweep_dir``."""
    sweep = load_sweep(sweep_dir)
    runs = sweep.runs
    if "corr_svm_fin" not in runs:
        raise SystemExit(f"no nexttoken results under {sweep_dir}")
    return runs[runs.experiment == "nexttoken"], sweep.trajectory


def table(runs: pd.DataFrame) -> pd.DataFrame:
    """Per config point: instances by status, final correlations (mean, std) over ok ones."""
    keys = [*GROUP, "dataset.K", "d"]
    ok = runs[runs.status == "ok"]
    out = runs.groupby(keys).agg(instances=("seed", "size"))
    for status in ("ok", "infeasible", "solver_error"):
        out[status] = (runs.status == status).groupby([runs[k] for k in keys]).sum()
    g = ok.groupby(keys)
    for key in (*CURVES, "fin_dist"):
        out[f"{key}_mean"], out[f"{key}_std"] = g[key].mean(), g[key].std()
    out["selects_global"] = g.selects_global.mean()
    out["reached_global"] = g.reached_global.mean()
    return out.reset_index()


def _pick(traj: pd.DataFrame) -> pd.DataFrame:
    """The published point d=8, K=6 if the sweep holds it, else its first d and K."""
    d = 8 if (traj.d == 8).any() else traj.d.min()
    K = 6 if (traj["dataset.K"] == 6).any() else traj["dataset.K"].min()
    return traj[(traj.d == d) & (traj["dataset.K"] == K)]


SAME = 0.1  # curves closer than this (relative, every step) overlap on the log axis


def same_series(sub: pd.DataFrame, names) -> list[list[str]]:
    """``names`` grouped by curves that would be drawn on top of each other: their median and
    10-90 % band of 1 - corr within ``SAME`` (relative) at every step. Each group is drawn once,
    with every name in its label."""
    bands = {name: quantile_band(1 - sub[name], sub.step).to_numpy(dtype=float) for name in names}
    groups: list[list[str]] = []
    for name in names:
        for group in groups:
            if np.allclose(bands[group[0]], bands[name], rtol=SAME, atol=0, equal_nan=True):
                group.append(name)
                break
        else:
            groups.append([name])
    return groups


def series_label(sub: pd.DataFrame, group: list[str]) -> str:
    """The group's names joined by "=" where its series are equal, else by "≈"."""
    first = sub[group[0]].to_numpy(dtype=float)
    equal = all(np.array_equal(first, sub[n].to_numpy(dtype=float), equal_nan=True) for n in group)
    return (" = " if equal else " ≈ ").join(CURVES[name] for name in group)


def quantile_band(err: pd.Series, step: pd.Series) -> pd.DataFrame:
    """Median, 10 % and 90 % quantiles of ``err`` per step (columns 0.5, 0.1, 0.9)."""
    return err.groupby(step).quantile([0.1, 0.5, 0.9]).unstack()


def curves_figure(runs: pd.DataFrame, traj: pd.DataFrame, path: Path) -> None:
    ok = runs.loc[runs.status == "ok", ["config_hash", "seed"]]
    traj = _pick(traj.merge(ok, on=["config_hash", "seed"]))
    panels = list(traj.groupby(GROUP))
    if not panels:  # no ok instance at all (every one infeasible, say): an empty page says so
        fig, ax = plt.subplots(figsize=(4.6, 3))
        ax.set(title="no ok instance: nothing to draw")
        ax.set_axis_off()
        return save_figure(fig, path)
    fig, axes = plt.subplots(2, len(panels), figsize=(4.6 * len(panels), 7), squeeze=False)
    for j, (key, sub) in enumerate(panels):
        ax = axes[0, j]
        groups = same_series(sub, CURVES)
        for k, group in enumerate(groups):
            q = quantile_band(1 - sub[group[0]], sub.step)
            label = series_label(sub, group)
            line = ax.plot(q.index, q[0.5].values, STYLES[k % len(STYLES)], label=label)[0]
            ax.fill_between(q.index, q[0.1], q[0.9], alpha=0.15, color=line.get_color())
        title = ", ".join(map(str, key))
        ax.set(yscale="log", title=f"{title} ({sub.seed.nunique()} ok)", xlabel="iterations")
        ax.grid(alpha=0.4)
        merged = any(len(group) > 1 for group in groups)
        ax.legend(fontsize=8, title=f"≈: within {SAME:.0%} at every step" if merged else None)
        g = sub.fin_dist.groupby(sub.step)
        axes[1, j].plot(g.mean().index, g.mean().values, color="k")
        axes[1, j].fill_between(
            g.mean().index, g.mean() - g.std().fillna(0), g.mean() + g.std().fillna(0), alpha=0.2
        )
        axes[1, j].set(xlabel="iterations")
        axes[1, j].grid(alpha=0.4)
    axes[0, 0].set_ylabel("1 - corr (median, 10–90 % over instances)")
    axes[1, 0].set_ylabel(r"$\|\Pi_S W - W^{fin}\|$")
    save_figure(fig, path)


def sweep_figure(tab: pd.DataFrame, axis: str, path: Path) -> None:
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for key, sub in tab.groupby(GROUP):
        sub = sub.sort_values(axis)
        label = ", ".join(map(str, key))
        axes[0].errorbar(sub[axis], sub.corr_svm_mean, sub.corr_svm_std, capsize=3, label=label)
        axes[1].plot(sub[axis], sub.selects_global, "o-", label=f"{label}: selects global")
        axes[1].plot(sub[axis], sub.reached_global, "s--", label=f"{label}: corr ≥ 1 - ε")
    axes[0].set(xlabel=axis, ylabel="final corr(W, W^svm) (mean ± std, ok instances)")
    axes[1].set(xlabel=axis, ylabel="share of ok instances", ylim=(-0.05, 1.05))
    for ax in axes:
        ax.grid(alpha=0.4)
        ax.legend(fontsize=7)
    save_figure(fig, path)


def figures(runs: pd.DataFrame, traj: pd.DataFrame, out: Path, sweep=None) -> list[Path]:
    """What ``python -m attnsvm.aggregate`` draws for nexttoken jobs: the table, the curves
    and, over a swept d or K, the sweep figure."""
    tab = table(runs)
    tab.to_csv(out / "nexttoken_table.csv", index=False)
    curves_figure(runs, traj, out / "nexttoken_curves.png")
    written = [out / "nexttoken_table.csv", out / "nexttoken_curves.png"]
    for axis in ("d", "dataset.K"):
        if tab[axis].nunique() > 1:
            sweep_figure(tab, axis, out / "nexttoken_sweep.png")
            return [*written, out / "nexttoken_sweep.png"]
    return written


def main(argv: list[str] | None = None) -> None:
    sweep_dir, out = figure_cli(__doc__, argv)
    runs, traj = load(sweep_dir)
    tab = table(runs)
    tab.to_csv(out / "nexttoken_table.csv", index=False)
    curves_figure(runs, traj, out / "nexttoken_curves.png")
    written = [out / "nexttoken_curves.png"]
    for axis in ("d", "dataset.K"):
        if tab[axis].nunique() > 1:
            sweep_figure(tab, axis, out / "nexttoken_sweep.png")
            written.append(out / "nexttoken_sweep.png")
            break
    print(tab.to_string(index=False))
    print("figures: " + ", ".join(map(str, written)))


if __name__ == "__main__":
    main()
