"""A sweep's jobs counted by status: from its job.json records (``format_sweep_status``,
``statuses_since``) or from the statuses its launchers reported (``record_statuses``), and the
lines every sweep ends with (``SweepSummary``, conf/config.yaml's Hydra callback):

    attnsvm sweep outputs/sweeps/rank: 38 finished, 2 failed
      failed: outputs/sweeps/rank/7  ValueError(...)
    attnsvm sweep: 4 run, 2 skipped, 1 failed, 3 not started
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from pathlib import Path

from hydra.core.hydra_config import HydraConfig
from hydra.core.utils import JobStatus
from hydra.experimental.callback import Callback
from hydra.types import RunMode
from omegaconf import DictConfig

from attnsvm.hydra_internals import returned
from attnsvm.results.store import scan_jobs


def format_sweep_status(sweep_dir: Path) -> str:
    """One line of counts by job.json's status, then one line per job not finished."""
    jobs: dict[str, list[tuple[Path, dict]]] = {}
    for job_dir, job in scan_jobs(sweep_dir):
        jobs.setdefault(job.get("status", "unknown"), []).append((job_dir, job))
    counts = ", ".join(f"{len(v)} {k}" for k, v in sorted(jobs.items()))
    lines = [f"attnsvm sweep {sweep_dir}: {counts or 'no jobs'}"]
    for status in sorted(set(jobs) - {"finished"}):
        for job_dir, job in jobs[status]:
            lines.append(f"  {status}: {job_dir}  {job.get('error', '')}".rstrip())
    return "\n".join(lines)


def statuses_since(sweep_dir: Path, started: float) -> list[str]:
    """For a launcher that reports nothing: the jobs started since ``started`` (epoch seconds)
    by their status, those finished earlier as ``skipped``."""
    statuses = []
    for _, job in scan_jobs(sweep_dir):
        if float(job.get("started") or 0) >= started:
            statuses.append(job.get("status", "unknown"))
        elif job.get("status") == "finished":
            statuses.append("skipped")
    return statuses


def failed_count(statuses: Iterable[str | None]) -> int:
    """Jobs neither finished, skipped nor never started: failed, interrupted, unknown."""
    return sum(s not in ("finished", "skipped", None) for s in statuses)


def sweep_line(statuses: Iterable[str | None]) -> str:
    """``N run, M skipped, K failed, L not started``: failed counts interrupted jobs too."""
    statuses = list(statuses)
    run, skipped = statuses.count("finished"), statuses.count("skipped")
    missing = statuses.count(None)
    return f"{run} run, {skipped} skipped, {failed_count(statuses)} failed, {missing} not started"


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
