"""One launch of the local launcher: plan every job, run what is left, record what failed.

sweep = LocalSweep(launcher, job_overrides, initial_job_idx)
sweep.plan(); sweep.run()          # or sweep.interrupted(signum) on SIGTERM / SIGINT
sweep.close(); returns = sweep.returns()
"""

from __future__ import annotations

import logging
import os
import signal
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from hydra.core.hydra_config import HydraConfig
from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn, JobStatus, filter_overrides, run_job, setup_globals
from omegaconf import DictConfig, OmegaConf, open_dict

from attnsvm.results.plan import INVALID, SKIP, PlannedJob, plan_job, print_summary, record_statuses
from hydra_plugins.attnsvm_local.pool import Outcome, WorkerPool

log = logging.getLogger("hydra_plugins.attnsvm_local")


def n_workers(n_jobs: int, jobs: int) -> int:
    """Workers for ``jobs`` jobs: ``n_jobs`` (> 0), or the cores + 1 + ``n_jobs`` (< 0)."""
    n = n_jobs if n_jobs > 0 else (os.cpu_count() or 1) + 1 + n_jobs
    return max(1, min(n, jobs))


def execute_job(num, overrides, hydra_context, config, task_function, singleton_state):
    """In a worker: one job, exactly as hydra-joblib-launcher runs it; returns run.execute's
    status. An exception that attnsvm's own recording did not catch is raised, for the
    launcher to record."""
    setup_globals()
    Singleton.set_state(singleton_state)
    sweep_config = hydra_context.config_loader.load_sweep_config(config, list(overrides))
    with open_dict(sweep_config):
        sweep_config.hydra.job.id = f"{sweep_config.hydra.job.name}_{num}"
        sweep_config.hydra.job.num = num
    HydraConfig.instance().set_config(sweep_config)
    ret = run_job(
        hydra_context=hydra_context,
        config=sweep_config,
        task_function=task_function,
        job_dir_key="hydra.sweep.dir",
        job_subdir_key="hydra.sweep.subdir",
    )
    if ret.status == JobStatus.FAILED:
        raise ret._return_value
    return ret.return_value  # a status; not ret: its configs may name this plug-in's classes


def job_label(overrides: Sequence[str]) -> str:
    return " ".join(filter_overrides(list(overrides)))


def task_config(sweep_config: DictConfig) -> DictConfig:
    return OmegaConf.masked_copy(sweep_config, [k for k in sweep_config if k != "hydra"])


@dataclass
class Job:
    num: int
    overrides: list[str]
    config: DictConfig  # the job's composed config, hydra node included
    planned: PlannedJob
    status: str | None = None  # finished | skipped | failed | interrupted; None: not started


