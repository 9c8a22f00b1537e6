"""The table of ``+sweeps=geometry_adam``: one row per step-rule variant (Signum's beta, Adam's
lr schedule, AdamW's lambda) and batch size, against the limit each claim names
(docs/geometry.md#adaptive-rules-and-their-proven-limits): how many seeds end closer to the
max-norm SVM than to W^mm, mean final corr and margin ratio with both, saturation, and for AdamW
lambda ||W||_max and the KKT residual of its l_inf-ball problem.

python -m attnsvm.aggregate outputs/sweeps/geometry_adam   # geometry_adam_table.csv too
"""

from __future__ import annotations

import numpy as np
import pandas as pd

# the keys that tell a sweep's variants of one step rule apart (a row each, where they vary)
VARIANT_KEYS = (
    "optimizer.beta",
    "optimizer.schedule",
    "optimizer.decay_a",
    "optimizer.weight_decay",
    "optimizer.minibatch",
)
MEANS = ("corr_max", "corr_fro", "margin_max", "margin_fro", "softmax_min", "lam_w_max", "kkt_linf")


def _text(value) -> str:
    """A key's value as the table shows it: null for missing (a full batch), numbers by %g."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return "null"
    return f"{value:g}" if isinstance(value, (int, float)) else str(value)


def has_variants(runs: pd.DataFrame) -> bool:
    """Whether one step rule runs in several variants (or batch sizes) in the sweep."""
    keys = [k for k in VARIANT_KEYS if k in runs]
    return bool(keys) and runs[keys].map(_text).drop_duplicates().shape[0] > 1


def variant_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Per (step rule, variant, batch size), over its ok seeds: ``closer_max`` (seeds whose
    final corr with the max-norm SVM exceeds corr with W^mm), the means of ``MEANS`` present,
    and ``converged`` (seeds of conv_type global or local against the rule's own limit)."""
    ok = runs[runs.status == "ok"]
    keys = ["optimizer", "optimizer.lr", *(k for k in VARIANT_KEYS if k in ok)]
    rows = []
    for values, g in ok.groupby([ok[k].map(_text) for k in keys], sort=False):
        row = dict(zip(keys, values, strict=True))
        row.update(
            seeds=len(g),
            limit=g["limit"].iloc[0],
            closer_max=int((np.nan_to_num(g.corr_max, nan=-2) > g.corr_fro).sum()),
            converged=int(g.conv_type.isin(["global", "local"]).sum()),
        )
        row.update({f"{c}_mean": g[c].mean() for c in MEANS if c in g})
        rows.append(row)
    return pd.DataFrame(rows)


# the keys a variant's label may name: a row carries those its step rule read (a rule's others
# are left out of its row: attnsvm/config/schema.py, OptimizerConfig.READ_ONLY)
LABEL_KEYS = ("lr", "eps", "beta", "weight_decay", "schedule", "decay_a")


def variant_label(row: pd.Series) -> str:
    """'adam lr=0.1 eps=1e-08 schedule=poly decay_a=0.5': the rule and every key of
    ``LABEL_KEYS`` its row carries, so no two variants share a label."""
    parts = [str(row["optimizer"])]
    for key in LABEL_KEYS:
        value = row.get(f"optimizer.{key}")
        if value is None or (isinstance(value, float) and np.isnan(value)):
            continue
        parts.append(f"{key}={_text(value)}")
    return " ".join(parts)


def variant_figure(runs: pd.DataFrame, path) -> None:
    """Per variant (a bar group) and batch size (a bar each: minibatch=null is the full
    batch), the share of ok seeds whose final corr with the max-norm SVM exceeds their corr
    with W^mm: the question each claim of the sweep asks."""
    import matplotlib.pyplot as plt

    from attnsvm.figures.command import save_figure

    ok = runs[runs.status == "ok"].copy()
    ok["variant"] = ok.apply(variant_label, axis=1)
    ok["minibatch"] = ok.get("optimizer.minibatch", pd.Series(None, index=ok.index)).map(_text)
    ok["closer"] = np.nan_to_num(ok.corr_max, nan=-2) > ok.corr_fro
    share = ok.groupby(["variant", "minibatch"], sort=False).closer.mean().unstack()
    fig, ax = plt.subplots(figsize=(max(6.0, 0.9 * len(share)), 4.5))
    width = 0.8 / max(len(share.columns), 1)
    for j, batch in enumerate(share.columns):
        xs = np.arange(len(share)) + (j - (len(share.columns) - 1) / 2) * width
        ax.bar(xs, share[batch].to_numpy(), width, label=f"minibatch={batch}")
    ax.set_xticks(np.arange(len(share)), share.index, rotation=35, ha="right", fontsize=7)
    ax.set_ylabel("share of seeds closer to the\nmax-norm SVM than to $W^{mm}$")
    ax.set_ylim(0, 1.05)
    ax.legend(title="batch size (null: full batch)", fontsize=8)
    ax.set_title("step-rule variants against the l_inf claims (geometry_adam)")
    save_figure(fig, path)
