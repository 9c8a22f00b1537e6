"""One launch of the local launcher: plan every job, run what is left, record what failed.

sweep = LocalSweep(launcher, job_overrides, initial_job_idx)
sweep.plan(); sweep.run()          # or sweep.interrupted(signum) on SIGTERM / SIGINT
sweep.close(); returns = sweep.returns()

Planning takes milliseconds per job (compose.SweepComposer: no Hydra composition per job; the
config converted, resolved and hashed once; the sweep's finished index read once). A job that
runs is composed in full just before it is needed, while the workers compute the jobs before
it: its directory and ``.hydra/`` files are written here, as Hydra's ``run_job`` writes them,
and the worker gets the planned RunConfig and hash (``run_planned``): it sets up the job's log
and runs it, nothing composed or resolved again. While a core is left over for this process
(fewer workers than cores), the worker hands the computed job back and this process writes its
files while the worker computes the next (attnsvm/handoff.py); with a worker on every core the
workers write their own, so that this process's share of each job stays the few milliseconds
of its dispatch and the sweep's throughput grows with the workers. A sweep
with its own Hydra callbacks, ``hydra.job.chdir`` or ``hydra.job.env_set`` runs each job
through Hydra's ``run_job`` instead (``execute_job``), with the config composed here.
"""

from __future__ import annotations

import functools
import logging
import logging.config
import os
import signal
import sys
import time
import traceback
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from hydra.core.hydra_config import HydraConfig
from hydra.core.singleton import Singleton
from hydra.core.utils import (
    JobReturn,
    JobStatus,
    _flush_loggers,
    configure_log,
    filter_overrides,
    run_job,
    setup_globals,
)
from omegaconf import DictConfig, OmegaConf, open_dict, read_write

from attnsvm.handoff import Computed, deliver, import_writers
from attnsvm.results.plan import (
    INVALID,
    SKIP,
    PlannedJob,
    plan_plain,
    print_summary,
    record_statuses,
)
from attnsvm.results.store import finished_index
from attnsvm.workers import Outcome, WorkerPool, usable_cores
from hydra_plugins.attnsvm_local.compose import composer_for, hydra_files

log = logging.getLogger("hydra_plugins.attnsvm_local")
PLANNED = "planned %d jobs in %.1f ms (%.2f ms per job)"  # attnsvm.bench reads it
OWN_CPU = "the sweep's process: %.2f s of CPU (jobs' files written by %s)"  # and this
# what jobs import (torch, pandas; the SVM stage, whose NNLS loads scipy's compiled routine and
# its BLAS: attnsvm/svm/nnls.py; the job's entry point run_planned imports): a worker imports
# them as it starts, not in its first job
WARM = ("attnsvm.job", "attnsvm.svm.solve", "attnsvm.run")
MAKE_AHEAD = 256  # jobs whose messages are made ahead at most (their .hydra files' text held)
HYDRA_RESOLVER = "${hydra:"  # an interpolation that needs HydraConfig set to the job's config


def n_workers(n_jobs: int, jobs: int) -> int:
    """Workers for ``jobs`` jobs: ``n_jobs`` (> 0), or the cores + 1 + ``n_jobs`` (< 0)."""
    n = n_jobs if n_jobs > 0 else usable_cores() + 1 + n_jobs
    return max(1, min(n, jobs))


def hands_off(workers: int) -> bool:
    """Whether ``workers`` workers hand computed jobs to this process to write (module doc):
    only while a core is left over for it."""
    return workers < usable_cores()


def execute_job(sweep_config, hydra_context, task_function, singleton_state):
    """In a worker: one job composed by the sweep (``sweep_config``), run as hydra-joblib-
    launcher runs it; returns run.execute's status. An exception that attnsvm's own recording
    did not catch is raised, for the launcher to record."""
    setup_globals()
    Singleton.set_state(singleton_state)
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


