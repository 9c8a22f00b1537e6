"""``hydra/launcher=local`` (the default of ``-m``): a sweep's jobs on this machine's cores.

python -m attnsvm.run -m dataset.d=2,4,8 parameterization=w,kq hydra.launcher.n_jobs=4

``setup`` starts the workers (attnsvm/workers.py), which import torch while the sweeper plans.
``launch`` plans every job (compose.py) and sends each one left to a worker, which runs it with
Hydra's ``run_job`` (job.py) into ``attnsvm.run.execute``. A dead worker or a failed job fails
only that job; SIGTERM / SIGINT interrupt the jobs in flight (docs/scaling.md).
"""

from __future__ import annotations

import logging
import os
import signal
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from hydra.core.config_store import ConfigStore
from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn, JobStatus
from hydra.plugins.launcher import Launcher
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig

from attnsvm.interrupt import JobInterrupted, interruptible
from attnsvm.results.job_dir import record_lost_job
from attnsvm.results.plan import SKIP, PlannedJob, refuse_invalid
from attnsvm.results.sweep_status import print_summary, record_statuses
from attnsvm.results.sweepdir import register_resolver
from attnsvm.workers import Outcome, WorkerPool
from hydra_plugins.attnsvm_local import job as worker
from hydra_plugins.attnsvm_local.compose import composer_for
from hydra_plugins.attnsvm_local.sweeper import AttnsvmSweeper  # noqa: F401  (hydra/sweeper)

register_resolver()  # conf/config.yaml's hydra.sweep.dir: Hydra imports plug-ins first

log = logging.getLogger("hydra_plugins.attnsvm_local")
PLANNED = "planned %d jobs in %.1f ms (%.2f ms per job)"  # attnsvm.bench reads it
OWN_CPU = "the sweep's process: %.2f s of CPU"  # and this
# what jobs import (torch, pandas, scipy, Hydra's job machinery): a worker imports them as it
# starts, while the sweep plans, not in its first job
WARM = ("attnsvm.job", "attnsvm.svm.solve", "attnsvm.run", "hydra_plugins.attnsvm_local.job")
# job.py's functions are read from the module when sent (``worker.run_one``): Hydra's plug-in
# scan runs job.py again, and names bound before it would be pickled by value, not by reference


@dataclass
class LocalLauncherConf:
    _target_: str = "hydra_plugins.attnsvm_local.LocalLauncher"
    n_jobs: int = -1  # workers; -1: one per core, -2: all cores but one (joblib's convention)


