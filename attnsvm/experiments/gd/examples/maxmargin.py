"""Figures of ``+sweeps=maxmargin``: the published examples of max-margin token selection.

One row per example (logistic loss): the path of p in the token plane (first two coordinates
of x~ = M x) with the keys, the SVM ray p^mm at the selected tokens (and the relaxed one for
joint training), float64 solid and float32 (the published form) dashed; 1 - the softmax
probability of the selected token; ||p||; 1 - corr with the SVM (relaxed SVM and v^mm too
for joint training). A second figure compares the losses on the ``loss`` example. Tables:
``maxmargin_table.csv`` (final values per example, dtype and loss).

python -m attnsvm.aggregate outputs/sweeps/maxmargin   # into SWEEP_DIR/summary
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from attnsvm.figures.command import figure_cli, save_figure
from attnsvm.results.aggregate import load_sweep

from ..parts import reads_dataset_key
from .maxmargin_data import EXAMPLES

ORDER = ["single", "single_local", "multi", "joint", "joint_relaxed", "loss"]
STYLE = {"float64": "-", "float32": "--"}
selects = reads_dataset_key("example")  # its runs: a published example of the p-model
FINAL = ["corr_p_mm", "corr_relaxed", "corr_v_mm", "w_norm", "softmax_min", "grad_norm"]


def load(sweep_dir: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(runs, trajectory) of the maxmargin jobs, ok seeds, with example, dtype and loss."""
    sweep = load_sweep(sweep_dir)
    runs = sweep.runs[selects(sweep.runs)]
    if runs.empty:
        raise SystemExit(f"no dataset=maxmargin results under {sweep_dir}")
    return example_rows(runs, sweep.trajectory)


