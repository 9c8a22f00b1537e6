"""Seaborn figures of an aggregated sweep, chosen by what the sweep holds (PNG and PDF).

    python -m attnsvm.aggregate outputs/sweeps/local     # calls draw_all

Other experiments draw their own figures (their package's plots.py); these are the shared
ones, for sweeps of the paper's pipeline.

* ``rank``: SVMs only (train=false) over several d: rank of W^mm (solid) and W^mm_* (dashed)
  vs d over feasible instances, one line per (n, T); the feasibility rate beside it;
* ``curves``: a few trained config points: softmax saturation, corr and 1 - corr vs iteration
  (mean +- std; median and 10-90 % band on the log scale), W vs (K,Q);
* ``convergence``: trained over several d: stacked global / local / other shares and the
  feasibility rate of the SVM at opt vs d;
* ``paths_T{T}``: 2-D path data: W(k) z_i against the rays W^mm z_i, W^mm_* z_i and the
  separating lines, for W and (K,Q).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

PARAM_LABEL = {"w": r"$W$", "kq": r"$(K,Q)$"}
PARAM_COLOR = {"w": "tab:blue", "kq": "tab:red"}
SEQ_COLOR = ("tab:red", "tab:blue", "tab:green", "tab:purple")
TOKEN_STYLE = (("c", "d"), ("y", "o"), ("tab:olive", "s"), ("tab:pink", "^"))
MAX_CURVE_POINTS = 8  # more config points than this get no per-iteration figure


def _save(fig, out: Path, name: str) -> list[Path]:
    paths = [out / f"{name}.png", out / f"{name}.pdf"]
    fig.savefig(paths[0], dpi=110, bbox_inches="tight")
    fig.savefig(paths[1], bbox_inches="tight")
    plt.close(fig)
    return paths


def _trained(runs: pd.DataFrame) -> bool:
    return "conv_type" in runs and runs.conv_type.notna().any()


def draw_all(sweep, summary: pd.DataFrame, out: Path) -> list[Path]:
    """Every figure that fits the sweep's contents; returns the files written."""
    sns.set_theme(style="whitegrid", context="notebook")
    runs, written = sweep.runs, []
    several_d = runs["d"].nunique() > 1
    if "paths" in sweep.extra and not sweep.extra["paths"].empty:
        written += paths_figures(sweep.extra["paths"], sweep.extra.get("tokens"), out)
    elif not _trained(runs):
        if several_d and "rank_fro_mean" in summary:
            written += _save(rank_figure(summary, sweep.keys), out, "rank")
    else:
        if several_d:
            written += _save(convergence_figure(summary, sweep.keys), out, "convergence")
        traj = gd_trajectory(sweep)
        curves = {"softmax_max", "corr_fro", "corr_nuc"} <= set(traj.columns)
        if summary.config_hash.nunique() <= MAX_CURVE_POINTS and curves and not traj.empty:
            swept = [k for k in sweep.swept if k != "experiment"]
            written += _save(curves_figure(traj, swept), out, "curves")
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


def convergence_figure(summary: pd.DataFrame, keys: list[str]):
    """Stacked shares of runs converging to the global SVM, a local SVM, neither, or not
    converged by the end of training, vs d; the feasibility rate of the SVM at opt on top. One
    panel per config point of the other keys (summaries from before "not converged": three)."""
    panel_keys = [k for k in keys if k != "d"]
    panels = list(summary.groupby(panel_keys))
    cols = min(len(panels), 2)
    rows = -(-len(panels) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(9.5 * cols, 4.8 * rows), squeeze=False)
    colors = {
        "global": "tab:green",
        "local": "tab:orange",
        "other": "tab:gray",
        "not_converged": "tab:red",
    }
    kinds = [k for k in colors if f"{k}_share" in summary]
    for ax in axes.flat[len(panels) :]:
        ax.set_visible(False)
    for ax, (values, g) in zip(axes.flat, panels, strict=False):
        g = g.sort_values("d")
        bottom = np.zeros(len(g))
        for kind in kinds:
            label = kind.replace("_", " ")
            ax.bar(g.d, g[f"{kind}_share"], bottom=bottom, color=colors[kind], label=label)
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


def _separating_line(ax, x_opt, p, color, lim):
    """{x : x^T p = x_opt^T p - 1/2}: halfway between the selected token and the SVM margin."""
    c = x_opt @ p - 0.5
    t = np.linspace(-1, 1, 2) * 4 * max(abs(np.r_[lim[0], lim[1]]))
    base = c * p / (p @ p)
    direction = np.array([-p[1], p[0]]) / np.linalg.norm(p)
    pts = base[None, :] + t[:, None] * direction[None, :]
    ax.plot(pts[:, 0], pts[:, 1], color=color, linestyle=":", linewidth=1.8, alpha=0.8)


def _token_markers(ax, tokens) -> None:
    """Each sequence's tokens in its colour and marker; its optimal token a star."""
    for i, g in tokens.groupby("i"):
        c, m = TOKEN_STYLE[int(i) % 4]
        rest = g[~g.is_opt]
        ax.scatter(rest.x0, rest.x1, marker=m, color=c, s=70, edgecolors="k", zorder=5)
        best = g[g.is_opt]
        ax.scatter(best.x0, best.x1, marker="*", color=c, s=200, edgecolors="k", zorder=6)


