"""The short human summary printed at the end of a run."""

from __future__ import annotations

import math

import pandas as pd

from attnsvm.metrics import CONV_TYPES, NOT_CONVERGED

SVM_NAMES = {"fro": "W^mm", "nuc": "W^mm_*"}
CORR_LABELS = {  # the paper's two SVMs keep their long-standing lines
    "fro": "final corr(W, W^mm_a)   (Frobenius, a = GD-selected tokens)",
    "nuc": "final corr(W, W^mm_*,a) (nuclear,   a = GD-selected tokens)",
}


P_LABELS = {"fro": "final corr(p, p^mm_a)   (a = GD-selected tokens)"}


class FirstRow:
    """The first row's values, read column by column (``runs.iloc[0]`` makes a Series of
    every column; the summary is printed after every job of a sweep)."""

    def __init__(self, runs: pd.DataFrame) -> None:
        self.runs = runs

    def __getitem__(self, col: str):
        return self.runs[col].iat[0]

    def __getattr__(self, col: str):
        if col == "runs" or col not in self.runs:
            raise AttributeError(col)
        return self[col]

    def get(self, col: str, default=None):
        return self[col] if col in self.runs else default


def corr_lines(runs: pd.DataFrame) -> list[str]:
    """One line per SVM solved (solver.norms) that the model has (the p-model has no W and
    is measured against p^mm only), then the trained head's objects: mean and min final corr."""
    p_model = FirstRow(runs).get("parameterization") == "p"
    labels = P_LABELS if p_model else CORR_LABELS
    lines = []
    for col in runs.columns:
        c = col.removeprefix("svm_status_")
        if col.startswith("svm_status_") and f"corr_{c}" in runs and (c in labels or not p_model):
            label = labels.get(c, f"final corr(W, W^mm[{c}]_a) (a = GD-selected tokens)")
            corr = runs[f"corr_{c}"]
            lines.append(f"  {label}: mean {corr.mean():.4f}, min {corr.min():.4f}")
    model = "p" if p_model else "W"
    heads = {
        "corr_relaxed": f"final corr({model}, relaxed SVM)",
        **{  # the relaxed lp-SVM of a trained head under an entrywise step rule (gd/limits.py)
            c: f"final corr({model}, relaxed {c.removeprefix('corr_relaxed_')}-SVM)"
            for c in runs.columns
            if c.startswith("corr_relaxed_")
        },
        "corr_v_mm": "final corr(v, v^mm)",
    }
    for col, label in heads.items():
        if col in runs and runs[col].notna().any():
            corr = runs[col]
            lines.append(f"  {label}: mean {corr.mean():.4f}, min {corr.min():.4f}")
    return lines


def limit_line(runs: pd.DataFrame) -> list[str]:
    """Which limit object the convergence types were measured against (gd/limits.py)."""
    if "limit" not in runs or runs.limit.isna().all():
        return []
    names = ", ".join(sorted(runs.limit.dropna().unique()))
    return [f"  convergence measured against: {names} (corr mean {runs.corr_limit.mean():.4f})"]


