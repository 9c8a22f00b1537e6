"""Figures of the optimizer-geometry sweeps, chosen by what the sweep holds
(docs/math.md#optimizer-geometry-and-the-svm-norm).

* ``+sweeps=geometry`` (several step rules, several SVM norms): heatmaps of the final margin
  ratio gamma_N(W) / gamma_N* and of corr(W, W^mm_N), rows step rules, columns norms, where
  the theory's pairing is outlined; ``geometry_table.csv``.
* ``+sweeps=geometry_d``: the same pairing as d grows (one panel per step rule).
* ``+sweeps=geometry_adam`` (variants of one rule, batch sizes): also ``geometry_adam_table.csv``
  and ``geometry_adam.png`` (variants.py).
* ``+sweeps=mirror`` / ``mirror_joint`` (mirror descent): the Bregman divergence of each
  p-path to the l1.75-, l2- and l3-SVMs against iterations, mean over seeds, as published;
  ``mirror_table.csv``.

python -m attnsvm.aggregate outputs/sweeps/geometry   # into SWEEP_DIR/summary
"""

from __future__ import annotations

import itertools
from pathlib import Path
from types import SimpleNamespace

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from attnsvm.config.checks import builtin_or_path
from attnsvm.config.enums import Optimizer
from attnsvm.figures.command import figure_cli, save_figure
from attnsvm.results.aggregate import load_sweep
from attnsvm.svm import norms
from attnsvm.train.step_rules import limit_norm

from .variants import (
    has_variants,
    variant_figure,
    variant_table,
)

NORM_ORDER = ["fro", "l2", "nuc", "l1p75", "l3", "max", "spectral"]


def selects(runs: pd.DataFrame) -> pd.Series:
    """Its runs: all of a sweep of several step rules, of mirror descent alone or of variants
    of one rule (+sweeps=geometry_adam), where their convergence types were recorded."""
    rules = runs.optimizer.nunique() > 1 or set(runs.optimizer) == {"md"} or has_variants(runs)
    return pd.Series(bool(rules and "conv_type" in runs), index=runs.index)


def rule_label(runs: pd.DataFrame) -> pd.Series:
    """ "md p=3" for mirror descent, else the step rule's name (only md's rows carry p)."""
    if "optimizer.p" not in runs:
        return runs.optimizer
    p = runs["optimizer.p"].map(lambda x: f"{x:g}")
    return runs.optimizer.where(runs.optimizer != "md", "md p=" + p)


def predicted(optimizer: str, p: float | None) -> str:
    """The norm (column suffix) the step rule's geometry is predicted to pick: its own
    declaration (``svm_norm`` / ``limit_norm`` in attnsvm/train/step_rules.py); read off the
    rule, not a config (a rule's other keys, as adamw's lambda, need not be at hand); ``p``:
    mirror descent's potential, the only rule that reads it."""
    kind = builtin_or_path(optimizer, Optimizer)
    return norms.column(limit_norm(SimpleNamespace(kind=kind, p=p if p is None else float(p))))


def _pairs(table: pd.DataFrame) -> set[tuple[str, str]]:
    """(rule, norm) of the predicted pairings in ``geometry_table``'s rows."""
    return set(zip(table.rule[table.predicted], table.norm[table.predicted], strict=True))


def norm_columns(runs: pd.DataFrame, prefix: str) -> list[str]:
    """The norm suffixes with a ``<prefix>_<norm>`` column, in a stable order."""
    found = [c[len(prefix) + 1 :] for c in runs.columns if c.startswith(prefix + "_")]
    found = [n for n in found if not n.endswith(("_opt", "_sel"))]
    return sorted(found, key=lambda n: (NORM_ORDER.index(n) if n in NORM_ORDER else 99, n))


def geometry_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Mean final margin ratio and corr per (step rule, d, norm) over ok seeds."""
    ok = runs[runs.status == "ok"].assign(rule=rule_label(runs))
    rows = []
    for (rule, d), g in ok.groupby(["rule", "d"]):
        p = g["optimizer.p"].iloc[0] if "optimizer.p" in g else None  # md's rows only
        own = predicted(g.optimizer.iloc[0], p)
        for norm in norm_columns(g, "margin"):
            rows.append(
                {
                    "rule": rule,
                    "d": d,
                    "norm": norm,
                    "seeds": len(g),
                    "margin_mean": g[f"margin_{norm}"].mean(),
                    "corr_mean": g[f"corr_{norm}"].mean(),
                    "rate_median": g[f"rate_{norm}"].median(),  # NaN: froze too early to fit
                    "rate_fitted": int(g[f"rate_{norm}"].notna().sum()),
                    "predicted": own == norm,
                }
            )
    return pd.DataFrame(rows)


def heatmaps(table: pd.DataFrame, path: Path) -> None:
    """Rows step rules, columns norms; the predicted pairing outlined."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.8))
    panels = [("margin_mean", "final margin ratio γ_N(W)/γ*_N"), ("corr_mean", "final corr")]
    for ax, (col, title) in zip(axes, panels, strict=True):
        grid = table.pivot_table(index="rule", columns="norm", values=col)
        grid = grid[[n for n in NORM_ORDER if n in grid] + [n for n in grid if n not in NORM_ORDER]]
        im = ax.imshow(grid.values, cmap="viridis", vmin=np.nanmin(grid.values), vmax=1)
        ax.set(xticks=range(grid.shape[1]), yticks=range(grid.shape[0]), title=title)
        ax.set_xticklabels(grid.columns, rotation=30, ha="right")
        ax.set_yticklabels(grid.index)
        for i, rule in enumerate(grid.index):
            for j, norm in enumerate(grid.columns):
                dark = grid.values[i, j] < np.nanmean(grid.values)
                ax.text(j, i, f"{grid.values[i, j]:.3f}", ha="center", va="center", fontsize=7,
                        color="w" if dark else "k")  # fmt: skip
                if (rule, norm) in _pairs(table):
                    ax.add_patch(plt.Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, ec="r", lw=2))
        fig.colorbar(im, ax=ax, shrink=0.8)
    fig.suptitle("row's step rule vs column's SVM norm (red: the predicted pairing)")
    save_figure(fig, path)


