"""The short human summary printed at the end of a run.

It reads the runs table column by column as numpy arrays (``Columns``): a sweep prints it
after every job, and pandas' Series per column read, value_counts and frame selections cost
3.5 ms a job on a 2-core Xeon, the numpy reads a fraction of it. Means, minima and counts
follow pandas' rules (missing values skipped, ``_mean``, ``_min``, ``_counts``), so the text
is the one pandas' reductions print.
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pandas as pd

from attnsvm.metrics import CONV_TYPES, NOT_CONVERGED

SVM_NAMES = {"fro": "W^mm", "nuc": "W^mm_*"}
CORR_LABELS = {  # the paper's two SVMs keep their long-standing lines
    "fro": "final corr(W, W^mm_a)   (Frobenius, a = GD-selected tokens)",
    "nuc": "final corr(W, W^mm_*,a) (nuclear,   a = GD-selected tokens)",
}


P_LABELS = {"fro": "final corr(p, p^mm_a)   (a = GD-selected tokens)"}


class Columns:
    """The runs table's columns as numpy arrays, each converted once when first read."""

    def __init__(self, runs: pd.DataFrame) -> None:
        self.runs, self.names = runs, runs.columns.tolist()
        self._known, self._arrays = set(self.names), {}

    def __contains__(self, col: str) -> bool:
        return col in self._known

    def __len__(self) -> int:
        return len(self.runs)

    def __getitem__(self, col: str) -> np.ndarray:
        if col not in self._arrays:
            self._arrays[col] = self.runs[col].to_numpy()
        return self._arrays[col]

    def first(self, col: str, default=None):
        """The first row's value (``runs[col].iat[0]``), ``default`` without the column."""
        return self[col][0] if col in self else default


def _floats(values: np.ndarray) -> np.ndarray:
    """A column's values as floats: float32 stays float32 (pandas sums it in float32)."""
    return values if values.dtype.kind == "f" else values.astype(float)


def _mean(values: np.ndarray) -> float:
    """pandas' ``Series.mean``: the missing skipped (summed as 0, not counted); NaN if none."""
    values = _floats(values)
    present = ~np.isnan(values)
    count = int(present.sum())
    return np.where(present, values, 0).sum() / count if count else math.nan


def _min(values: np.ndarray) -> float:
    """pandas' ``Series.min``: the missing skipped; NaN if none."""
    values = _floats(values)
    present = values[~np.isnan(values)]
    return present.min() if len(present) else math.nan


def _counts(values: np.ndarray) -> dict:
    """pandas' ``value_counts().to_dict()``, missing values left out (order aside)."""
    return dict(Counter(values[~pd.isna(values)].tolist()))


def _flags(values: np.ndarray) -> np.ndarray:
    """A boolean column as a mask, a missing value (a failed seed's) counted as False, as
    pandas' ``sum`` skips it."""
    return np.where(pd.isna(values), False, values).astype(bool)


def _mean_min(values: np.ndarray) -> str:
    if np.isnan(_floats(values)).all():  # e.g. every SVM infeasible: nothing to average
        return "none (no seed has this SVM)"
    return f"mean {_mean(values):.4f}, min {_min(values):.4f}"


def corr_lines(cols: Columns) -> list[str]:
    """One line per SVM solved (solver.norms) that the model has (the p-model has no W and
    is measured against p^mm only), then the trained head's objects: mean and min final corr."""
    p_model = cols.first("parameterization") == "p"
    labels = P_LABELS if p_model else CORR_LABELS
    lines = []
    for col in cols.names:
        c = col.removeprefix("svm_status_")
        if col.startswith("svm_status_") and f"corr_{c}" in cols and (c in labels or not p_model):
            label = labels.get(c, f"final corr(W, W^mm[{c}]_a) (a = GD-selected tokens)")
            lines.append(f"  {label}: {_mean_min(cols[f'corr_{c}'])}")
    model = "p" if p_model else "W"
    heads = {
        "corr_relaxed": f"final corr({model}, relaxed SVM)",
        **{  # the relaxed lp-SVM of a trained head under an entrywise step rule (gd/limits.py)
            c: f"final corr({model}, relaxed {c.removeprefix('corr_relaxed_')}-SVM)"
            for c in cols.names
            if c.startswith("corr_relaxed_")
        },
        "corr_v_mm": "final corr(v, v^mm)",
    }
    for col, label in heads.items():
        if col in cols and not pd.isna(cols[col]).all():
            lines.append(f"  {label}: {_mean_min(cols[col])}")
    return lines


