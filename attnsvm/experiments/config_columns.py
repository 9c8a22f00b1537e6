"""The config columns every experiment's rows carry: what its job config read, under the names
tables and figures use, with one meaning each. An experiment adds them to its rows itself
(``job_columns``, in its own column order) or leaves them to the core (attnsvm/job.py passes
``config_columns`` of the run to results/contract.py's ``finish``).
"""

from __future__ import annotations

from attnsvm.config.checks import flatten, plain
from attnsvm.config.constraints import plain_read
from attnsvm.experiments.engine import train_engine
from attnsvm.results.artifacts import ARTIFACT_KEYS

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
    from attnsvm.experiments import entry  # the registry, loaded by the time a job runs

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


def job_columns(cfg, own: dict | None = None) -> dict:
    """``config_columns``, then ``own`` (an experiment's further columns), then the
    ``config_hash`` column, empty until ``finish`` fills it: an experiment that orders its own
    columns places the identity with them."""
    return {**config_columns(cfg), **(own or {}), "config_hash": ""}
