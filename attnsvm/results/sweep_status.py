"""A sweep's jobs counted by status: from its job.json records (``format_sweep_status``,
``statuses_since``) or from the statuses its launchers reported (``sweep_line``).

    attnsvm sweep outputs/sweeps/rank: 38 finished, 2 failed
      failed: outputs/sweeps/rank/7  ValueError(...)
    attnsvm sweep: 4 run, 2 skipped, 1 failed, 3 not started
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

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
