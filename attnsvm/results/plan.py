"""What a sweep would do with each job before any starts (``plan_job``: run, rerun, skip or
invalid): the local launcher's plan (hydra_plugins/attnsvm_local/compose.py) and the dry run's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from attnsvm.results.job_dir import other_config_dir
from attnsvm.results.store import find_finished, read_job

RUN, RERUN, SKIP, INVALID = "run", "rerun", "skip", "invalid"


@dataclass
class PlannedJob:
    num: int
    action: str  # run | rerun | skip | invalid
    config_hash: str
    job_dir: str
    note: str
    overrides: str
    run: object = field(default=None, repr=False, compare=False)  # the resolved RunConfig


def plan_job(
    run, chash: str, num: int, out: Path, sweep_dir: Path, overrides: str, index: dict
) -> PlannedJob:
    """What attnsvm.run.execute would do with job ``num`` of resolved config ``run`` (hash
    ``chash``); ``index``: the sweep's finished index (``store.finished_index``), read once."""
    done = find_finished(chash, out, sweep_dir, index)
    if done is not None:
        return PlannedJob(num, SKIP, chash, str(done), "finished", overrides, run)
    job = read_job(out)
    if job is None:
        return PlannedJob(num, RUN, chash, str(out), "new", overrides, run)
    if job.get("config_hash") == chash:
        return PlannedJob(num, RERUN, chash, str(out), f"was {job.get('status')}", overrides, run)
    alt = other_config_dir(out, chash)
    note = f"{out.name} holds config {job.get('config_hash')}"
    return PlannedJob(num, RUN, chash, str(alt), note, overrides, run)


def refuse_invalid(jobs: list[PlannedJob]) -> None:
    """SystemExit naming each job whose config is invalid (before any job starts)."""
    invalid = [j for j in jobs if j.action == INVALID]
    if invalid:
        where = "; ".join(f"job #{j.num} [{j.overrides}]: {j.note}" for j in invalid)
        raise SystemExit(f"attnsvm: invalid config: {where} (no job was started)")
