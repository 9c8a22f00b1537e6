"""What every experiment's ``run_job`` returns, and the columns the core adds to its rows.

The shared part of a job (the identity, the config columns, the timing) is here once; an
experiment computes its own rows and trajectories and leaves ``config_hash`` empty, or fills
it with ``config_columns`` as the built-ins do.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from attnsvm.composition.identity import config_hash, flatten, neutral_groups, plain
from attnsvm.composition.resolve import train_engine
from attnsvm.results.stack import with_constants


@dataclass
class JobResult:
    runs: pd.DataFrame
    trajectory: pd.DataFrame
    config_hash: str
    seconds: float
    extra: dict[str, pd.DataFrame] = field(default_factory=dict)  # file name -> table


def _groups_after_experiment(tree: dict, groups: list[str]) -> dict:
    """The experiments' groups placed right after the ``experiment`` key (their place in the
    tables since they were written)."""
    rest = {k: v for k, v in tree.items() if k not in groups}
    out = {}
    for k, v in rest.items():
        out[k] = v
        if k == "experiment":
            out.update({g: tree[g] for g in groups if g in tree})
    return out


def config_columns(cfg) -> dict:
    """Columns every row carries: short names for the main axes plus every dotted config key."""
    from attnsvm.experiments import config_groups

    tree = plain(cfg)
    for group in neutral_groups(cfg):  # an experiment's own group: its columns only when used
        tree.pop(group)
    tree = _groups_after_experiment(tree, list(config_groups()))
    flat = flatten(tree)
    for k in ("seeds", "seed", "threads", "batch_size", "progress_interval"):
        flat.pop(k)
    flat = {k: ",".join(map(str, v)) if isinstance(v, list) else v for k, v in flat.items()}
    flat["loss_function"] = flat.pop("loss")  # the run key `loss`; column "loss" is its value
    short = {
        "n": cfg.dataset.n,
        "T": cfg.dataset.T,
        "d": cfg.dataset.d,
        "attention": cfg.dataset.attention.value,
        "parameterization": cfg.parameterization.kind.value,
        "head": plain(cfg.head.kind),  # a built-in name or your head's import path
        "optimizer": plain(cfg.optimizer.kind),
        "train_engine": plain(train_engine(cfg)) or "none",  # auto resolved; none: no GD
    }
    return {**short, **flat}


def finish(run, result: JobResult) -> JobResult:
    """A result whose experiment left the identity to the core: the config hash and the config
    columns added to its tables (the built-ins add them themselves, in their order)."""
    if result.config_hash:
        return result
    chash = config_hash(run)
    cols = {**config_columns(run), "config_hash": chash}
    runs = with_constants(result.runs, {k: v for k, v in cols.items() if k not in result.runs})
    trajectory = result.trajectory.assign(config_hash=chash)
    return JobResult(runs, trajectory, chash, result.seconds, result.extra)


def not_ok_lines(runs) -> list[str]:
    """One summary line per status other than ok: how many seeds, and one seed's reason (the
    ``status`` and ``reason`` every runs table carries)."""
    return [
        f"  {status}: {len(g)} seeds, e.g. seed {g.seed.iloc[0]}: {g.reason.iloc[0]}"
        for status, g in runs[runs.status != "ok"].groupby("status")
    ]
