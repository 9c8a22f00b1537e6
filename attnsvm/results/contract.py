"""What every experiment's ``run_job`` returns, and the columns the core adds to its rows.

The shared part of a job (the identity, the config columns, the timing) is here once; an
experiment computes its own rows and trajectories and leaves ``config_hash`` empty, or fills
it with ``config_columns`` as the built-ins do.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from attnsvm.composition.identity import config_hash, flatten, plain
from attnsvm.config.constraints import plain_read
from attnsvm.experiments.engine import train_engine
from attnsvm.results.artifacts import ARTIFACT_KEYS
from attnsvm.results.stack import with_constants


@dataclass
class JobResult:
    runs: pd.DataFrame
    trajectory: pd.DataFrame
    config_hash: str
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


def finish(run, result: JobResult) -> JobResult:
    """A result whose experiment left the identity to the core: the config hash and the config
    columns added to its tables (the built-ins add them themselves, in their order)."""
    if result.config_hash:
        return result
    chash = config_hash(run)
    cols = {**config_columns(run), "config_hash": chash}
    runs = with_constants(result.runs, {k: v for k, v in cols.items() if k not in result.runs})
    trajectory = result.trajectory.assign(config_hash=chash)
    return JobResult(runs, trajectory, chash, result.seconds, result.extra, result.arrays)


def not_ok_lines(runs) -> list[str]:
    """One summary line per status other than ok: how many seeds, and one seed's reason (the
    ``status`` and ``reason`` every runs table carries)."""
    return [
        f"  {status}: {len(g)} seeds, e.g. seed {g.seed.iloc[0]}: {g.reason.iloc[0]}"
        for status, g in runs[runs.status != "ok"].groupby("status")
    ]
