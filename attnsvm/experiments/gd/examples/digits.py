"""Figures of ``+sweeps=digits``: attention on real images (digits_data.py).

``digits.png``: for seed 0 of each (n, patch) job, the first 8 images with the patch GD
selected (solid red: the final softmax's argmax) and the highest-scoring patch under the head
(dashed cyan, where it differs), next to p^mm (the p-SVM at the selected patches) and the final
p, both drawn as a patch. ``digits_table.csv``: per (n, patch) the share of seeds whose SVM at
the optimal patches is feasible, saturated seeds, corr(p, p^mm) at the selected patches,
locally optimal seeds, support patches, and how often GD selected the highest-scoring patch.

python -m attnsvm.aggregate outputs/sweeps/digits   # into SWEEP_DIR/summary
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.patches import Rectangle

from attnsvm.figures.command import figure_cli, save_figure
from attnsvm.results.aggregate import load_sweep

from ..parts import reads_dataset_key
from .digits_data import _digits, pick

SHOWN = 8
selects = reads_dataset_key("patch")  # its runs: images cut into patches


def table(runs: pd.DataFrame) -> pd.DataFrame:
    g = runs.groupby(["dataset.n", "dataset.patch"])
    out = g.agg(
        seeds=("seed", "size"),
        opt_svm_feasible=("feasible", "mean"),
        saturated=("saturated", "mean"),
        corr_p_mm_mean=("corr_fro", "mean"),
        corr_p_mm_min=("corr_fro", "min"),
        corr_p_mm_nan=("corr_fro", lambda c: int(c.isna().sum())),
        locally_optimal=("locally_optimal", "mean"),
        n_support_mean=("n_support", "mean"),
        share_selected_opt=("share_selected_opt", "mean"),
        softmax_min_median=("softmax_min", "median"),
    )
    return out.reset_index().rename(columns={"dataset.n": "n", "dataset.patch": "patch"})


def _patch_image(vec: np.ndarray, patch: int) -> np.ndarray:
    return vec[: patch * patch].reshape(patch, patch)


def figure(runs: pd.DataFrame, traj: pd.DataFrame, path: Path) -> None:
    images, _ = _digits()
    jobs = runs[runs.seed == 0].sort_values(["dataset.patch", "dataset.n"])
    fig, axes = plt.subplots(len(jobs), SHOWN + 2, figsize=(1.5 * (SHOWN + 2), 1.8 * len(jobs)))
    axes = np.atleast_2d(axes)
    for row, (_, job) in zip(axes, jobs.iterrows(), strict=True):
        patch, n = int(job["dataset.patch"]), int(job["dataset.n"])
        classes = [int(c) for c in str(job["dataset.classes"]).split(",")]
        idx = pick(classes, n, 0)
        sel = [int(t) for t in job.selected.split(",")]
        opt = [int(t) for t in job.opt.split(",")]
        k = 8 // patch
        for ax, i in zip(row[:SHOWN], range(min(SHOWN, n)), strict=False):
            ax.imshow(images[idx[i]], cmap="gray_r", vmin=0, vmax=1)
            for t, style, color in ((opt[i], "--", "c"), (sel[i], "-", "r")):
                r, c = divmod(t, k)
                ax.add_patch(
                    Rectangle(
                        (c * patch - 0.5, r * patch - 0.5), patch, patch,
                        fill=False, ls=style, lw=2, ec=color,
                    )
                )  # fmt: skip
            ax.set_axis_off()
        row[0].set_title(f"n={n}, patch={patch}", fontsize=8, loc="left")
        final = traj[(traj.config_hash == job.config_hash) & (traj.seed == 0)]
        final = final.sort_values("step").iloc[-1]
        p = np.array([final[f"p{j}"] for j in range(int(job.d))])
        for ax, vec, title in (
            (
                row[SHOWN],
                np.array([job.get(f"p_mm{j}", np.nan) for j in range(int(job.d))]),
                "p^mm",
            ),
            (row[SHOWN + 1], p, f"final p, corr {job.corr_fro:.3f}"),
        ):
            if np.isfinite(vec).all():
                lim = np.abs(vec[: patch * patch]).max()
                ax.imshow(_patch_image(vec, patch), cmap="RdBu_r", vmin=-lim, vmax=lim)
            ax.set_title(title, fontsize=7)
            ax.set_axis_off()
    save_figure(fig, path, dpi=100)


def figures(runs: pd.DataFrame, traj: pd.DataFrame, out: Path, sweep=None) -> list[Path]:
    """What ``python -m attnsvm.aggregate`` draws for the digits' runs: the table and curves."""
    table(runs).round(6).to_csv(out / "digits_table.csv", index=False)
    figure(runs, traj, out / "digits.png")
    return [out / "digits_table.csv", out / "digits.png"]


def main(argv: list[str] | None = None) -> None:
    sweep_dir, out = figure_cli(__doc__, argv)
    sweep = load_sweep(sweep_dir)
    runs = sweep.runs[selects(sweep.runs)]
    if runs.empty:
        raise SystemExit(f"no dataset=digits results under {sweep_dir}")
    summary = table(runs)
    summary.round(6).to_csv(out / "digits_table.csv", index=False)
    figure(runs, sweep.trajectory, out / "digits.png")
    print(summary.round(4).to_string(index=False))
    print(f"figure: {out / 'digits.png'}")


if __name__ == "__main__":
    main()
