"""What a sweep would do with each job (``plan_job``: run, rerun or skip), and the
line every sweep ends with (``SweepSummary``, a Hydra callback):

    attnsvm sweep: 4 run, 2 skipped, 1 failed, 3 not started
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from hydra.core.hydra_config import HydraConfig
from hydra.core.utils import JobStatus
from hydra.experimental.callback import Callback
from hydra.types import RunMode
from omegaconf import DictConfig

from attnsvm.hydra_internals import returned
from attnsvm.results.store import find_finished, read_job
from attnsvm.results.sweep_status import (
    failed_count,
    format_sweep_status,
    statuses_since,
    sweep_line,
)

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
    alt = out.with_name(f"{out.name}-{chash}")
    note = f"{out.name} holds config {job.get('config_hash')}"
    return PlannedJob(num, RUN, chash, str(alt), note, overrides, run)


def refuse_invalid(jobs: list[PlannedJob]) -> None:
    """SystemExit naming each job whose config is invalid (before any job starts)."""
    invalid = [j for j in jobs if j.action == INVALID]
    if invalid:
        where = "; ".join(f"job #{j.num} [{j.overrides}]: {j.note}" for j in invalid)
        raise SystemExit(f"attnsvm: invalid config: {where} (no job was started)")


# this process's sweep: when it started, and its jobs' statuses as launchers report them
_SWEEP: dict = {"started": 0.0, "statuses": []}


def record_statuses(statuses: Iterable[str | None]) -> None:
    """A launcher's jobs, by what attnsvm.run.execute returned; None: never started."""
    _SWEEP["statuses"].extend(statuses)


def job_status(job_return) -> str:
    """A Hydra JobReturn's attnsvm status: what run.execute returned, ``failed`` if it raised."""
    return returned(job_return) if job_return.status == JobStatus.COMPLETED else "failed"


def print_summary(sweep_dir: Path) -> int:
    """The sweep's jobs by status, then ``sweep_line``; returns how many failed."""
    statuses = list(_SWEEP["statuses"]) or statuses_since(sweep_dir, _SWEEP["started"])
    print(format_sweep_status(sweep_dir), flush=True)
    print(f"attnsvm sweep: {sweep_line(statuses)}", flush=True)
    return failed_count(statuses)


class SweepSummary(Callback):
    """conf/config.yaml's callback: ``print_summary`` at the end of a sweep, then exit 1 when a
    job failed (every launcher)."""

    def on_multirun_start(self, config: DictConfig, **kwargs) -> None:
        _SWEEP.update(started=time.time(), statuses=[])

    def on_job_end(self, config: DictConfig, job_return, **kwargs) -> None:
        """Jobs run in this process (hydra/launcher=basic) report here."""
        if HydraConfig.initialized() and HydraConfig.get().mode == RunMode.MULTIRUN:
            record_statuses([job_status(job_return)])

    def on_multirun_end(self, config: DictConfig, **kwargs) -> None:
        if str(config.hydra.launcher.get("_target_", "")).endswith("DryRunLauncher"):
            return
        if print_summary(Path(str(config.hydra.sweep.dir))):
            raise SystemExit(1)  # after the summary line; Hydra lets SystemExit through
