"""Sweep figures of benign, one per (setting, n):

- ``benign_<setting>_n<n>.png``: against snr (log), one column per eta: top, clean test accuracy
  (trained model and max-margin interpolator, Bayes-optimal dashed) and the training accuracy
  on flipped labels; bottom, mean attention on the signal token for clean and flipped samples;
  the threshold (the smallest snr where half the seeds overfit benignly) a vertical line.
Writes ``benign_table.csv`` (summary_table) and ``benign_threshold.csv`` beside them.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

SNR, ETA = "benign.snr", "benign.eta"


def _panel(axes, sub: pd.DataFrame, cut: float) -> None:
    sub = sub.sort_values(SNR)
    top, bottom = axes
    top.plot(sub[SNR], sub.test_acc_mean, "o-", label="test acc (GD)")
    top.plot(sub[SNR], sub.mm_test_acc_mean, "s--", label="test acc (max-margin)")
    top.plot(sub[SNR], sub.fit_flipped_mean, "^:", label="train acc, flipped")
    top.plot(sub[SNR], sub.bayes_acc, "k--", lw=0.8, label="Bayes")
    bottom.plot(sub[SNR], sub.attn_clean_mean, "o-", label="attn on signal, clean")
    bottom.plot(sub[SNR], sub.attn_flipped_mean, "^-", label="attn on signal, flipped")
    for ax in axes:
        ax.set_xscale("log")
        ax.set_ylim(-0.03, 1.03)
        if cut == cut:  # not NaN
            ax.axvline(cut, color="gray", lw=1)
    bottom.set_xlabel("snr = signal norm / sqrt(d)")


def snr_figure(table: pd.DataFrame, cuts: pd.DataFrame, title: str, path: Path) -> Path:
    """The figure of one (setting, n): a column per eta."""
    etas = sorted(table[ETA].unique())
    fig, axes = plt.subplots(2, len(etas), figsize=(3.6 * len(etas), 5.6), squeeze=False)
    for j, eta in enumerate(etas):
        cut = cuts[cuts[ETA] == eta].snr_threshold
        _panel(axes[:, j], table[table[ETA] == eta], float(cut.iloc[0]) if len(cut) else 0.0)
        axes[0, j].set_title(f"{title}, eta={eta:g}", fontsize=9)
    axes[0, 0].legend(fontsize=6)
    axes[1, 0].legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def figures(runs: pd.DataFrame, trajectory: pd.DataFrame, out_dir, sweep=None) -> list[Path]:
    """The figure per (setting, n) and the two tables (what docs/benign.md and the README quote
    once published)."""
    from .summary import summary_table, threshold

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    table = summary_table(runs)
    cuts = threshold(table)
    table.round(6).to_csv(out_dir / "benign_table.csv", index=False)
    cuts.to_csv(out_dir / "benign_threshold.csv", index=False)
    written = [out_dir / "benign_table.csv", out_dir / "benign_threshold.csv"]
    for (setting, n), sub in table.groupby(["benign.setting", "n"]):
        at = cuts[(cuts["benign.setting"] == setting) & (cuts.n == n)]
        path = out_dir / f"benign_{setting}_n{n}.png"
        written.append(snr_figure(sub, at, f"{setting} n={n}", path))
    return written