def run_planned(
    out: str, sweep_dir: str, run, chash: str, job_logging, verbose, hand_off: bool = True
):
    """In a worker: one planned job (module doc): its log set up as Hydra's ``run_job`` sets it
    (``run.log`` in its directory), then run.execute with the planned run and hash; with
    ``hand_off`` a computed job comes back as a ``Computed`` for the sweep's process to write,
    else the worker writes it and its summary and returns its status."""
    from attnsvm.run import execute

    if job_logging is not None and job_logging.get("root") is not None and not verbose:
        logging.config.dictConfig(job_logging)
    else:
        configure_log(None if job_logging is None else OmegaConf.create(job_logging), verbose)
    try:
        return execute(None, Path(out), True, Path(sweep_dir), (run, chash), hand_off=hand_off)
    finally:
        _flush_loggers()
        sys.stdout.flush()  # the job's summary before the sweep's last line, whatever comes
        sys.stderr.flush()


def job_label(overrides: Sequence[str]) -> str:
    return " ".join(filter_overrides(list(overrides)))


def task_config(sweep_config: DictConfig) -> DictConfig:
    return OmegaConf.masked_copy(sweep_config, [k for k in sweep_config if k != "hydra"])


class SweepJobReturn(JobReturn):
    """Hydra's JobReturn whose ``cfg`` (the task config) is made from ``hydra_cfg`` when read:
    no sweeper reads it, and making every job's took 6-10 ms per job after the last one."""

    @property
    def cfg(self) -> DictConfig | None:
        return None if self.hydra_cfg is None else task_config(self.hydra_cfg)

    @cfg.setter
    def cfg(self, value) -> None:  # JobReturn's __init__ sets None: made from hydra_cfg
        pass


@dataclass
class Job:
    num: int
    overrides: list[str]
    config: DictConfig | None  # the job's composed config, hydra node included (once it runs)
    planned: PlannedJob
    status: str | None = None  # finished | skipped | failed | interrupted; None: not started
    made: tuple | None = None  # its message's parts, made ahead (LocalSweep._made)


def _delivered(done: Computed) -> Outcome:
    """A worker's computed job written here (attnsvm/handoff.py); a failure to write it (a full
    disk) is that job's failure, recorded as a worker's error would be."""
    try:
        return Outcome(value=deliver(done))
    except Exception as exc:  # noqa: BLE001  (any error writing one job's files)
        return Outcome(error=repr(exc), traceback=traceback.format_exc())
    finally:
        sys.stdout.flush()