class LocalSweep:
    def __init__(self, launcher, job_overrides: list[list[str]], initial_job_idx: int) -> None:
        self.launcher = launcher
        self.sweep_dir = Path(str(launcher.config.hydra.sweep.dir))
        self.job_overrides, self.first = job_overrides, initial_job_idx
        self.jobs: dict[int, Job] = {}
        self.pool: WorkerPool | None = None

    def plan(self) -> None:
        """Compose every job and decide, as run.execute would, whether it runs: finished jobs
        are skipped here, before any worker exists; an invalid config stops the sweep."""
        loader = self.launcher.hydra_context.config_loader
        self.sweep_dir.mkdir(parents=True, exist_ok=True)
        for num, overrides in enumerate(self.job_overrides, start=self.first):
            cfg = loader.load_sweep_config(self.launcher.config, overrides)
            with open_dict(cfg):
                cfg.hydra.job.id = f"{cfg.hydra.job.name}_{num}"
                cfg.hydra.job.num = num
            HydraConfig.instance().set_config(cfg)
            out = self.sweep_dir / str(OmegaConf.select(cfg, "hydra.sweep.subdir"))
            planned = plan_job(task_config(cfg), num, out, self.sweep_dir, job_label(overrides))
            self.jobs[num] = Job(num, overrides, cfg, planned)
        HydraConfig.instance().set_config(self.launcher.config)
        invalid = [j.planned for j in self.jobs.values() if j.planned.action == INVALID]
        if invalid:
            where = "; ".join(f"job #{j.num} [{j.overrides}]: {j.note}" for j in invalid)
            raise SystemExit(f"attnsvm: invalid config: {where} (no job was started)")
        for job in self.jobs.values():
            if job.planned.action == SKIP:
                job.status = "skipped"
                log.info(
                    "job %s already finished in %s: skipped",
                    job.planned.config_hash,
                    job.planned.job_dir,
                )
        todo = sum(j.status is None for j in self.jobs.values())
        log.info(
            "%d jobs in %s: %d to skip (finished before), %d to run",
            len(self.jobs),
            self.sweep_dir,
            len(self.jobs) - todo,
            todo,
        )

    def run(self) -> None:
        """The jobs left, on at most ``n_jobs`` workers; none started when none is left."""
        launcher, state = self.launcher, Singleton.get_state()
        todo = {
            num: (
                execute_job,
                (num, job.overrides, launcher.hydra_context, launcher.config)
                + (launcher.task_function, state),
            )
            for num, job in self.jobs.items()
            if job.status is None
        }
        if todo:
            for num in todo:
                log.info("\t#%d : %s", num, job_label(self.jobs[num].overrides))
            self.pool = WorkerPool(n_workers(launcher.n_jobs, len(todo)))
            self.pool.run(todo, done=self._done)
        record_statuses(j.status for j in self.jobs.values())

    def _done(self, num: int, outcome: Outcome, interrupted: str | None = None) -> None:
        job = self.jobs[num]
        if outcome.error is None:
            job.status = outcome.value
            return
        job.status = self._record(job, outcome, interrupted)

    def _record(self, job: Job, outcome: Outcome, interrupted: str | None) -> str:
        """job.json of a job whose worker died or that raised outside attnsvm's recording:
        ``failed`` (``interrupted`` when the sweep was) with the reason; returns the status."""
        from attnsvm.run import record_lost_job

        status = "interrupted" if interrupted else "failed"
        error = f"{outcome.error} (sweep {interrupted})" if interrupted else outcome.error
        extra = {"status": status, "traceback": outcome.traceback, "exitcode": outcome.exitcode}
        out = Path(job.planned.job_dir)
        try:
            where = record_lost_job(
                task_config(job.config), out, self.sweep_dir, str(error), **extra
            )
        except OSError as exc:
            log.error(
                "job #%d %s: %s; job.json could not be written: %r", job.num, status, error, exc
            )
            return status
        if where is None:  # it had finished: the result came before the worker died
            return "finished"
        log.error("job #%d %s: %s", job.num, status, error)
        return status

    def interrupted(self, signum: int) -> None:
        """SIGTERM / SIGINT of the sweep: interrupt the jobs in flight, start no other, print
        the summary and exit with 128 + signum."""
        name = signal.Signals(signum).name
        if self.pool is not None:
            for num, outcome in self.pool.interrupt().items():
                self._done(num, outcome, interrupted=f"interrupted by {name}")
        record_statuses(j.status for j in self.jobs.values())
        missing = sum(j.status is None for j in self.jobs.values())
        log.error("sweep interrupted by %s: %d jobs not started (re-run to resume)", name, missing)
        print_summary(self.sweep_dir)
        raise SystemExit(128 + signum)

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close()

    def returns(self) -> list[JobReturn]:
        """One JobReturn per job, in order, whose value is the job's status."""
        out = []
        for job in self.jobs.values():
            ret = JobReturn(
                overrides=job.overrides,
                cfg=task_config(job.config),
                hydra_cfg=job.config,
                working_dir=job.planned.job_dir,
                task_name=str(job.config.hydra.job.name),
                status=JobStatus.COMPLETED,
            )
            ret.return_value = job.status
            out.append(ret)
        return out
