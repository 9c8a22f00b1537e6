"""What an experiment's summary, console table and report show, declared by the experiment:
its entry's ``columns`` (attnsvm/experiments/__init__.py). The aggregator and the report read
the declaration and know no experiment.

    from attnsvm.results.columns import Columns

    columns=Columns(                               # a field of its EXPERIMENT
        axes=(),                                   # no (n, T, d): its own keys name a point
        counts={},                                 # no feasible seeds to count
        metrics=("icl_loss", "corr_limit"),        # mean / std / count per config point
        console=("icl_loss_mean", "corr_limit_mean"),
        labels={"corr_limit": "corr(A, Γ⁻¹)"},
    ),

``columns`` may instead be a function of one config point's runs returning a ``Columns`` (e.g.
a p-model point speaks of p^mm, a W point of the Frobenius and nuclear-norm SVMs). An
entry without it (your own module) gets ``DEFAULT``: the attention SVM's quantities.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the entries import this module when found: no pandas at import
    import pandas as pd

METRICS = (
    "rank_fro",
    "rank_nuc",
    "corr_fro",
    "corr_nuc",
    "corr_fro_opt",
    "corr_nuc_opt",
    "softmax_max",
    "softmax_min",
    "w_norm",
    "loss",
    "grad_norm",
    "norm_fro",
    "norm_nuc",
    "seconds",
)
CONVERGENCE = ("global", "local", "other", "not_converged")  # summary columns of conv_type


@dataclass(frozen=True)
class Columns:
    """An experiment's columns. Names in ``console`` and ``labels`` are summary columns (a
    count, ``<metric>_mean`` / ``_std`` / ``_count``, a convergence type); a label of a metric
    heads its mean."""

    axes: tuple[str, ...] = ("n", "T", "d")  # config columns that always name a point
    keys: tuple[str, ...] = ()  # config columns that name a point where its runs have them
    convergence: str | None = None  # a run column of categories, counted per point ...
    categories: tuple[str, ...] = ()  # ... one summary column each (its values, "_" for " ")
    counts: Mapping[str, str] = field(default_factory=lambda: {"feasible": "feasible"})
    # summary column -> boolean run column: the seeds where it holds (and their share, _rate)
    metrics: tuple[str, ...] = METRICS  # run columns averaged per point (absent ones skipped)
    subset: str = "feasible"  # the boolean run column ...
    subset_only: tuple[str, ...] = ("rank_", "norm_")  # ... over which these metrics average
    norms: bool = False  # also rank / corr / norm of each further SVM norm (svm_status_<norm>)
    console: tuple[str, ...] = ()  # summary columns printed after the keys, seeds and counts
    labels: Mapping[str, str] = field(default_factory=dict)  # column -> its header


# the attention SVM's convergence classes (attnsvm/metrics.py: CONV_TYPES): its runs' conv_type
ATTENTION_SVM = {
    "keys": ("parameterization",),
    "convergence": "conv_type",
    "categories": ("global", "local", "other", "not converged"),
}
DEFAULT = Columns(
    **ATTENTION_SVM,
    norms=True,
    console=(*CONVERGENCE, "corr_fro_mean", "corr_nuc_mean", "softmax_max_mean")
    + ("rank_fro_mean", "rank_fro_std", "rank_nuc_mean", "rank_nuc_std"),
)


def columns_of(experiment, runs: pd.DataFrame) -> Columns:
    """The declaration of ``experiment`` (its ``columns``; None: the attention SVM's) for the
    runs of one config point."""
    declared = None if experiment is None else experiment.columns
    declared = DEFAULT if declared is None else declared
    return declared if isinstance(declared, Columns) else declared(runs)


def _points(runs: pd.DataFrame, entry):
    """(experiment entry or None, its runs) per experiment of ``runs`` (``entry``: the
    registry's lookup, name -> entry)."""
    if "experiment" not in runs or runs.empty:
        return [(None, runs)]
    return [(entry(name), part) for name, part in runs.groupby("experiment", sort=True)]


def point_keys(columns: Columns, runs: pd.DataFrame) -> list[str]:
    """The config columns naming a point of ``runs`` under ``columns``: its axes, and its keys
    where the runs have them."""
    return [*columns.axes, *(k for k in columns.keys if k in runs)]


def declared_keys(runs: pd.DataFrame, entry) -> list[str]:
    """The point-naming columns the experiments of ``runs`` declare, in order."""
    keys = [k for e, part in _points(runs, entry) for k in point_keys(columns_of(e, part), part)]
    return list(dict.fromkeys(keys))


def shown(declared: list[Columns]) -> dict:
    """What the console and report show of a summary made under ``declared``, as the summary
    carries it (``summary.attrs["columns"]``): counts, console columns, headers."""
    counts = list(dict.fromkeys(c for d in declared for c in d.counts))
    console = list(dict.fromkeys(c for d in declared for c in d.console))
    labels: dict[str, str] = {}
    for d in declared:
        for column, text in d.labels.items():
            labels.setdefault(column, text)
    return {"counts": counts, "console": console, "labels": labels}


def header(column: str, labels: Mapping[str, str], mean: str = "") -> str:
    """``column``'s header under ``labels`` (shown's): a metric's label names its mean; an
    unlabelled mean keeps ``mean`` as its suffix."""
    base = column.removesuffix("_mean")
    if column in labels:
        return labels[column]
    if base != column:
        return labels.get(base, base + mean)
    return column