class LocalSweep:
    def __init__(self, launcher, job_overrides: list[list[str]], initial_job_idx: int) -> None:
        self.launcher = launcher
        self.sweep_dir = Path(str(launcher.config.hydra.sweep.dir))
        self.job_overrides, self.first = job_overrides, initial_job_idx
        self.jobs: dict[int, Job] = {}
        self.pool: WorkerPool | None = None
        self.hand_off = True  # computed jobs written here (module doc); set by run()
        self.via_hydra = False  # jobs run through Hydra's run_job: their workers write them
        self.composer = composer_for(launcher.hydra_context.config_loader, launcher.config)

    def plan(self) -> None:
        """Decide, as run.execute would, whether each job runs (module doc: milliseconds per
        job): finished jobs are skipped here, before any worker exists; an invalid config stops
        the sweep."""
        start = time.perf_counter()
        self.sweep_dir.mkdir(parents=True, exist_ok=True)
        index = finished_index(self.sweep_dir)
        for num, overrides in enumerate(self.job_overrides, start=self.first):
            plain, out = self.composer.plan_inputs(overrides, num, self.sweep_dir)
            label = job_label(overrides)
            planned = plan_plain(plain, num, out, self.sweep_dir, label, index)
            self.jobs[num] = Job(num, overrides, None, planned)
        HydraConfig.instance().set_config(self.launcher.config)
        ms = (time.perf_counter() - start) * 1e3
        log.info(PLANNED, len(self.jobs), ms, ms / max(1, len(self.jobs)))
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
        todo = [num for num, job in self.jobs.items() if job.status is None]
        if todo:
            for num in todo:
                log.info("\t#%d : %s", num, job_label(self.jobs[num].overrides))
            workers = n_workers(self.launcher.n_jobs, len(todo))
            self.hand_off = hands_off(workers)
            self.pool = WorkerPool(workers, warm=WARM)
            self.pool.start(len(todo))
            if self.hand_off:
                import_writers()  # while the workers start (they import torch: longer)
            ahead = functools.partial(self._make_ahead, iter(todo[:MAKE_AHEAD]))
            self.pool.run(todo, done=self._done, prepare=self._prepare, idle=ahead)
            HydraConfig.instance().set_config(self.launcher.config)
            writer = "this process" if self.hand_off and not self.via_hydra else "each worker"
            log.info(OWN_CPU, time.process_time(), writer)
        record_statuses(j.status for j in self.jobs.values())

    def _composed(self, job: Job) -> DictConfig:
        if job.config is None:
            job.config = self.composer.compose(job.overrides, job.num)
        return job.config

    def _prepare(self, num: int) -> tuple:
        """Job ``num``'s message to a worker (module doc): its directory and ``.hydra/`` files
        written as Hydra's ``run_job`` writes them, and ``run_planned`` with its plan."""
        job, launcher = self.jobs[num], self.launcher
        made, job.made = job.made or self._made(job), None
        if made is None:  # a job that Hydra's run_job must run
            state = Singleton.get_state()
            self.via_hydra = True
            return execute_job, (job.config, launcher.hydra_context, launcher.task_function, state)
        out, files, logs, verbose = made
        out.mkdir(parents=True, exist_ok=True)
        if job.config.hydra.output_subdir is not None:
            where = out / str(job.config.hydra.output_subdir)
            where.mkdir(parents=True, exist_ok=True)
            for name, text in files.items():
                with open(where / name, "w", encoding="utf-8") as fh:
                    fh.write(text)
        run, chash = job.planned.run, job.planned.config_hash
        args = (str(out), str(self.sweep_dir), run, chash, logs, verbose, self.hand_off)
        return run_planned, args

    def _made(self, job: Job) -> tuple | None:
        """What ``_prepare`` writes and sends, made without touching the disk: (job directory,
        .hydra files' text, log config, verbose); None for a job that Hydra's ``run_job`` must
        run (callbacks, chdir, env_set)."""
        cfg = self._composed(job)
        hc = cfg.hydra
        if hc.callbacks.keys() - {"summary"} or hc.job.chdir or hc.job.env_set:
            return None
        out = Path(str(hc.sweep.dir)) / str(hc.sweep.subdir)
        with read_write(hc.runtime), open_dict(hc.runtime):
            hc.runtime.output_dir = os.path.abspath(out)
        files = hydra_files(cfg)
        if any(HYDRA_RESOLVER in text for text in files.values()):
            HydraConfig.instance().set_config(cfg)  # for ${hydra:...} in job_logging
        logs = hc.job_logging
        logs = None if logs is None else OmegaConf.to_container(logs, resolve=True)
        verbose = (
            OmegaConf.to_container(hc.verbose) if OmegaConf.is_config(hc.verbose) else hc.verbose
        )
        return out, files, logs, verbose

    def _make_ahead(self, todo: Iterator[int]) -> bool:
        """While the workers start or compute: the next of ``todo`` made (``_made``), so that
        its dispatch only writes. On a sweep's start the first worker's imports leave this
        process's core idle: the 40-job grid's jobs are all made there. False: none left."""
        job = next((self.jobs[num] for num in todo if self.jobs[num].status is None), None)
        if job is None:
            return False
        if job.made is None and job.config is None:  # not sent yet
            try:
                job.made = self._made(job)
            except Exception:  # noqa: BLE001  (made again at its dispatch: it fails as a job)
                job.made = None
        return True

    def _done(self, num: int, outcome: Outcome, interrupted: str | None = None) -> None:
        job = self.jobs[num]
        if outcome.error is None and isinstance(outcome.value, Computed):
            outcome = _delivered(outcome.value)
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
                task_config(self._composed(job)), out, self.sweep_dir, str(error), **extra
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
            cfg = job.config if job.status is not None else None  # made ahead, never run: None
            ret = SweepJobReturn(
                overrides=job.overrides,
                hydra_cfg=cfg,
                working_dir=job.planned.job_dir,
                task_name=None if cfg is None else str(cfg.hydra.job.name),
                status=JobStatus.COMPLETED,
            )
            ret.return_value = job.status
            out.append(ret)
        return out
