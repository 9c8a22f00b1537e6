"""What every experiment's ``run_job`` returns, and what the core adds to its tables.

The shared part of a job (the identity, the config columns, the timing) is written here once; an
experiment computes its own rows and trajectories and adds its config columns itself (as the
built-ins do, in their order: attnsvm/experiments/config_columns.py) or leaves them to the
core. The job's identity, its config hash, is the core's: ``finish`` writes it (attnsvm/job.py
computes it from the resolved run), into the ``config_hash`` column where ``job_columns``
placed it, else after the config columns.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from attnsvm.results.stack import with_constants


@dataclass
class JobResult:
    runs: pd.DataFrame
    trajectory: pd.DataFrame
    config_hash: str  # the core's (``finish``): an experiment returns it empty
    seconds: float
    extra: dict[str, pd.DataFrame] = field(default_factory=dict)  # file name -> table
    arrays: dict = field(default_factory=dict)  # arrays.npz's arrays (attnsvm/results/artifacts.py)


def finish(result: JobResult, chash: str, columns: dict) -> JobResult:
    """The result with its identity ``chash`` (the hash of the resolved run) in every table
    that has a ``config_hash`` column, and in runs and trajectory after their columns where the
    experiment left it to the core, as it may leave the run's config ``columns``."""
    cols = {k: v for k, v in columns.items() if k not in result.runs}
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
