"""One launch of the local launcher: plan every job, run what is left, record what failed.

    sweep = LocalSweep(launcher, job_overrides, initial_job_idx)
    sweep.plan(); sweep.run()          # or sweep.interrupted(signum) on SIGTERM / SIGINT
    returns = sweep.returns()

A job is composed just before it is sent (compose.py); its worker runs it with Hydra's
``run_job`` (job.py) into ``attnsvm.run.execute``, which claims the job, computes it and
writes its files.
"""

from __future__ import annotations

import logging
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from hydra.core.hydra_config import HydraConfig
from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn, JobStatus
from omegaconf import DictConfig

from attnsvm.results.plan import SKIP, PlannedJob, print_summary, record_statuses, refuse_invalid
from attnsvm.workers import Outcome, WorkerPool
from hydra_plugins.attnsvm_local.compose import composer_for, task_config
from hydra_plugins.attnsvm_local.job import run_one, setup_worker

log = logging.getLogger("hydra_plugins.attnsvm_local")
PLANNED = "planned %d jobs in %.1f ms (%.2f ms per job)"  # attnsvm.bench reads it
OWN_CPU = "the sweep's process: %.2f s of CPU"  # and this
# what jobs import (torch, pandas, scipy, Hydra's job machinery): a worker imports them as it
# starts, while the sweep plans, not in its first job
WARM = ("attnsvm.job", "attnsvm.svm.solve", "attnsvm.run", "hydra_plugins.attnsvm_local.job")


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity: a Slurm allocation, ``taskset``)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def n_workers(n_jobs: int, jobs: int) -> int:
    """Workers for ``jobs`` jobs: ``n_jobs`` (> 0), or the cores + 1 + ``n_jobs`` (< 0)."""
    n = n_jobs if n_jobs > 0 else usable_cores() + 1 + n_jobs
    return max(1, min(n, jobs))


def start_pool(hydra_context, n: int) -> WorkerPool:
    """``n`` workers started now, each with the Hydra state of the sweep's process."""
    return WorkerPool(n, warm=WARM, setup=(setup_worker, (hydra_context, Singleton.get_state())))


@dataclass
class Job:
    overrides: list[str]
    planned: PlannedJob
    config: DictConfig | None = None  # its composed config, hydra node included (once sent)
    status: str | None = None  # finished | skipped | failed | interrupted; None: not started


class LocalSweep:
    def __init__(self, launcher, job_overrides: list[list[str]], initial_job_idx: int) -> None:
        self.launcher = launcher
        self.sweep_dir = Path(str(launcher.config.hydra.sweep.dir))
        self.job_overrides, self.first = job_overrides, initial_job_idx
        self.jobs: dict[int, Job] = {}
        self.composer = composer_for(launcher.hydra_context.config_loader, launcher.config)

    def plan(self) -> None:
        """Finished jobs are skipped; an invalid config stops the sweep before any job is sent."""
        start = time.perf_counter()
        self.sweep_dir.mkdir(parents=True, exist_ok=True)
        planned = self.composer.plan(self.job_overrides, self.first, self.sweep_dir)
        ms = (time.perf_counter() - start) * 1e3
        log.info(PLANNED, len(planned), ms, ms / max(1, len(planned)))
        refuse_invalid(planned)
        for p, overrides in zip(planned, self.job_overrides, strict=True):
            self.jobs[p.num] = Job(overrides, p, status="skipped" if p.action == SKIP else None)
            if p.action == SKIP:
                log.info("job %s already finished in %s: skipped", p.config_hash, p.job_dir)
        todo = sum(j.status is None for j in self.jobs.values())
        log.info(
            "%d jobs in %s: %d to skip (finished before), %d to run",
            *(len(planned), self.sweep_dir, len(planned) - todo, todo),
        )

    def run(self) -> None:
        """The jobs left, on at most ``n_jobs`` workers (the launcher's pool)."""
        todo = [num for num, job in self.jobs.items() if job.status is None]
        pool = self.launcher.pool(len(todo))
        if todo:
            for num in todo:
                log.info("\t#%d : %s", num, self.jobs[num].planned.overrides)
            pool.run(todo, self._message, self._done)
            HydraConfig.instance().set_config(self.launcher.config)
            log.info(OWN_CPU, time.process_time())
        record_statuses(j.status for j in self.jobs.values())

    def _composed(self, job: Job) -> DictConfig:
        if job.config is None:
            job.config = self.composer.compose(job.overrides, job.planned.num)
        return job.config

    def _message(self, num: int) -> tuple:
        """Job ``num`` for a worker: ``run_one`` of its composed config and its plan."""
        job = self.jobs[num]
        return run_one, (self._composed(job), (job.planned.run, job.planned.config_hash))

    def _done(self, num: int, outcome: Outcome, interrupted: str | None = None) -> None:
        """The job's status; a job whose worker died or that raised outside attnsvm's own
        recording gets job.json ``failed`` (``interrupted`` when the sweep was) and the reason."""
        job = self.jobs[num]
        if outcome.error is None:
            job.status = outcome.value
            return
        from attnsvm.run import record_lost_job

        job.status = "interrupted" if interrupted else "failed"
        error = f"{outcome.error} (sweep {interrupted})" if interrupted else outcome.error
        extra = {"status": job.status, "traceback": outcome.traceback, "exitcode": outcome.exitcode}
        cfg, out = task_config(self._composed(job)), Path(job.planned.job_dir)
        try:
            if record_lost_job(cfg, out, self.sweep_dir, error, **extra) is None:
                job.status = "finished"  # the result came before the worker died
                return
        except OSError as exc:  # a full disk: the sweep goes on
            error = f"{error}; job.json not written: {exc!r}"
        log.error("job #%d %s: %s", num, job.status, error)

    def interrupted(self, signum: int, pool: WorkerPool | None) -> None:
        """SIGTERM / SIGINT of the sweep: interrupt the jobs in flight, start no other, print
        the summary and exit with 128 + signum."""
        name = signal.Signals(signum).name
        if pool is not None:
            for num, outcome in pool.interrupt().items():
                self._done(num, outcome, interrupted=f"interrupted by {name}")
        record_statuses(j.status for j in self.jobs.values())
        missing = sum(j.status is None for j in self.jobs.values())
        log.error("sweep interrupted by %s: %d jobs not started (re-run to resume)", name, missing)
        print_summary(self.sweep_dir)
        raise SystemExit(128 + signum)

    def returns(self) -> list[JobReturn]:
        """One JobReturn per job, in order, whose value is the job's status."""
        out = []
        for job in self.jobs.values():
            ret = JobReturn(overrides=job.overrides, working_dir=job.planned.job_dir)
            ret.status, ret.return_value = JobStatus.COMPLETED, job.status
            out.append(ret)
        return out
