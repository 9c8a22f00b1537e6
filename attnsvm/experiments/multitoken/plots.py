"""Figure and table of the multitoken experiment (published multitoken.png).

    python -m attnsvm.aggregate outputs/sweeps/multitoken  # figure + table there

Top row: mean 1 - corr(W(k), .) over accepted seeds against iterations, for W^SVMeq, W^dir
and W^1token, one panel per d (log scale). Bottom row: final 1 - corr(W, W^SVMeq) against the
largest masked softmax probability, one point per accepted seed.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from attnsvm.figures.command import figure_cli, save_figure
from attnsvm.results.aggregate import load_sweep

CURVES = {
    "corr_svmeq": ("$W^{SVMeq}$", "-"),
    "corr_dir": ("$W^{dir}$", ":"),
    "corr_1token": ("$W^{1token}$", "--"),
}


def load(sweep_dir: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """runs and trajectory of the multitoken jobs under ``sweep_dir`` (aggregate's loader)."""
    sweep = load_sweep(sweep_dir)
    if "band_ok" not in sweep.runs:
        raise SystemExit(f"no multitoken results under {sweep_dir}")
    return sweep.runs, sweep.trajectory


def table(runs: pd.DataFrame) -> pd.DataFrame:
    """Per d: accepted/tried counts and the final mean and median 1 - corr of each SVM."""
    ok = runs[runs.status == "ok"]
    out = (
        runs.groupby("d")
        .agg(tried=("seed", "size"))
        .join(ok.groupby("d").agg(accepted=("seed", "size")))
    )
    for key in CURVES:
        g = (1 - ok[key]).groupby(ok.d)
        out[f"mean_1-{key}"] = g.mean()
        out[f"median_1-{key}"] = g.median()
    return out.reset_index()


def figure(runs: pd.DataFrame, traj: pd.DataFrame, path: Path) -> None:
    ok_keys = runs.loc[runs.status == "ok", ["config_hash", "seed"]]
    traj = traj.merge(ok_keys, on=["config_hash", "seed"])
    ds = sorted(runs.d.unique())  # a d without accepted seeds: its panels say 0 accepted
    fig, axes = plt.subplots(2, len(ds), figsize=(4.2 * len(ds), 7), squeeze=False)
    colors = plt.cm.tab10.colors
    for j, d in enumerate(ds):
        ax, sub = axes[0, j], traj[traj.d == d]
        if sub.empty:  # nothing to draw on log axes
            axes[0, j].set(title=f"d = {d}  (0 accepted)", xlabel="iterations")
            axes[1, j].set_axis_off()
            continue
        for key, (label, style) in CURVES.items():
            mean = (1 - sub[key]).groupby(sub.step).mean()
            ax.plot(mean.index, mean.values, style, marker="o", ms=3, color=colors[j], label=label)
        n_ok = sub.seed.nunique()
        ax.set(yscale="log", xlabel="iterations", title=f"d = {d}  ({n_ok} accepted)")
        ax.grid(alpha=0.4)
        ax.legend()
        ax = axes[1, j]
        r = runs[(runs.d == d) & (runs.status == "ok")]
        ax.scatter(r.masked_max, 1 - r.corr_svmeq, s=8, color=colors[j])
        ax.set(xscale="log", yscale="log", xlabel=r"$\max_{i,\tau\in\bar O_i} s_{i\tau}$")
        ax.grid(alpha=0.4)
    axes[0, 0].set_ylabel("1 - corr (mean over accepted seeds)")
    axes[1, 0].set_ylabel("final 1 - corr($W$, $W^{SVMeq}$)")
    save_figure(fig, path)


def figures(runs: pd.DataFrame, traj: pd.DataFrame, out: Path, sweep=None) -> list[Path]:
    """What ``python -m attnsvm.aggregate`` draws for multitoken jobs: the table and figure."""
    table(runs).to_csv(out / "multitoken_table.csv", index=False)
    figure(runs, traj, out / "multitoken.png")
    return [out / "multitoken_table.csv", out / "multitoken.png"]


def main(argv: list[str] | None = None) -> None:
    sweep_dir, out = figure_cli(__doc__, argv)
    runs, traj = load(sweep_dir)
    tab = table(runs)
    tab.to_csv(out / "multitoken_table.csv", index=False)
    figure(runs, traj, out / "multitoken.png")
    print(tab.to_string(index=False))
    print(f"figure: {out / 'multitoken.png'}")


if __name__ == "__main__":
    main()
