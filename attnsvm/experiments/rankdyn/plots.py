"""Sweep figures of rankdyn, one set per shape (n, T, d):

- ``rankdyn_time_<shape>.png``: median loss and eff_rank over seeds against t / log(1/alpha),
  one line per alpha < 1, one column per (parameterization, rule): do the curves collapse?
  alpha = 1 has no such time (log(1/alpha) = 0): a note on the figure says it is not drawn;
- ``rankdyn_sv_<shape>.png``: every singular value of K Q^T of the first seed against the step,
  at the smallest alpha, one panel per (parameterization, rule).

Each figure's title names its shape (n, T, d).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

PARAM, RULE, ALPHA = "rankdyn.parameterization", "rankdyn.rule", "rankdyn.alpha"


def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110, bbox_inches="tight")  # the note below the axes included
    plt.close(fig)
    return path


def _panels(traj: pd.DataFrame) -> list[tuple[str, str]]:
    return sorted({(p, r) for p, r in zip(traj[PARAM], traj[RULE], strict=True)})


def _shape(traj: pd.DataFrame) -> str:
    n, T, d = (traj[k].iloc[0] for k in ("n", "T", "d"))
    return f"n={n}, T={T}, d={d}"


def time_figure(traj: pd.DataFrame, path: Path) -> Path:
    """Median loss and eff_rank against t / log(1/alpha), a line per alpha < 1; alpha >= 1
    (no such time) named in a note."""
    left_out = sorted(traj.loc[traj[ALPHA] >= 1, ALPHA].unique())
    traj = traj[(traj[ALPHA] < 1) & (traj.step > 0)]
    panels = _panels(traj)
    fig, axes = plt.subplots(2, len(panels), figsize=(3.6 * len(panels), 5.4), squeeze=False)
    alphas = sorted(traj[ALPHA].unique())
    colors = plt.cm.viridis(np.linspace(0, 0.9, len(alphas)))
    for j, (param, rule) in enumerate(panels):
        sub = traj[(traj[PARAM] == param) & (traj[RULE] == rule)]
        for alpha, color in zip(alphas, colors, strict=True):
            med = sub[sub[ALPHA] == alpha].groupby("step")[["loss", "eff_rank"]].median()
            x = med.index.to_numpy() / np.log(1 / alpha)
            for i, col in enumerate(("loss", "eff_rank")):
                axes[i, j].plot(x, med[col], color=color, label=f"alpha={alpha:g}")
        axes[0, j].set_title(f"{param}, {rule}")
        for i, col in enumerate(("loss", "median eff_rank")):
            axes[i, j].set_xscale("log")
            axes[i, j].set_ylabel(col)
        axes[1, j].set_xlabel("t / log(1/alpha)")
    axes[0, 0].legend(fontsize=7)
    fig.suptitle(_shape(traj), fontsize=10)
    if left_out:
        alphas = ", ".join(f"alpha={a:g}" for a in left_out)
        note = f"not drawn: {alphas} (t / log(1/alpha) is undefined there; see rankdyn_table.csv)"
        fig.text(0.5, -0.01, note, ha="center", va="top", fontsize=8)
    return _save(fig, path)


def sv_figure(traj: pd.DataFrame, path: Path) -> Path:
    """Every singular value of the first seed's K Q^T at the smallest alpha, log-log."""
    alpha = traj[ALPHA].min()
    traj = traj[(traj[ALPHA] == alpha) & (traj.step > 0)]
    panels = _panels(traj)
    fig, axes = plt.subplots(1, len(panels), figsize=(3.6 * len(panels), 3.2), squeeze=False)
    svs = sorted((c for c in traj if c.startswith("sv")), key=lambda c: int(c[2:]))
    for ax, (param, rule) in zip(axes[0], panels, strict=True):
        sub = traj[(traj[PARAM] == param) & (traj[RULE] == rule)]
        one = sub[sub.seed == sub.seed.min()].sort_values("step")
        for k, col in enumerate(svs):
            ax.plot(one.step, one[col].clip(lower=1e-18), lw=1, label=f"sigma_{k}")
        ax.set(xscale="log", yscale="log", xlabel="step", title=f"{param}, {rule}, alpha={alpha:g}")
    axes[0, 0].set_ylabel(f"singular values of K Q^T (seed {traj.seed.min()})")
    fig.suptitle(_shape(traj), fontsize=10)
    return _save(fig, path)


def figures(runs: pd.DataFrame, trajectory: pd.DataFrame, out_dir, sweep=None) -> list[Path]:
    """Both figures for every shape in the sweep's concatenated trajectory table, and its table
    (``rankdyn_table.csv``: per config point, stages, ranks, corr; what docs/rankdyn.md and the
    README quote once published)."""
    from .summary import summary_table

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    summary_table(runs).round(6).to_csv(out_dir / "rankdyn_table.csv", index=False)
    written = [out_dir / "rankdyn_table.csv"]
    for (n, T, d), traj in trajectory.groupby(["n", "T", "d"]):
        shape = f"{n}_{T}_{d}"
        if (traj[ALPHA] < 1).any():
            written.append(time_figure(traj, out_dir / f"rankdyn_time_{shape}.png"))
        written.append(sv_figure(traj, out_dir / f"rankdyn_sv_{shape}.png"))
    return written
