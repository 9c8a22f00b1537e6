"""``hydra/launcher=local`` (the default of ``-m``): attnsvm's sweeps on this machine's cores.

python -m attnsvm.run -m dataset.d=2,4,8 parameterization=w,kq hydra.launcher.n_jobs=4

Jobs get what Hydra's per-job machinery gives them (per-job config, ``.hydra/``, ``run.log``),
as hydra-joblib-launcher runs them, so their results are the same bits. What differs:

- every job is planned (attnsvm.results.plan.plan_plain) before it is sent to a worker, in
  milliseconds per job (sweep.py's doc): finished jobs are skipped there, and a sweep with
  nothing left to run computes nothing; the workers start with the command (early.py),
  the workers stay up for the whole sweep and get each job planned, its directory and
  ``.hydra/`` written by the sweep's process;
- the workers (attnsvm/workers.py) end with the sweep's process however it ends, SIGKILL included;
- a worker that dies, or a job that raises outside attnsvm's own recording (a full disk), fails
  that job only (``status: failed`` with the reason, in job.json where it can still be
  written); the other jobs go on;
- SIGTERM / SIGINT of the sweep interrupts the jobs in flight (``status: interrupted``),
  starts no other, prints the summary and exits with 128 + the signal's number.

Every sweep ends with ``N run, M skipped, K failed, L not started`` (attnsvm.results.plan), and
exits 1 when some job failed.
"""

from __future__ import annotations

import logging
import signal
from collections.abc import Sequence
from dataclasses import dataclass

from hydra.core.config_store import ConfigStore
from hydra.core.utils import JobReturn
from hydra.plugins.launcher import Launcher
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig

from attnsvm.results.sweepdir import register_resolver
from hydra_plugins.attnsvm_local.sweep import LocalSweep
from hydra_plugins.attnsvm_local.sweeper import AttnsvmSweeper  # noqa: F401  (hydra/sweeper)

log = logging.getLogger(__name__)
register_resolver()  # conf/config.yaml's hydra.sweep.dir: Hydra imports plug-ins first


@dataclass
class LocalLauncherConf:
    _target_: str = "hydra_plugins.attnsvm_local.LocalLauncher"
    n_jobs: int = -1  # workers; -1: one per core, -2: all cores but one (joblib's convention)


ConfigStore.instance().store(
    group="hydra/launcher", name="attnsvm_local", node=LocalLauncherConf, provider="attnsvm"
)


class SweepInterrupted(BaseException):
    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _interrupt(signum, frame) -> None:
    for sig in (signal.SIGTERM, signal.SIGINT):  # a second Ctrl-C waits for the records
        signal.signal(sig, signal.SIG_IGN)
    raise SweepInterrupted(signum)


class LocalLauncher(Launcher):
    def __init__(self, n_jobs: int = -1) -> None:
        self.n_jobs = int(n_jobs)
        self.config: DictConfig | None = None
        self.task_function: TaskFunction | None = None
        self.hydra_context: HydraContext | None = None

    def setup(
        self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig
    ) -> None:
        self.config, self.task_function, self.hydra_context = config, task_function, hydra_context

    def launch(
        self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int
    ) -> Sequence[JobReturn]:
        assert self.config is not None and self.hydra_context is not None
        sweep = LocalSweep(self, [list(o) for o in job_overrides], initial_job_idx)
        old = {s: signal.signal(s, _interrupt) for s in (signal.SIGTERM, signal.SIGINT)}
        try:
            sweep.plan()
            sweep.run()
        except SweepInterrupted as exc:
            sweep.interrupted(exc.signum)
        finally:
            sweep.close()
            for sig, handler in old.items():
                signal.signal(sig, handler)
        return sweep.returns()