def gd_summary_text(runs: pd.DataFrame, seconds: float) -> str:
    """experiment=gd: seeds by status, mean final correlations, saturation, convergence types."""
    first = FirstRow(runs)
    engine = first.get("train_engine", "torch")  # results written before engines existed
    training = (
        f"{first['optimizer.steps']} {first.optimizer} steps ({engine} engine)"
        if "conv_type" in runs
        else "SVMs only"
    )
    head = (
        f"attnsvm: n={first.n} T={first['T']} d={first.d} {first.attention}-attention, "
        f"parameterization={first.parameterization}, head={first['head']}, {training}, "
        f"{len(runs)} seeds"
        + (f", nuclear SVM by {first['solver.backend']}" if first.parameterization != "p" else "")
    )
    counts = runs.status.value_counts().to_dict()
    svms = [c.removeprefix("svm_status_") for c in runs.columns if c.startswith("svm_status_")]
    if "conv_type" not in runs:  # train=false: SVMs only
        ok = runs[runs.feasible]
        return "\n".join(
            [
                head,
                "  seeds by status:    " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())),
                f"  SVM at opt feasible: {len(ok)}/{len(runs)}",
                "  mean rank "
                + ", ".join(f"{SVM_NAMES.get(c, c)} {ok[f'rank_{c}'].mean():.2f}" for c in svms),
                f"  time: {seconds:.2f} s",
            ]
        )
    conv = runs.conv_type.value_counts().to_dict()
    lines = [
        head,
        "  seeds by status:    " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())),
        f"  SVM at opt feasible: {int(runs.feasible.sum())}/{len(runs)}",
        *corr_lines(runs),
        f"  softmax saturation (mean_i max_t s_it): mean {runs.softmax_max.mean():.6f}",
        f"  GD selected the optimal tokens in {int(runs.selected_is_opt.sum())}/{len(runs)} seeds",
        *limit_line(runs),
        "  convergence: " + ", ".join(f"{k} {conv.get(k, 0)}" for k in CONV_TYPES),
        *convergence_advice(runs),
        f"  time: {seconds:.2f} s",
    ]
    return "\n".join(lines)


REASONS = {  # runs column -> its words in the summary (metrics.still_moving)
    "tokens_switching": "selected tokens switching",
    "still_aligning": "1 - corr still closing",
    "stalled": "steps stalled by optimizer.eps",
}
MAX_FACTOR = 64  # more steps than this many times is no longer a suggestion


def convergence_advice(runs: pd.DataFrame) -> list[str]:
    """Lines on the ``not converged`` seeds (metrics.convergence_type): how many, why, and the
    config keys to change with values: ``optimizer.steps`` from the pace at which 1 - corr
    closed over the window (``steps_needed``; 4x where it cannot be read), ``optimizer.eps``
    where normalized GD stalled on it. None when every seed converged."""
    not_converged = (runs.conv_type == NOT_CONVERGED).to_numpy()
    if not not_converged.any():
        return []
    first = FirstRow(runs)
    read = [c for c in (*REASONS, "saturated", "steps_needed") if c in runs]
    bad = runs.loc[not_converged, read]  # the columns read here only: a take of a few
    why = bad.assign(unsaturated=~bad.saturated.astype(bool))
    moving = [f"{words} {int(why[col].sum())}" for col, words in REASONS.items() if why[col].any()]
    unsaturated = int(why.unsaturated.sum())
    against = f" (against {first['limit']})" if "limit" in runs else ""
    lines = [
        f"  not converged{against}: {len(bad)}/{len(runs)} seeds"
        + (f"; not saturated {unsaturated}" if unsaturated else "")
        + (f"; over the last {first['metrics.window']:.0%} of the steps: " if moving else "")
        + ", ".join(moving)
    ]
    steps = int(first["optimizer.steps"])
    longer = why[~why.stalled.astype(bool)]
    if not longer.empty:
        readable = longer.saturated & ~longer.tokens_switching & longer.steps_needed.notna()
        factors = [4.0] * int((~readable).sum()) + list(longer.steps_needed[readable] / steps)
        factor = max(factors)
        mult = min(max(2, 2 ** math.ceil(math.log2(max(factor, 1)))), MAX_FACTOR)
        line = f"  advice: train longer, e.g. optimizer.steps={steps * mult} ({mult}x)"
        if factor > MAX_FACTOR:
            pace = "never" if math.isinf(factor) else f"about {factor:.0f}x the steps"
            line += f"; at its present pace 1 - corr reaches epsilon in {pace}"
        if first.get("optimizer") == "ngd":
            line += f", or a larger optimizer.lr (now {first['optimizer.lr']:g})"
        lines.append(line)
    if why.stalled.any():
        f64 = "" if first.get("dtype", "float64") == "float64" else " with dtype=float64"
        lines.append(
            f"  advice: optimizer.eps=0{f64}: ||grad L|| fell below optimizer.eps="
            f"{first['optimizer.eps']:.2g}, which shrinks the normalized step "
            "(docs/math.md#the-epsilon-freeze)"
        )
    return lines