def d_figure(table: pd.DataFrame, path: Path) -> None:
    """Final margin ratio vs d, one panel per step rule, one line per norm."""
    rules = sorted(table.rule.unique())
    fig, axes = plt.subplots(1, len(rules), figsize=(3.6 * len(rules), 3.4), sharey=True)
    for ax, rule in zip(np.atleast_1d(axes), rules, strict=True):
        for norm, g in table[table.rule == rule].groupby("norm"):
            bold = (rule, norm) in _pairs(table)
            ax.plot(g.d, g.margin_mean, "-o" if bold else ":.", lw=2.5 if bold else 1, label=norm)
        ax.set(title=rule, xlabel="d", xticks=sorted(table.d.unique()))
        ax.grid(alpha=0.4)
    np.atleast_1d(axes)[0].set_ylabel("final margin ratio (mean)")
    np.atleast_1d(axes)[-1].legend(fontsize=7)
    save_figure(fig, path)


def bregman_curves(sweep, path: Path) -> pd.DataFrame:
    """Mean Bregman divergence of each p-path (and init) to each lp-SVM vs iteration."""
    keys = ["optimizer", "optimizer.p", "parameterization.init", "status"]
    keys = [k for k in keys if k in sweep.runs and k not in sweep.trajectory]  # p: md's rows
    keys = ["config_hash", "seed", *keys]
    tr = sweep.trajectory.merge(sweep.runs[keys], on=["config_hash", "seed"])
    tr = tr[tr.status == "ok"].assign(rule=lambda t: rule_label(t))
    cols = [c for c in tr.columns if c.startswith("bregman_l")]  # the lp-SVMs (l2 = fro)
    rules, inits = sorted(tr.rule.unique()), sorted(tr["parameterization.init"].unique())
    fig, axes = plt.subplots(
        len(inits), len(rules), figsize=(4.2 * len(rules), 3.4 * len(inits)), squeeze=False
    )
    finals = []
    for (i, init), (j, rule) in itertools.product(enumerate(inits), enumerate(rules)):
        ax = axes[i, j]
        g = tr[(tr.rule == rule) & (tr["parameterization.init"] == init)]
        mean = g.groupby("step")[cols].mean()
        for col in cols:
            ax.plot(mean.index, mean[col].clip(lower=1e-16), label=col.replace("bregman_", "D to "))
        ax.set(title=f"{rule}, init {init} ({g.seed.nunique()} seeds)", xlabel="iteration",
               yscale="log", ylabel="mean Bregman divergence")  # fmt: skip
        ax.grid(alpha=0.4)
        ax.legend(fontsize=7)
        if len(mean):  # a (rule, init) of the grid without ok seeds: an empty panel
            finals.append({"rule": rule, "init": init, **mean.iloc[-1].to_dict()})
    save_figure(fig, path)
    return pd.DataFrame(finals)


def figures(runs: pd.DataFrame, traj: pd.DataFrame, out: Path, sweep=None) -> list[Path]:
    """What ``python -m attnsvm.aggregate`` draws for step rules x SVM norms: the Bregman
    curves of mirror descent alone, else the pairing heatmap (or its trend over d)."""
    if set(runs.optimizer) == {"md"} and sweep is not None:
        bregman_curves(sweep, out / "mirror.png").to_csv(out / "mirror_table.csv", index=False)
        return [out / "mirror_table.csv", out / "mirror.png"]
    table = geometry_table(runs)
    table.to_csv(out / "geometry_table.csv", index=False)
    name = "geometry_d.png" if table.d.nunique() > 1 else "geometry.png"
    (d_figure if table.d.nunique() > 1 else heatmaps)(table, out / name)
    made = [out / "geometry_table.csv", out / name]
    if has_variants(runs):  # +sweeps=geometry_adam: a row per variant and batch size
        variant_table(runs).to_csv(out / "geometry_adam_table.csv", index=False)
        variant_figure(runs, out / "geometry_adam.png")
        made += [out / "geometry_adam_table.csv", out / "geometry_adam.png"]
    return made


def main(argv: list[str] | None = None) -> None:
    sweep_dir, out = figure_cli(__doc__, argv)
    sweep = load_sweep(sweep_dir)
    if set(sweep.runs.optimizer) == {"md"}:  # mirror descent only: its Bregman curves
        table = bregman_curves(sweep, out / "mirror.png")
        table.to_csv(out / "mirror_table.csv", index=False)
        print(table.to_string(index=False, float_format=lambda x: f"{x:.3g}"))
        print(f"figure: {out / 'mirror.png'}")
        return
    table = geometry_table(sweep.runs)
    table.to_csv(out / "geometry_table.csv", index=False)
    if table.d.nunique() > 1:
        d_figure(table, out / "geometry_d.png")
        print(f"figure: {out / 'geometry_d.png'}")
    else:
        heatmaps(table, out / "geometry.png")
        print(f"figure: {out / 'geometry.png'}")
    print(table.pivot_table(index="rule", columns="norm", values="margin_mean").round(4))


if __name__ == "__main__":
    main()
