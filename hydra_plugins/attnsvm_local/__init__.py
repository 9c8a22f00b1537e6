"""``hydra/launcher=local`` (the default of ``-m``): a sweep's jobs on this machine's cores.

python -m attnsvm.run -m dataset.d=2,4,8 parameterization=w,kq hydra.launcher.n_jobs=4

Every job is planned first (finished ones skipped), then each job left runs in a worker of
attnsvm/workers.py as Hydra's ``run_job`` would run it; a dead worker or a failed job fails only
that job, SIGTERM / SIGINT interrupt the jobs in flight. docs/scaling.md has the details.
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
from hydra_plugins.attnsvm_local.sweep import LocalSweep, n_workers, start_pool, usable_cores
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
    def __init__(self, n_jobs: int = -1) -> None:
        self.n_jobs = int(n_jobs)
        self.config: DictConfig | None = None
        self.hydra_context: HydraContext | None = None
        self._pool: WorkerPool | None = None

    def setup(
        self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig
    ) -> None:
        """Starts the pool: Hydra calls it before the sweeper plans, so the workers import
        torch while the sweep is planned."""
        self.config, self.hydra_context = config, hydra_context
        self._pool = start_pool(hydra_context, n_workers(self.n_jobs, usable_cores()))

    def pool(self, jobs: int) -> WorkerPool | None:
        """The pool sized for ``jobs`` jobs (extra workers end now); None when there are none."""
        if not jobs:
            self.end_workers()
            return None
        n = n_workers(self.n_jobs, jobs)
        self._pool = self._pool or start_pool(self.hydra_context, n)
        self._pool.resize(n)
        return self._pool

    def end_workers(self) -> None:  # the sweeper's, when the sweep is over
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