ConfigStore.instance().store(
    group="hydra/launcher", name="attnsvm_local", node=LocalLauncherConf, provider="attnsvm"
)


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity: a Slurm allocation, ``taskset``)."""
    affinity = getattr(os, "sched_getaffinity", None)  # not on macOS
    return len(affinity(0)) if affinity else os.cpu_count() or 1


def worker_count(n_jobs: int, jobs: int, cores: int) -> int:
    """``n_jobs`` (> 0), or ``cores`` + 1 + ``n_jobs`` (< 0: -1 one per core, -2 all but one),
    never more than ``jobs`` and at least one."""
    return max(1, min(n_jobs if n_jobs > 0 else cores + 1 + n_jobs, jobs))


@dataclass
class Job:
    overrides: list[str]
    planned: PlannedJob
    status: str | None = None  # finished | skipped | failed | interrupted; None: not started


class LocalLauncher(Launcher):
    def __init__(self, n_jobs: int = -1) -> None:
        self.n_jobs = int(n_jobs)
        self.hydra_context: HydraContext | None = None
        self.pool: WorkerPool | None = None
        self.jobs: dict[int, Job] = {}  # the launch's jobs, by number

    def setup(
        self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig
    ) -> None:
        self.hydra_context = hydra_context
        self.composer = composer_for(hydra_context.config_loader, config)
        self.sweep_dir = Path(str(config.hydra.sweep.dir))
        self._resize(usable_cores())

    def _resize(self, jobs: int) -> None:
        """Workers for ``jobs`` jobs (``worker_count``); none for no job. Extra idle workers
        end now."""
        n = worker_count(self.n_jobs, jobs, usable_cores())
        if not jobs:
            self.end_workers()
        elif self.pool is None:
            setup = (worker.setup_worker, (self.hydra_context, Singleton.get_state()))
            self.pool = WorkerPool(n, warm=WARM, setup=setup)
        else:
            self.pool.resize(n)

    def end_workers(self) -> None:  # the sweeper's, when the sweep is over
        if self.pool is not None:
            self.pool.close()
            self.pool = None

    def launch(
        self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int
    ) -> Sequence[JobReturn]:
        with interruptible():  # SIGTERM / SIGINT: JobInterrupted, then a second one is ignored
            try:
                self._plan([list(o) for o in job_overrides], initial_job_idx)
                self._run()
            except JobInterrupted as exc:  # the sweeper ends the workers, whatever ends it
                self._interrupted(exc.signum)  # exits 128 + signum
        returns = []  # one per job, in order, whose value is the job's status
        for job in self.jobs.values():
            ret = JobReturn(overrides=job.overrides, working_dir=job.planned.job_dir)
            ret.status, ret.return_value = JobStatus.COMPLETED, job.status
            returns.append(ret)
        return returns

    def _plan(self, job_overrides: list[list[str]], first: int) -> None:
        """Finished jobs are skipped; an invalid config stops the sweep before any job is sent."""
        start = time.perf_counter()
        self.sweep_dir.mkdir(parents=True, exist_ok=True)
        planned = self.composer.plan(job_overrides, first, self.sweep_dir)
        ms = (time.perf_counter() - start) * 1e3
        log.info(PLANNED, len(planned), ms, ms / max(1, len(planned)))
        refuse_invalid(planned)
        self.jobs = {}
        for p, overrides in zip(planned, job_overrides, strict=True):
            self.jobs[p.num] = Job(overrides, p, status="skipped" if p.action == SKIP else None)
            if p.action == SKIP:
                log.info("job %s already finished in %s: skipped", p.config_hash, p.job_dir)
        todo = sum(j.status is None for j in self.jobs.values())
        log.info(
            "%d jobs in %s: %d to skip (finished before), %d to run",
            *(len(planned), self.sweep_dir, len(planned) - todo, todo),
        )

    def _run(self) -> None:
        """The jobs left, on at most ``n_jobs`` workers."""
        todo = [num for num, job in self.jobs.items() if job.status is None]
        self._resize(len(todo))
        if todo:
            for num in todo:
                log.info("\t#%d : %s", num, self.jobs[num].planned.overrides)
            self.pool.run(todo, self._message, self._done)
            log.info(OWN_CPU, time.process_time())
        record_statuses(j.status for j in self.jobs.values())

    def _message(self, num: int) -> tuple:
        """Job ``num`` for a worker: ``run_one`` of its composed config and its plan."""
        job, p = self.jobs[num], self.jobs[num].planned
        return worker.run_one, (self.composer.compose(job.overrides, num), (p.run, p.config_hash))

    def _done(self, num: int, outcome: Outcome, interrupted: str | None = None) -> None:
        """The job's status; a job whose worker died or that raised outside attnsvm's own
        recording gets job.json ``failed`` (``interrupted`` when the sweep was) and the reason."""
        job = self.jobs[num]
        if outcome.error is None:
            job.status = outcome.value
            return
        job.status = "interrupted" if interrupted else "failed"
        error = f"{outcome.error} (sweep {interrupted})" if interrupted else outcome.error
        extra = {"status": job.status, "traceback": outcome.traceback, "exitcode": outcome.exitcode}
        p, out = job.planned, Path(job.planned.job_dir)
        try:
            if record_lost_job(p.run, p.config_hash, out, self.sweep_dir, error, **extra) is None:
                job.status = "finished"  # the result came before the worker died
                return
        except OSError as exc:  # a full disk: the sweep goes on
            error = f"{error}; job.json not written: {exc!r}"
        log.error("job #%d %s: %s", num, job.status, error)

    def _interrupted(self, signum: int) -> None:
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