def _margin_lines(ax, paths, tokens, own: str, n: int, lim) -> None:
    """Per sequence, the separating line of its own SVM's ray through the optimal token."""
    for i in range(n):
        r = paths[(paths.kind == own) & (paths.i == i)]
        best = tokens[(tokens.i == i) & tokens.is_opt]
        if not r.empty and not best.empty:
            xy, ray = best[["x0", "x1"]].to_numpy()[0], r[["c0", "c1"]].to_numpy()[0]
            _separating_line(ax, xy, ray, SEQ_COLOR[i % 4], lim)


def _path_panel(ax, paths, tokens, param, zoom):
    gd = paths[paths.kind == "gd"]
    n = int(paths.i.max()) + 1
    own = "w_mm_nuc" if param == "kq" else "w_mm"
    for i in range(n):
        color = SEQ_COLOR[i % 4]
        p = gd[gd.i == i].sort_values("step")
        ax.plot(p.c0, p.c1, color=color, linewidth=1.5, zorder=3)
        xy = p[["c0", "c1"]].to_numpy()[::10]  # every 10th step: no arrows on 2-step wiggles
        arc = np.r_[0, np.cumsum(np.linalg.norm(np.diff(xy, axis=0), axis=1))]
        for k in np.searchsorted(arc, np.linspace(0, arc[-1], 8)[1:-1]).clip(0, len(xy) - 2):
            ax.annotate(
                "",
                xy=xy[k + 1],
                xytext=xy[k],
                zorder=4,
                arrowprops=dict(arrowstyle="-|>", color=color, mutation_scale=16),
            )
        for kind, ls in (("w_mm", "-"), ("w_mm_nuc", "--")):
            r = paths[(paths.kind == kind) & (paths.i == i)]
            if not r.empty:
                v = r[["c0", "c1"]].to_numpy()[0]
                far = v / np.linalg.norm(v) * 1e3
                ax.plot(
                    [0, far[0]],
                    [0, far[1]],
                    color=color,
                    linestyle=ls,
                    linewidth=1.5 if kind == own else 1.0,
                    alpha=1 if kind == own else 0.5,
                )
    if tokens is not None and not tokens.empty:
        _token_markers(ax, tokens)
    xs = np.r_[gd.c0, 0.0]
    ys = np.r_[gd.c1, 0.0]
    if zoom:
        lim = np.array([-2.5, 2.5]) if tokens is None else None
        if tokens is not None:
            span = max(np.abs(tokens[["x0", "x1"]].to_numpy()).max() * 1.6, 2.0)
            lim = np.array([-span, span])
        ax.set_xlim(*lim)
        ax.set_ylim(*lim)
        ax.set_aspect("equal")
        if tokens is not None:
            _margin_lines(ax, paths, tokens, own, n, lim)
    else:
        pad = 0.08 * max(np.ptp(xs), np.ptp(ys), 1.0)
        ax.set_xlim(xs.min() - pad, xs.max() + pad)
        ax.set_ylim(ys.min() - pad, ys.max() + pad)
    ax.axhline(0, color="0.6", linewidth=0.6, zorder=0)
    ax.axvline(0, color="0.6", linewidth=0.6, zorder=0)


def paths_figures(paths: pd.DataFrame, tokens: pd.DataFrame | None, out: Path) -> list[Path]:
    """One figure per data set (T, seed): columns W and (K,Q); top the whole path, bottom a
    zoom on the tokens with the separating lines of the parameterization's own SVM."""
    written = []
    for (T, seed), g in paths.groupby(["T", "seed"]):
        params = [p for p in ("w", "kq") if p in set(g.parameterization)]
        fig, axes = plt.subplots(2, len(params), figsize=(6.2 * len(params), 11), squeeze=False)
        for col, param in enumerate(params):
            gp = g[g.parameterization == param]
            tk = None
            if tokens is not None and not tokens.empty:
                tk = tokens[(tokens["T"] == T) & (tokens.seed == seed)]
                tk = tk[tk.config_hash == gp.config_hash.iloc[0]]
            for row, zoom in enumerate((False, True)):
                ax = axes[row, col]
                _path_panel(ax, gp, tk, param, zoom)
                svm = r"$W^{mm}_\star$" if param == "kq" else r"$W^{mm}$"
                where = "near the tokens" if zoom else "whole path, 2000 steps"
                ax.set_title(f"{PARAM_LABEL[param]}: GD path vs {svm} ({where})", fontsize=11)
                ax.set(xlabel="first coordinate", ylabel="second coordinate")
        n = int(g.i.max()) + 1
        handles = [
            plt.Line2D([], [], color=SEQ_COLOR[i % 4], linewidth=2, label=f"$W(k)z_{i + 1}$")
            for i in range(n)
        ] + [
            plt.Line2D([], [], color="k", linestyle="-", label=r"ray $W^{mm}z_i$"),
            plt.Line2D([], [], color="k", linestyle="--", label=r"ray $W^{mm}_\star z_i$"),
            plt.Line2D([], [], color="k", linestyle=":", label="separating line"),
            plt.Line2D(
                [],
                [],
                color="w",
                marker="*",
                markeredgecolor="k",
                markersize=14,
                label=r"optimal token $x_{i,\mathrm{opt}_i}$",
            ),
        ]
        fig.legend(handles=handles, loc="lower center", ncol=4, fontsize=10)
        fig.suptitle(f"2-D GD paths, $n={n}$, $T={T}$, $d=2$ (seed {seed})", fontsize=13)
        fig.tight_layout(rect=(0, 0.06, 1, 0.97))
        written += _save(fig, out, f"paths_T{T}" + (f"_seed{seed}" if seed else ""))
    return written
