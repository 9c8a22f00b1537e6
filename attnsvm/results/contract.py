"""What every experiment's ``run_job`` returns, and the columns the core adds to its rows.

The shared part of a job (the identity, the config columns, the timing) is here once; an
experiment computes its own rows and trajectories and adds ``config_columns`` itself (as the
built-ins do, in their order) or leaves them to the core. The job's identity, its config hash,
is the core's: ``finish`` writes it (attnsvm/job.py computes it from the resolved run), into
the ``config_hash`` column where ``job_columns`` placed it, else after the config columns.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from attnsvm.config.checks import flatten, plain
from attnsvm.config.constraints import plain_read
from attnsvm.experiments.engine import train_engine
from attnsvm.results.artifacts import ARTIFACT_KEYS
from attnsvm.results.stack import with_constants


@dataclass
class JobResult:
    runs: pd.DataFrame
    trajectory: pd.DataFrame
    config_hash: str  # the core's (``finish``): an experiment returns it empty
    seconds: float
    extra: dict[str, pd.DataFrame] = field(default_factory=dict)  # file name -> table
    arrays: dict = field(default_factory=dict)  # arrays.npz's arrays (attnsvm/results/artifacts.py)


# the order of a row's config columns (the order they have had since they were first written):
# the shared groups, the experiment and its own group (and any key not named here), then the
# run keys
_FIRST = ("dataset", "parameterization", "optimizer", "solver", "head", "metrics", "experiment")
_LAST = ("train", "seeds", "seed", "batch_size", "device", "dtype", "threads", "engine", "loss")
_LAST += ("progress_interval",)
# short columns: the main config keys under the names the tables and figures use, where the
# job config has their group (one meaning each: a data set's n, T, d; the parameterization GD
# trained; ...)
SHORT = {
    "n": ("dataset", "n"),
    "T": ("dataset", "T"),
    "d": ("dataset", "d"),
    "attention": ("dataset", "attention"),
    "parameterization": ("parameterization", "kind"),
    "head": ("head", "kind"),
    "optimizer": ("optimizer", "kind"),
}


def _ordered(tree: dict) -> dict:
    first = [k for k in _FIRST if k in tree]
    last = [k for k in _LAST if k in tree]
    middle = [k for k in tree if k not in first and k not in last]
    at = first.index("experiment") + 1 if "experiment" in first else len(first)
    return {k: tree[k] for k in [*first[:at], *middle, *first[at:], *last]}


def _cell(value):
    """A config value as a row shows it: a list joined by commas."""
    return ",".join(map(str, value)) if isinstance(value, list) else value


def config_columns(cfg) -> dict:
    """Columns every row carries: short names for the main keys its job config has, plus every
    dotted key of it that acted (``plain_read``) and of its experiment's ``hash_legacy``, less
    the per-job ones."""
    from attnsvm.experiments import entry

    tree = {**plain_read(cfg), **entry(cfg.experiment).hash_legacy}
    flat = flatten(_ordered(tree))
    for k in ("seeds", "seed", "threads", "batch_size", "progress_interval"):
        flat.pop(k)
    for k in ARTIFACT_KEYS:  # what is kept, not what is computed: no column
        flat.pop(k, None)
    flat = {k: _cell(v) for k, v in flat.items()}
    if "loss" in flat:
        flat["loss_function"] = flat.pop("loss")  # the run key `loss`; column "loss" is its value
    short = {
        name: plain(getattr(getattr(cfg, group), key))  # a built-in's name or your import path
        for name, (group, key) in SHORT.items()
        if hasattr(cfg, group)
    }
    short["train_engine"] = plain(train_engine(cfg)) or "none"  # auto resolved; none: no GD
    return {**short, **flat}


def group_columns(cfg, group: str) -> dict:
    """``<group>.<key>`` of each key of an experiment's own group ``cfg`` that acted (its
    ``unread`` keys left out), as rows show values: enums by value, lists joined by commas."""
    return {f"{group}.{k}": _cell(v) for k, v in flatten(plain_read(cfg)).items()}


def job_columns(cfg) -> dict:
    """``config_columns`` and the ``config_hash`` column, empty until ``finish`` fills it: an
    experiment that orders its own columns places the identity with them."""
    return {**config_columns(cfg), "config_hash": ""}


def finish(run, result: JobResult, chash: str) -> JobResult:
    """The result with its identity ``chash`` (the hash of the resolved ``run``) in every table
    that has a ``config_hash`` column, and in runs and trajectory after their columns where the
    experiment left it (and the config columns) to the core."""
    cols = {k: v for k, v in config_columns(run).items() if k not in result.runs}
    runs = with_constants(result.runs, {**cols, "config_hash": chash})
    trajectory = result.trajectory.assign(config_hash=chash)
    extra = {
        name: table.assign(config_hash=chash) if "config_hash" in table else table
        for name, table in result.extra.items()
    }
    return JobResult(runs, trajectory, chash, result.seconds, extra, result.arrays)


def not_ok_lines(runs) -> list[str]:
    """One summary line per status other than ok: how many seeds, and one seed's reason (the
    ``status`` and ``reason`` every runs table carries)."""
    return [
        f"  {status}: {len(g)} seeds, e.g. seed {g.seed.iloc[0]}: {g.reason.iloc[0]}"
        for status, g in runs[runs.status != "ok"].groupby("status")
    ]