def example_rows(runs: pd.DataFrame, traj: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(runs, trajectory) of the ok seeds, with example, dtype and loss on both."""
    runs = runs[runs.status == "ok"].rename(columns={"dataset.example": "example"})
    keys = ["config_hash", "seed", "example", "dtype", "loss_function"]
    tr = traj.drop(columns=[c for c in keys[2:] + ["dataset.example"] if c in traj])
    return runs, tr.merge(runs[keys], on=["config_hash", "seed"])


def table(runs: pd.DataFrame) -> pd.DataFrame:
    """Final values per example, dtype and loss: mean and min of the correlations, ||p||."""
    cols = [c for c in FINAL if c in runs]
    g = runs.groupby(["example", "dtype", "loss_function"])
    out = g[cols].agg(["mean", "min"])
    out.columns = [f"{a}_{b}" for a, b in out.columns]
    out["seeds"] = g.size()
    out["selected"] = g.selected.agg(lambda s: " ".join(s.str.replace(",", "")))
    out["conv_type"] = g.conv_type.agg(lambda s: " ".join(s.str.replace(" ", "_")))
    return out.dropna(axis=1, how="all").reset_index()


def _path_panel(ax, ex: str, runs: pd.DataFrame, tr: pd.DataFrame) -> None:
    e = EXAMPLES[ex]
    keys = (e.X @ e.M.T).reshape(-1, e.X.shape[-1]).numpy()  # x~ of seed 0 (loss: C is hidden)
    ax.scatter(keys[:, 0], keys[:, 1], c="k", s=14, zorder=3, label="keys x~")
    lim = 0.0
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for (dtype, seed), sub in tr.groupby(["dtype", "seed"]):
        p = sub.sort_values("step")[["p0", "p1"]].to_numpy()
        color = colors[seed % len(colors)]
        ax.plot(p[:, 0], p[:, 1], STYLE[dtype], color=color, lw=1)
        lim = max(lim, np.abs(p).max())
    lim = min(lim, 25.0)  # the published pictures' scale: where float32 freezes
    for _, row in runs[runs.dtype == "float64"].iterrows():
        for name, style in (("p_mm", ":"), ("p_relaxed", "-.")):
            if f"{name}0" in row and np.isfinite(row[f"{name}0"]):
                ray = np.array([row[f"{name}0"], row[f"{name}1"]])
                ray = ray / np.linalg.norm(ray) * 2 * lim
                ax.plot([0, ray[0]], [0, ray[1]], style, color="gray", lw=1.2)
    title = f"{ex}: p paths, p^mm (:)" + (", relaxed (-.)" if "relax" in ex else "")
    ax.set(xlim=(-lim, lim), ylim=(-lim, lim), aspect="equal", title=title)


def _curve(ax, tr: pd.DataFrame, column: str, transform, title: str, log=True) -> None:
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for (dtype, seed), sub in tr.groupby(["dtype", "seed"]):
        sub = sub.sort_values("step")
        y = transform(sub[column].to_numpy())
        ax.plot(sub.step, y, STYLE[dtype], color=colors[seed % len(colors)], lw=1)
    ax.set(title=title, xlabel="iteration", yscale="log" if log else "linear")
    ax.grid(alpha=0.3)


def figure(runs: pd.DataFrame, tr: pd.DataFrame, path: Path) -> None:
    examples = [e for e in ORDER if e in set(runs.example)]
    fig, axes = plt.subplots(len(examples), 4, figsize=(15, 3.4 * len(examples)), squeeze=False)
    for row, ex in zip(axes, examples, strict=True):
        r = runs[(runs.example == ex) & (runs.loss_function == "logistic")]
        t = tr[(tr.example == ex) & (tr.loss_function == "logistic")]
        _path_panel(row[0], ex, r, t)
        _curve(row[1], t, "softmax_min", lambda s: np.maximum(1 - s, 1e-17), "1 - min_i s_i,sel")
        _curve(row[2], t, "w_norm", lambda x: x, "||p||", log=False)
        corr = "corr_relaxed" if ex == "joint_relaxed" else "corr_p_mm"
        _curve(row[3], t, corr, lambda c: np.maximum(1 - c, 1e-17), f"1 - {corr}")
        if "corr_v_mm" in t and t.corr_v_mm.notna().any():
            v = t.assign(dtype=t.dtype)  # the head: thin gray, same line styles
            for dtype, sub in v.groupby("dtype"):
                sub = sub.sort_values("step")
                row[3].plot(sub.step, np.maximum(1 - sub.corr_v_mm, 1e-17), STYLE[dtype], c="gray")
            row[3].set_title(f"1 - {corr}; gray: 1 - corr(v, v^mm)")
    axes[0, 1].plot([], [], "k-", label="float64, exact gradient")
    axes[0, 1].plot([], [], "k--", label="float32, published form")
    axes[0, 1].legend(fontsize=7)
    save_figure(fig, path, dpi=90)


def loss_figure(runs: pd.DataFrame, path: Path) -> None:
    """The ``loss`` example: final corr(p, p^mm) against C, per loss and dtype."""
    r = runs[runs.example == "loss"].copy()
    if r.empty:
        return
    from .maxmargin_data import LOSS_C

    r["C"] = [LOSS_C[s] for s in r.seed]
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    for (loss, dtype), sub in r.groupby(["loss_function", "dtype"]):
        sub = sub.sort_values("C")
        ax.plot(sub.C, 1 - sub.corr_p_mm, STYLE[dtype] + "o", ms=3, label=f"{loss}, {dtype}")
    ax.set(xscale="log", yscale="log", xlabel="C (score of sequence 1's token)")
    ax.set(ylabel="1 - corr(p, p^mm) after 1000 steps")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    save_figure(fig, path, dpi=110)


def figures(runs: pd.DataFrame, traj: pd.DataFrame, out: Path, sweep=None) -> list[Path]:
    """What ``python -m attnsvm.aggregate`` draws for the examples' runs: table, paths,
    losses."""
    runs, tr = example_rows(runs, traj)
    table(runs).round(6).to_csv(out / "maxmargin_table.csv", index=False)
    figure(runs, tr, out / "maxmargin.png")
    loss_figure(runs, out / "maxmargin_loss.png")
    return [out / "maxmargin_table.csv", out / "maxmargin.png", out / "maxmargin_loss.png"]


def main(argv: list[str] | None = None) -> None:
    sweep_dir, out = figure_cli(__doc__, argv)
    runs, tr = load(sweep_dir)
    summary = table(runs)
    summary.round(6).to_csv(out / "maxmargin_table.csv", index=False)
    figure(runs, tr, out / "maxmargin.png")
    loss_figure(runs, out / "maxmargin_loss.png")
    cols = ["example", "dtype", "loss_function", "corr_p_mm_min", "w_norm_mean", "selected"]
    extra = [c for c in ("corr_relaxed_min", "corr_v_mm_min") if c in summary]
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(summary[cols + extra].to_string(index=False))
    print(f"figures: {out / 'maxmargin.png'}, {out / 'maxmargin_loss.png'}")


if __name__ == "__main__":
    main()
