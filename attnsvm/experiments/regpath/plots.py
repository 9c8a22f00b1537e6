"""Figure of the regpath experiment: corr(W̄_R, W^mm) (W) and corr(K̄Q̄^T, W^mm_*) ((K,Q)) vs R.

Radii where a seed's gradient underflowed (``frozen``) are left out for that seed; a curve
shows the median over seeds at the radii where at least half of its seeds remain. One curve per
parameterization, d, attention and every other swept key (sequential's ``dataset.causal``):
no swept value is pooled into another's curve.

python -m attnsvm.aggregate outputs/sweeps/regpath   # regpath.png there
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from attnsvm.figures.command import figure_cli, save_figure
from attnsvm.results.aggregate import load_sweep

CURVE_KEYS = ["parameterization", "d", "attention"]  # always named in a curve's label


def load(sweep_dir: Path) -> tuple[pd.DataFrame, list[str]]:
    """Trajectories (one row per seed x R) of the regpath jobs under ``sweep_dir``, ok seeds,
    radii before the gradient underflowed (aggregate's loader); and the keys of its curves."""
    sweep = load_sweep(sweep_dir)
    if "R" not in sweep.trajectory:
        raise SystemExit(f"no regpath results under {sweep_dir}")
    traj = path_rows(sweep.runs, sweep.trajectory)
    return traj, curve_keys(traj, sweep.swept)


def curve_keys(traj: pd.DataFrame, swept: list[str]) -> list[str]:
    """parameterization, d, attention, then every other swept key the rows hold."""
    extra = [k for k in swept if k not in CURVE_KEYS and k != "experiment" and k in traj]
    return [*CURVE_KEYS, *extra]


def path_rows(runs: pd.DataFrame, tr: pd.DataFrame) -> pd.DataFrame:
    """The trajectory rows of ok seeds, radii before the gradient underflowed."""
    ok = runs.loc[runs.status == "ok", ["config_hash", "seed", "attention"]]
    tr = tr.drop(columns=["attention"], errors="ignore").merge(ok, on=["config_hash", "seed"])
    return tr[~tr.frozen] if "frozen" in tr else tr


def figure(traj: pd.DataFrame, path: Path, keys: list[str] = CURVE_KEYS) -> None:
    """1 - corr against R, one curve per value of ``keys`` (curve_keys)."""
    traj = traj.assign(
        one_minus=1 - traj.corr_fro.where(traj.parameterization == "w", traj.corr_nuc)
    )
    fig, ax = plt.subplots(figsize=(6, 4.2))
    for (kind, d, att, *more), sub in traj.groupby(keys, dropna=False):
        g = sub.groupby("R").one_minus
        keep = g.size() >= 0.5 * sub.seed.nunique()  # radii where most seeds are not frozen
        mean = g.median()[keep]
        svm_name = "$W^{mm}_*$" if kind == "kq" else "$W^{mm}$"
        named = "".join(
            f", {k.rsplit('.', 1)[-1]}={v}" for k, v in zip(keys[3:], more, strict=True)
        )
        label = f"{kind}, d={d}, {att}{named}: 1 - corr(., {svm_name})"
        ax.plot(mean.index, mean.values, "-o" if kind == "w" else "--s", ms=3, label=label)
    ax.set(xscale="log", yscale="log", xlabel="R", ylabel="1 - corr (median over seeds)")
    ax.grid(alpha=0.4)
    ax.legend(fontsize=7)
    save_figure(fig, path)


def figures(runs: pd.DataFrame, traj: pd.DataFrame, out: Path, sweep=None) -> list[Path]:
    """What ``python -m attnsvm.aggregate`` draws for regpath jobs: corr against R."""
    rows = path_rows(runs, traj)
    figure(rows, out / "regpath.png", curve_keys(rows, sweep.swept if sweep is not None else []))
    return [out / "regpath.png"]


def main(argv: list[str] | None = None) -> None:
    sweep_dir, out = figure_cli(__doc__, argv)
    traj, keys = load(sweep_dir)
    figure(traj, out / "regpath.png", keys)
    end = traj.sort_values("R").groupby(["config_hash", "seed"]).tail(1)  # last R before underflow
    print(end.groupby(keys)[["corr_fro", "corr_nuc"]].mean())
    print(f"figure: {out / 'regpath.png'}")


if __name__ == "__main__":
    main()
