"""gd's figures of an aggregated sweep, chosen by what the sweep holds (PNG and PDF; routed
by plots.py for the gd sweeps that are not max-margin examples, digits or geometry studies).

* ``rank``: SVMs only (train=false) over several d: rank of W^mm (solid) and W^mm_* (dashed)
  vs d over feasible instances, one line per (n, T); the feasibility rate beside it;
* ``curves``: a few trained config points: softmax saturation, corr and 1 - corr vs iteration
  (mean +- std; median and 10-90 % band on the log scale), W vs (K,Q);
* ``convergence``: trained over several d: stacked shares of the seeds whose SVM at opt is
  feasible by convergence type (global / local / other / not converged), and of the infeasible
  seeds (no SVM to converge to: their own class, never "not converged"), vs d;
* ``paths_T{T}``: 2-D path data (figures_paths.py).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt
import matplotlib.ticker
import numpy as np
import pandas as pd
import seaborn as sns

from attnsvm.figures.files import save, theme
from attnsvm.metrics import CONV_TYPES

from .figures_paths import PARAM_LABEL, paths_figures

PARAM_COLOR = {"w": "tab:blue", "kq": "tab:red"}
MAX_CURVE_POINTS = 8  # more config points than this get no per-iteration figure


def _trained(runs: pd.DataFrame) -> bool:
    return "conv_type" in runs and runs.conv_type.notna().any()


def draw_all(sweep, summary: pd.DataFrame, out: Path) -> list[Path]:
    """Every figure that fits the sweep's contents, in the house style; returns the files
    written."""
    with theme():
        return _draw_all(sweep, summary, out)


def _draw_all(sweep, summary: pd.DataFrame, out: Path) -> list[Path]:
    runs, written = sweep.runs, []
    several_d = runs["d"].nunique() > 1
    if "paths" in sweep.extra and not sweep.extra["paths"].empty:
        written += paths_figures(sweep.extra["paths"], sweep.extra.get("tokens"), out)
    elif not _trained(runs):
        if several_d and "rank_fro_mean" in summary:
            written += save(rank_figure(summary, sweep.keys), out, "rank")
    else:
        if several_d:
            shares = convergence_shares(runs, summary)
            written += save(convergence_figure(shares, sweep.keys), out, "convergence")
        traj = gd_trajectory(sweep)
        curves = {"softmax_max", "corr_fro", "corr_nuc"} <= set(traj.columns)
        if summary.config_hash.nunique() <= MAX_CURVE_POINTS and curves and not traj.empty:
            swept = [k for k in sweep.swept if k != "experiment"]
            written += save(curves_figure(traj, swept), out, "curves")
    return written


def gd_trajectory(sweep) -> pd.DataFrame:
    """The trajectory rows of GD jobs only: a regularization path's rows are indexed by R, not
    by iteration, and never belong on an iteration axis."""
    runs, traj = sweep.runs, sweep.trajectory
    if "experiment" not in runs or traj.empty:
        return traj
    return traj[traj.config_hash.isin(runs.config_hash[runs.experiment == "gd"])]


def _label(keys: list[str], values) -> str:
    """'$n=5,\\ T=10$, solver.backend=SCS' for the config point ``values`` of ``keys``."""
    values = values if isinstance(values, tuple) else (values,)
    math = {"n": "$n={}$", "T": "$T={}$", "d": "$d={}$"}
    parts = [
        math[k].format(v)
        if k in math
        else f"{PARAM_LABEL.get(v, v)}-parameterization"
        if k == "parameterization"
        else f"{k}={v}"
        for k, v in zip(keys, values, strict=True)
    ]
    return ", ".join(parts)


def rank_figure(summary: pd.DataFrame, keys: list[str]):
    """Mean rank of W^mm (solid) and W^mm_* (dashed) over feasible instances vs d, one line
    per config point of the other keys (e.g. (n, T)); beside it the share of instances whose
    SVM at opt is feasible."""
    fig, (ax, axf) = plt.subplots(1, 2, figsize=(12, 4.8), gridspec_kw={"width_ratios": [3, 2]})
    line_keys = [k for k in keys if k != "d"]
    lines = summary.sort_values(["T", "n"]).groupby(line_keys, sort=False)
    palette = sns.color_palette("colorblind", 8)
    markers = "vodsP^X*"
    for k, (values, g) in enumerate(lines):
        g = g.sort_values("d")
        label = _label(line_keys, values)
        style = dict(color=palette[k % 8], marker=markers[k % 8], markersize=7, linewidth=2)
        ax.plot(g.d, g.rank_fro_mean, linestyle="-", label=label, **style)
        ax.plot(g.d, g.rank_nuc_mean, linestyle="--", **style)
        axf.plot(g.d, g.feasible_rate, label=label, **style)
    ax.set(xlabel="$d$", ylabel="rank of the SVM solution (feasible instances)")
    ax.set_title(r"rank of $W^{mm}$ (solid) and $W^{mm}_\star$ (dashed)")
    handles, labels = ax.get_legend_handles_labels()
    handles += [
        plt.Line2D([], [], color="k", linestyle="-", linewidth=2),
        plt.Line2D([], [], color="k", linestyle="--", linewidth=2),
    ]
    labels += [r"$W^{mm}$ (Frobenius)", r"$W^{mm}_\star$ (nuclear)"]
    ax.legend(handles, labels, fontsize=9, loc="upper left")
    ds = sorted(summary.d.unique())
    for a in (ax, axf):
        a.set_xticks(ds if len(ds) <= 10 else a.get_xticks())
        a.set_xlim(min(ds) - 0.5, max(ds) + 0.5)
    ax.yaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    axf.set(xlabel="$d$", ylabel="fraction feasible", ylim=(-0.03, 1.03))
    axf.set_title(r"SVM at $\alpha=$opt feasible")
    axf.legend(fontsize=9, loc="lower right")
    fig.tight_layout()
    return fig


COLORS = {  # convergence classes of the stacked bars, bottom to top
    "global": "tab:green",
    "local": "tab:orange",
    "other": "tab:gray",
    "not_converged": "tab:red",
    "infeasible": "lightgray",
}


def convergence_shares(runs: pd.DataFrame, summary: pd.DataFrame) -> pd.DataFrame:
    """The summary's rows with ``<kind>_share`` of each convergence type over the seeds whose
    SVM at opt is feasible (as gd's summary line counts them), and ``infeasible_share``: an
    infeasible seed has no SVM direction to converge to and is counted apart."""
    out = summary.copy()
    feasible = runs.feasible.astype(bool) if "feasible" in runs else pd.Series(True, runs.index)
    point = runs.config_hash
    seeds = point.value_counts()
    for kind in CONV_TYPES:
        hits = ((runs.conv_type == kind) & feasible).groupby(point).sum()
        out[f"{kind.replace(' ', '_')}_share"] = out.config_hash.map(hits / seeds)
    out["infeasible_share"] = out.config_hash.map((~feasible).groupby(point).sum() / seeds)
    return out


def convergence_figure(shares: pd.DataFrame, keys: list[str]):
    """Stacked shares of runs converging to the global SVM, a local SVM, neither, or not
    converged by the end of training, of the seeds whose SVM at opt is feasible, and the share
    of infeasible seeds, vs d (``convergence_shares``); the feasibility rate of the SVM at opt on
    top. One panel per config point of the other keys."""
    panel_keys = [k for k in keys if k != "d"]
    panels = list(shares.groupby(panel_keys))
    cols = min(len(panels), 2)
    rows = -(-len(panels) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(9.5 * cols, 4.8 * rows), squeeze=False)
    kinds = [k for k in COLORS if f"{k}_share" in shares]
    for ax in axes.flat[len(panels) :]:
        ax.set_visible(False)
    for ax, (values, g) in zip(axes.flat, panels, strict=False):
        g = g.sort_values("d")
        bottom = np.zeros(len(g))
        for kind in kinds:
            label = kind.replace("_", " ")
            label += " (no SVM at opt)" if kind == "infeasible" else " (feasible)"
            hatch = "//" if kind == "infeasible" else None
            ax.bar(g.d, g[f"{kind}_share"], bottom=bottom, color=COLORS[kind], hatch=hatch,
                   label=label)  # fmt: skip
            bottom += g[f"{kind}_share"].to_numpy()
        contiguous = bool((np.diff(g.d.to_numpy()) == 1).all())  # no line through an unrun d
        style = "k-o" if contiguous else "ko"
        ax.plot(g.d, g.feasible_rate, style, markersize=4, label=r"$W^{mm}$ at opt feasible")
        ax.set_xticks(g.d.to_numpy())  # the d values that ran, no fractional ticks
        ax.set_title(_label(panel_keys, values))
        seeds = int(g.seeds.max())
        ax.set(xlabel="$d$", ylabel=f"share of the {seeds} seeds per $d$", ylim=(0, 1.02))
        ax.legend(fontsize=9, loc="upper left", bbox_to_anchor=(1.01, 1))
    fig.tight_layout()
    return fig


def _band(ax, x, mid, lo, hi, color, label, linestyle="-"):
    ax.plot(x, mid, color=color, linestyle=linestyle, linewidth=2, label=label)
    ax.fill_between(x, lo, hi, color=color, alpha=0.15, linewidth=0)


def curves_figure(traj: pd.DataFrame, swept: list[str]):
    """Per iteration, mean over seeds (band: +- std): softmax saturation mean_i max_t s_it and
    corr with the SVM at the GD-selected tokens alpha (W: W^mm_alpha, (K,Q): W^mm_*,alpha);
    1 - corr on a log scale (median, band 10-90 %); dotted: the other norm's SVM."""
    fig, axes = plt.subplots(1, 3, figsize=(17, 4.8))
    others = [k for k in swept if k != "parameterization"]
    groups = sorted(
        traj.groupby(["parameterization", *others]), key=lambda kg: (kg[0][0] != "w", kg[0])
    )
    for key, g in groups:
        p = key[0] if isinstance(key, tuple) else key
        extra = ", ".join(f"{k}={v}" for k, v in zip(others, key[1:], strict=True))
        label = PARAM_LABEL.get(p, p) + (f" ({extra})" if extra else "")
        color = PARAM_COLOR.get(p) if not others else None
        own, cross = ("corr_nuc", "corr_fro") if p == "kq" else ("corr_fro", "corr_nuc")
        by_step = g.groupby("step")
        s = by_step.softmax_max.agg(["mean", "std"])
        line = axes[0].plot(s.index, s["mean"], color=color, linewidth=2, label=label)[0]
        color = line.get_color()
        axes[0].fill_between(
            s.index,
            s["mean"] - s["std"],
            (s["mean"] + s["std"]).clip(upper=1),
            color=color,
            alpha=0.15,
            linewidth=0,
        )
        c = by_step[own].agg(["mean", "std"])
        hi = (c["mean"] + c["std"]).clip(upper=1)
        _band(axes[1], c.index, c["mean"], c["mean"] - c["std"], hi, color, label)
        c2 = by_step[cross].mean()
        axes[1].plot(c2.index, c2, color=color, linestyle=":", linewidth=1.5)
        err = 1 - g[["step", own, cross]].set_index("step")
        q = err[own].groupby("step").quantile([0.1, 0.5, 0.9]).unstack()
        _band(axes[2], q.index, q[0.5], q[0.1], q[0.9], color, label)
        axes[2].plot(
            q.index, err[cross].groupby("step").median(), color=color, linestyle=":", linewidth=1.5
        )
    axes[0].set(
        xlabel="iteration $k$", ylabel=r"softmax saturation $\frac{1}{n}\sum_i \max_t s_{it}$"
    )
    axes[0].set_title("softmax probability of the selected token")
    axes[1].set(xlabel="iteration $k$", ylabel="correlation coefficient")
    axes[1].set_title(r"corr($W$, $W^{mm}_\alpha$), corr($KQ^\top$, $W^{mm}_{\star,\alpha}$)")
    axes[2].set_yscale("log")
    axes[2].set(xlabel="iteration $k$", ylabel=r"$1-$corr (median, 10–90 %)")
    axes[2].set_title(r"$1-$corr on a log scale")
    style = [
        plt.Line2D([], [], color="k", linewidth=2, label="own SVM (W: Frobenius, (K,Q): nuclear)"),
        plt.Line2D([], [], color="k", linestyle=":", label="other norm's SVM"),
    ]
    for ax in axes:
        ax.legend(fontsize=9, loc="best")
    axes[2].legend(handles=axes[2].get_legend_handles_labels()[0] + style, fontsize=8)
    fig.tight_layout()
    return fig