def limit_line(cols: Columns) -> list[str]:
    """Which limit object the convergence types were measured against (gd/limits.py)."""
    if "limit" not in cols or pd.isna(cols["limit"]).all():
        return []
    names = ", ".join(sorted(_counts(cols["limit"])))
    corr = _mean(cols["corr_limit"])
    what = "1 - kkt_linf" if "kkt_linf" in cols else "corr"
    shown = "no feasible seed" if math.isnan(corr) else f"{what} mean {corr:.4f}"
    return [f"  convergence measured against: {names} ({shown})", *closer_line(cols, names)]


def closer_line(cols: Columns, names: str) -> list[str]:
    """Where the limit is an SVM other than W^mm: how many seeds end closer to it than to W^mm
    (final corr with it above corr_fro); with a KKT limit, its columns (gd/kkt.py)."""
    if "kkt_linf" in cols:
        lam, kkt = cols["lam_w_max"], cols["kkt_linf"]
        return [
            f"  final lambda ||W||_max: {_mean_min(lam)}; final kkt_linf: mean "
            f"{_mean(kkt):.4f}, max {-_min(-_floats(kkt)):.4f} (0 at a KKT point)"
        ]
    if names == "W^mm" or "corr_fro" not in cols or "," in names:
        return []
    closer = np.nan_to_num(_floats(cols["corr_limit"]), nan=-2) > _floats(cols["corr_fro"])
    return [f"  closer to {names} than to W^mm (final corr): {int(closer.sum())}/{len(cols)} seeds"]


def summary_text(runs: pd.DataFrame, seconds: float) -> str:
    """experiment=gd: seeds by status, mean final correlations, saturation, convergence types."""
    cols = Columns(runs)
    first = cols.first
    engine = first("train_engine", "torch")  # results written before engines existed
    trained = "conv_type" in cols
    training = f"{first('optimizer.steps')} {first('optimizer')} steps ({engine} engine)"
    head = (
        f"attnsvm: n={first('n')} T={first('T')} d={first('d')} {first('attention')}-attention, "
        f"parameterization={first('parameterization')}, head={first('head')}, "
        f"{training if trained else 'SVMs only'}, {len(cols)} seeds"
        + (
            f", nuclear SVM by {first('solver.backend')}"
            if first("parameterization") != "p"
            else ""
        )
    )
    by_status = "  seeds by status:    " + ", ".join(
        f"{k} {v}" for k, v in sorted(_counts(cols["status"]).items())
    )
    feasible = _flags(cols["feasible"])
    if not trained:  # train=false: SVMs only
        svms = [c.removeprefix("svm_status_") for c in cols.names if c.startswith("svm_status_")]
        ranks = ", ".join(
            f"{SVM_NAMES.get(c, c)} {_mean(cols[f'rank_{c}'][feasible]):.2f}" for c in svms
        )
        lines = [
            f"  SVM at opt feasible: {int(feasible.sum())}/{len(cols)}",
            "  mean rank " + ranks,
        ]
        return "\n".join([head, by_status, *lines, f"  time: {seconds:.2f} s"])
    lines = [
        head,
        by_status,
        *diverged_lines(cols),
        f"  SVM at opt feasible: {int(feasible.sum())}/{len(cols)}",
        *corr_lines(cols),
        *trained_lines(cols),
        *limit_line(cols),
        convergence_line(cols),
        *convergence_advice(cols),
        f"  time: {seconds:.2f} s",
    ]
    return "\n".join(lines)


def diverged_lines(cols: Columns) -> list[str]:
    """Each distinct reason of the diverged seeds (their step and what blew up), once."""
    diverged = cols["status"] == "diverged"
    if not diverged.any() or "reason" not in cols:
        return []
    reasons = Counter(str(r) for r in cols["reason"][diverged])
    return [f"  diverged ({k} seeds): {reason}" for reason, k in sorted(reasons.items())]


