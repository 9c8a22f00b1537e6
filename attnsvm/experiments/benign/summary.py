"""What a benign job or sweep found, in its own terms: per config point the share of seeds that
overfit benignly, harmfully or not at all (at the end and after 2 steps), clean and flipped
training accuracy, clean test accuracy against the Bayes-optimal, where attention went, and the
max-margin interpolator's test accuracy and alignment."""

from __future__ import annotations

import pandas as pd

KEYS = ["benign.setting", "n", "T", "d", "benign.eta", "benign.snr"]


def summary_table(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per config point (setting, n, T, d, eta, snr), over its ok seeds."""
    keys = [k for k in KEYS if k in runs]
    ok = runs[runs.status == "ok"].assign(
        is_benign=lambda df: df.label == "benign",
        is_harmful=lambda df: df.label == "harmful",
        is_benign_step2=lambda df: df.label_step2 == "benign",
        mm_benign=lambda df: df.mm_label == "benign",
    )
    table = ok.groupby(keys, dropna=False).agg(
        seeds=("seed", "size"),
        share_benign=("is_benign", "mean"),
        share_harmful=("is_harmful", "mean"),
        share_benign_step2=("is_benign_step2", "mean"),
        fit_clean_mean=("fit_clean", "mean"),
        fit_flipped_mean=("fit_flipped", "mean"),
        test_acc_mean=("test_acc", "mean"),
        test_acc_step2_mean=("test_acc_step2", "mean"),
        mm_test_acc_mean=("mm_test_acc", "mean"),
        share_mm_benign=("mm_benign", "mean"),
        bayes_acc=("bayes_acc", "first"),
        attn_clean_mean=("attn_clean", "mean"),
        attn_flipped_mean=("attn_flipped", "mean"),
        corr_q_median=("corr_q", "median"),
        corr_v_median=("corr_v", "median"),
    )
    total = runs.groupby(keys, dropna=False).size().rename("runs")
    return table.join(total, how="right").reset_index()


def threshold(table: pd.DataFrame) -> pd.DataFrame:
    """Per (setting, n, T, d, eta): the smallest snr at which at least half of the seeds overfit
    benignly (NaN if none): where harmful overfitting turns benign."""
    keys = [k for k in KEYS[:-1] if k in table]
    rows = []
    for point, g in table.groupby(keys, dropna=False):
        hit = g[g.share_benign >= 0.5]["benign.snr"]
        rows.append({**dict(zip(keys, point, strict=True)),
                     "snr_threshold": hit.min() if len(hit) else float("nan")})  # fmt: skip
    return pd.DataFrame(rows)


def summary_text(runs: pd.DataFrame, seconds: float) -> str:
    """Printed after a job: per config point, the labels, accuracies and attention."""
    from attnsvm.results.contract import not_ok_lines

    lines = [f"benign: {len(runs)} seeds in {seconds:.1f} s"]
    lines += not_ok_lines(runs)
    for _, row in summary_table(runs).iterrows():
        head = (f"  {row['benign.setting']} (n,T,d)=({row['n']},{row['T']},{row['d']}) "
                f"eta={row['benign.eta']:g} snr={row['benign.snr']:g}")  # fmt: skip
        if not row.seeds > 0:
            lines.append(f"{head}: no seed finished ok")
            continue
        lines.append(
            f"{head}: benign {row.share_benign:.0%} (after 2 steps {row.share_benign_step2:.0%}), "
            f"harmful {row.share_harmful:.0%}; train fit clean {row.fit_clean_mean:.2f} / flipped "
            f"{row.fit_flipped_mean:.2f}; test {row.test_acc_mean:.3f} (Bayes "
            f"{row.bayes_acc:.3f}, max-margin {row.mm_test_acc_mean:.3f}); attention on signal "
            f"clean {row.attn_clean_mean:.2f} / flipped {row.attn_flipped_mean:.2f}; corr_q "
            f"{row.corr_q_median:.3f}"
        )
    return "\n".join(lines)
