"""Figure of the regpath experiment: corr(W̄_R, W^mm) (W) and corr(K̄Q̄^T, W^mm_*) ((K,Q)) vs R.

Radii where a seed's gradient underflowed (``frozen``) are left out for that seed; a curve
shows the median over seeds at the radii where at least half of its seeds remain.

python -m attnsvm.aggregate outputs/sweeps/regpath   # regpath.png there
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from attnsvm.results.aggregate import figure_cli, load_sweep, save_figure  # noqa: E402


def load(sweep_dir: Path) -> pd.DataFrame:
    """Trajectories (one row per seed x R) of the regpath jobs under ``sweep_dir``, ok seeds,
    radii before the gradient underflowed (aggregate's loader)."""
    sweep = load_sweep(sweep_dir)
    if "R" not in sweep.trajectory:
        raise SystemExit(f"no regpath results under {sweep_dir}")
    return path_rows(sweep.runs, sweep.trajectory)


def path_rows(runs: pd.DataFrame, tr: pd.DataFrame) -> pd.DataFrame:
    """The trajectory rows of ok seeds, radii before the gradient underflowed."""
    ok = runs.loc[runs.status == "ok", ["config_hash", "seed", "attention"]]
    tr = tr.drop(columns=["attention"], errors="ignore").merge(ok, on=["config_hash", "seed"])
    return tr[~tr.frozen] if "frozen" in tr else tr


def figure(traj: pd.DataFrame, path: Path) -> None:
    traj = traj.assign(
        one_minus=1 - traj.corr_fro.where(traj.parameterization == "w", traj.corr_nuc)
    )
    fig, ax = plt.subplots(figsize=(6, 4.2))
    for (kind, d, att), sub in traj.groupby(["parameterization", "d", "attention"]):
        g = sub.groupby("R").one_minus
        keep = g.size() >= 0.5 * sub.seed.nunique()  # radii where most seeds are not frozen
        mean = g.median()[keep]
        svm_name = "$W^{mm}_*$" if kind == "kq" else "$W^{mm}$"
        label = f"{kind}, d={d}, {att}: 1 - corr(., {svm_name})"
        ax.plot(mean.index, mean.values, "-o" if kind == "w" else "--s", ms=3, label=label)
    ax.set(xscale="log", yscale="log", xlabel="R", ylabel="1 - corr (median over seeds)")
    ax.grid(alpha=0.4)
    ax.legend(fontsize=7)
    save_figure(fig, path)


def figures(runs: pd.DataFrame, traj: pd.DataFrame, out: Path, sweep=None) -> list[Path]:
    """What ``python -m attnsvm.aggregate`` draws for regpath jobs: corr against R."""
    figure(path_rows(runs, traj), out / "regpath.png")
    return [out / "regpath.png"]


def main(argv: list[str] | None = None) -> None:
    sweep_dir, out = figure_cli(__doc__, argv)
    traj = load(sweep_dir)
    figure(traj, out / "regpath.png")
    end = traj.sort_values("R").groupby(["config_hash", "seed"]).tail(1)  # last R before underflow
    print(end.groupby(["parameterization", "d", "attention"])[["corr_fro", "corr_nuc"]].mean())
    print(f"figure: {out / 'regpath.png'}")


if __name__ == "__main__":
    main()
