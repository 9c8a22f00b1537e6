"""gd's re-analysis: the SVMs and metrics of a finished job solved again from its arrays.npz,
under a new config that differs only in what the analysis reads (``solver.*``, ``metrics.*``).
Nothing is trained: the draw is rebuilt from each seed (and checked against the one trained
on), the trajectory from the saved parameters, and the pipeline's own analysis runs on them.

With every checkpoint's W kept (``artifact_checkpoints=true``) every column is recomputed. With
the final W alone, the final-state columns are; the columns that read the whole curve
(``CURVE_COLUMNS``) keep the training run's values (empty where it had none), and
trajectory.parquet and the extra tables are the training run's.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from attnsvm.experiments.config_columns import config_columns
from attnsvm.results.artifacts import meta, read_meta
from attnsvm.results.contract import JobResult

from .artifacts import (
    SVM_PREFIXES,
    check_draw,
    svm_arrays,
    trajectory,
)

# row columns computed from the curve over all checkpoints, not from the final state
CURVE_PREFIXES = ("rate_",)
CURVE_COLUMNS = ("tokens_switching", "still_aligning", "stalled", "gap_shrink", "steps_needed")
CURVE_COLUMNS += ("conv_type",)


def reanalyse(cfg, arrays: dict, before: JobResult) -> JobResult:
    """The job's result under ``cfg`` from its ``arrays`` and its result ``before`` (the
    tables the training run wrote); see the module's docstring for what is recomputed."""
    from .job import analyse_batch, job_result, run_job

    t0 = time.perf_counter()
    if "steps" not in arrays:  # an SVM-only job (train=false): nothing was trained
        return run_job(cfg)
    inst = instances(cfg, arrays)
    traj, kept = trajectory(arrays)
    rows, trajs, extra, svms = analyse_batch(cfg, inst, traj)
    old = before.runs.drop(columns=[*config_columns(cfg), "config_hash"], errors="ignore")
    for row, (_, was) in zip(rows, old.iterrows(), strict=True):
        carry(row, was, curves=not kept)
    new_arrays = {k: v for k, v in arrays.items() if not k.startswith(SVM_PREFIXES)}
    new_arrays.update(svm_arrays(svms))
    new_arrays["meta"] = meta(**{**read_meta(arrays), "reanalysed": True})
    result = job_result(cfg, rows, trajs if kept else [], extra if kept else {}, t0, new_arrays)
    if not kept:  # the training run's curves and pictures: no W per checkpoint to redo them
        result.trajectory, result.extra = before.trajectory, before.extra  # new hash: finish
    return result


def instances(cfg, arrays: dict):
    """The draw of the saved seeds, rebuilt on the CPU as the job built it, and checked."""
    from .job import draw

    inst = draw(cfg, [int(s) for s in arrays["seeds"]])
    check_draw(inst, arrays)
    return inst


def is_curve_column(name: str) -> bool:
    return name in CURVE_COLUMNS or name.startswith(CURVE_PREFIXES)


def carry(row: dict, was: pd.Series, curves: bool) -> None:
    """Complete a re-analysed ``row`` with what the training run's row ``was`` knows: its
    training columns (train_seconds, cone_*) and, with ``curves``, the curve columns (empty
    where it lacked one); ``seconds`` = training's + the new SVMs'."""
    if int(was["seed"]) != int(row["seed"]):
        raise ValueError(f"seed {row['seed']}: the saved arrays and runs.parquet disagree")
    for k, value in was.items():
        if k == "train_seconds" or k.startswith("cone_"):
            row[k] = value
    if curves:
        for k in [k for k in row if is_curve_column(k)]:
            row[k] = was[k] if k in was.index else np.nan
    if "train_seconds" in row:
        row["seconds"] = row["train_seconds"] + row["svm_seconds"]
