"""``hydra/launcher=local`` (the default of ``-m``): attnsvm's sweeps on this machine's cores.

python -m attnsvm.run -m dataset.d=2,4,8 parameterization=w,kq hydra.launcher.n_jobs=4

Jobs get what Hydra's per-job machinery gives them (per-job config, ``.hydra/``, ``run.log``),
as hydra-joblib-launcher runs them, so their results are the same bits. What differs:

- the workers (attnsvm/workers.py) start as the launcher is set up, before the sweep is
  planned, and stay up for the whole sweep, one job at a time each;
- every job is planned (attnsvm.results.plan.plan_plain) before any is sent to a worker, in
  milliseconds per job (sweep.py's doc): finished jobs are skipped there, and a sweep with
  nothing left to run computes nothing;
- a job is claimed before it runs (attnsvm/results/claim.py): a second sweep on the same
  directory waits for it and counts it skipped;
- the workers end with the sweep's process however it ends, SIGKILL included;
- a worker that dies, or a job that raises outside attnsvm's own recording (a full disk), fails
  that job only (``status: failed`` with the reason, in job.json where it can still be
  written); the other jobs go on;
- SIGTERM / SIGINT of the sweep interrupts the jobs in flight (``status: interrupted``),
  starts no other, prints the summary and exits with 128 + the signal's number.

Every sweep ends with ``N run, M skipped, K failed, L not started`` (attnsvm.results.plan), and
exits 1 when some job failed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from hydra.core.config_store import ConfigStore
from hydra.core.utils import JobReturn
from hydra.plugins.launcher import Launcher
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig

from attnsvm.interrupt import JobInterrupted, interruptible
from attnsvm.results.sweepdir import register_resolver
from attnsvm.workers import WorkerPool
from hydra_plugins.attnsvm_local.sweep import LocalSweep, n_workers, start_pool
from hydra_plugins.attnsvm_local.sweeper import AttnsvmSweeper  # noqa: F401  (hydra/sweeper)

register_resolver()  # conf/config.yaml's hydra.sweep.dir: Hydra imports plug-ins first


@dataclass
class LocalLauncherConf:
    _target_: str = "hydra_plugins.attnsvm_local.LocalLauncher"
    n_jobs: int = -1  # workers; -1: one per core, -2: all cores but one (joblib's convention)


ConfigStore.instance().store(
    group="hydra/launcher", name="attnsvm_local", node=LocalLauncherConf, provider="attnsvm"
)


class LocalLauncher(Launcher):
    """The module doc. Its pool starts in ``setup``, which Hydra calls before the sweeper
    plans: the workers import torch while the sweep is planned."""

    def __init__(self, n_jobs: int = -1) -> None:
        self.n_jobs = int(n_jobs)
        self.config: DictConfig | None = None
        self.task_function: TaskFunction | None = None
        self.hydra_context: HydraContext | None = None
        self._pool: WorkerPool | None = None

    def setup(
        self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig
    ) -> None:
        self.config, self.task_function, self.hydra_context = config, task_function, hydra_context
        self._pool = start_pool(self)

    def pool(self, jobs: int) -> WorkerPool | None:
        """The pool sized for ``jobs`` jobs (extra workers end now); None, and none left
        running, when there is no job to run."""
        if not jobs:
            self.end_workers()
            return None
        if self._pool is None:
            self._pool = start_pool(self)
        self._pool.resize(n_workers(self.n_jobs, jobs))
        return self._pool

    def end_workers(self) -> None:
        """Its workers ended (the sweeper calls it when the sweep is over)."""
        if self._pool is not None:
            self._pool.close()
            self._pool = None

    def launch(
        self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int
    ) -> Sequence[JobReturn]:
        assert self.config is not None and self.hydra_context is not None
        sweep = LocalSweep(self, [list(o) for o in job_overrides], initial_job_idx)
        with interruptible():  # SIGTERM / SIGINT: JobInterrupted, then a second one is ignored
            try:
                sweep.plan()
                sweep.run()
            except JobInterrupted as exc:
                sweep.interrupted(exc.signum, self._pool)  # exits 128 + signum
            except BaseException:
                self.end_workers()
                raise
        return sweep.returns()