def trained_lines(cols: Columns) -> list[str]:
    """Saturation and the tokens selected, over the seeds that trained to the end: a diverged
    seed's last state counts in neither (its reason says what happened)."""
    kept = cols["status"] != "diverged"
    left_out = "" if kept.all() else f" (diverged seeds left out: {int((~kept).sum())})"
    if not kept.any():
        return [f"  softmax saturation and selected tokens: no seed trained to the end{left_out}"]
    selected = _flags(cols["selected_is_opt"][kept])
    return [
        f"  softmax saturation (mean_i max_t s_it): mean {_mean(cols['softmax_max'][kept]):.6f}",
        f"  GD selected the optimal tokens in {int(selected.sum())}/{int(kept.sum())} seeds"
        + left_out,
    ]


def convergence_line(cols: Columns) -> str:
    """Convergence types of the seeds whose SVM at opt is feasible; an infeasible seed has no
    SVM direction to converge to, and is counted apart."""
    feasible = _flags(cols["feasible"])
    conv = _counts(cols["conv_type"][feasible])
    line = "  convergence: " + ", ".join(f"{k} {conv.get(k, 0)}" for k in CONV_TYPES)
    infeasible = int((~feasible).sum())
    return line + (f"; infeasible (no SVM to converge to) {infeasible}" if infeasible else "")


REASONS = {  # runs column -> its words in the summary (metrics.still_moving)
    "tokens_switching": "selected tokens switching",
    "still_aligning": "1 - corr still closing",
    "stalled": "steps stalled by optimizer.eps",
}
MAX_FACTOR = 64  # more steps than this many times is no longer a suggestion


def convergence_advice(runs: pd.DataFrame | Columns) -> list[str]:
    """Lines on the ``not converged`` seeds with a feasible SVM (metrics.convergence_type): how
    many, why, and the config keys to change with values: ``optimizer.steps`` from the pace at
    which 1 - corr closed over the window (``steps_needed``; 4x where it cannot be read),
    ``optimizer.eps`` where normalized GD stalled on it. None when every seed converged."""
    cols = runs if isinstance(runs, Columns) else Columns(runs)
    bad = cols["conv_type"] == NOT_CONVERGED
    if "feasible" in cols:  # more steps cannot help a seed whose SVM is infeasible
        bad &= _flags(cols["feasible"])
    if not bad.any():
        return []
    first = cols.first
    why = {col: cols[col][bad].astype(bool) for col in (*REASONS, "saturated")}  # masks
    counted = {col: _flags(cols[col][bad]) for col in REASONS}  # sums and any(): NaN skipped
    moving = [
        f"{words} {int(counted[col].sum())}" for col, words in REASONS.items() if counted[col].any()
    ]
    unsaturated = int((~why["saturated"]).sum())
    against = f" (against {first('limit')})" if "limit" in cols else ""
    lines = [
        f"  not converged{against}: {int(bad.sum())}/{len(cols)} seeds"
        + (f"; not saturated {unsaturated}" if unsaturated else "")
        + (f"; over the last {first('metrics.window'):.0%} of the steps: " if moving else "")
        + ", ".join(moving)
    ]
    steps = int(first("optimizer.steps"))
    longer = ~why["stalled"]  # of the not converged: more steps would help
    if longer.any():
        needed = cols["steps_needed"][bad][longer].astype(float)
        readable = why["saturated"][longer] & ~why["tokens_switching"][longer] & ~np.isnan(needed)
        factor = max([4.0] * int((~readable).sum()) + list(needed[readable] / steps))
        mult = MAX_FACTOR  # a pace of never (inf) included
        if factor <= MAX_FACTOR:
            mult = max(2, 2 ** math.ceil(math.log2(max(factor, 1))))
        line = f"  advice: train longer, e.g. optimizer.steps={steps * mult} ({mult}x)"
        if factor > MAX_FACTOR:
            pace = "never" if math.isinf(factor) else f"about {factor:.0f}x the steps"
            line += f"; at its present pace 1 - corr reaches epsilon in {pace}"
        if first("optimizer") == "ngd":
            line += f", or a larger optimizer.lr (now {first('optimizer.lr'):g})"
        lines.append(line)
    if counted["stalled"].any():
        f64 = "" if first("dtype", "float64") == "float64" else " with dtype=float64"
        lines.append(
            f"  advice: optimizer.eps=0{f64}: ||grad L|| fell below optimizer.eps="
            f"{first('optimizer.eps'):.2g}, which shrinks the normalized step "
            "(docs/math.md#the-epsilon-freeze)"
        )
    return lines
