"""gd's 2-D path figures ``paths_T{T}``: W(k) z_i against the rays W^mm z_i, W^mm_* z_i and
the separating lines, for W and (K,Q) (figures_sweep.py draws them when a sweep has paths).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from attnsvm.figures.files import save

PARAM_LABEL = {"w": r"$W$", "kq": r"$(K,Q)$"}
SEQ_COLOR = ("tab:red", "tab:blue", "tab:green", "tab:purple")
TOKEN_STYLE = (("c", "d"), ("y", "o"), ("tab:olive", "s"), ("tab:pink", "^"))


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
        written += save(fig, out, f"paths_T{T}" + (f"_seed{seed}" if seed else ""))
    return written
