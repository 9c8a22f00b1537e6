"""``hydra/launcher=dryrun``: list what a sweep would run and skip, without running anything.

python -m attnsvm.run -m dataset.d=2,4,8 hydra/launcher=dryrun hydra.sweep.dir=outputs/sweep1

Every job is planned exactly as the local launcher plans it (its SweepComposer and
attnsvm.results.plan.plan_plain, milliseconds per job); the exit code is 1 when some job's
config is invalid. The sweep directory is left as it was (a fresh one is not created); a
read-only one is listed too (``WRITES_NOTHING``: attnsvm's sweeper then writes no multirun.yaml).
"""

import logging
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from hydra.core.config_store import ConfigStore
from hydra.core.utils import JobReturn, JobStatus
from hydra.plugins.launcher import Launcher
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig

log = logging.getLogger(__name__)


@dataclass
class DryRunLauncherConf:
    _target_: str = "hydra_plugins.attnsvm_dryrun.DryRunLauncher"


ConfigStore.instance().store(
    group="hydra/launcher", name="dryrun", node=DryRunLauncherConf, provider="attnsvm"
)


class DryRunLauncher(Launcher):
    WRITES_NOTHING = True  # attnsvm's sweeper launches it on a sweep it cannot write

    def __init__(self) -> None:
        self.config: DictConfig | None = None
        self.hydra_context: HydraContext | None = None
        self.sweep_dir: Path | None = None
        self.created: Path | None = None  # topmost directory that a real launch would create
        self.multirun_yaml: bytes | None = None

    def setup(
        self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig
    ) -> None:
        # The sweeper writes multirun.yaml after setup and before launch: remember what was there.
        self.config, self.hydra_context = config, hydra_context
        self.sweep_dir = Path(str(config.hydra.sweep.dir))
        missing = [p for p in [self.sweep_dir, *self.sweep_dir.parents] if not p.exists()]
        self.created = missing[-1] if missing else None
        saved = self.sweep_dir / "multirun.yaml"
        self.multirun_yaml = saved.read_bytes() if saved.exists() else None

    def launch(
        self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int
    ) -> Sequence[JobReturn]:
        from attnsvm.results.plan import INVALID, format_plan
        from hydra_plugins.attnsvm_local.compose import composer_for

        assert self.config is not None and self.hydra_context is not None
        assert self.sweep_dir is not None
        composer = composer_for(self.hydra_context.config_loader, self.config)
        jobs = composer.plan(job_overrides, initial_job_idx, self.sweep_dir)
        returns = []
        for overrides, job in zip(job_overrides, jobs, strict=True):
            returns.append(JobReturn(overrides=list(overrides), status=JobStatus.COMPLETED))
            returns[-1].return_value = job.action
        self._restore()
        print(format_plan(jobs, self.sweep_dir), flush=True)
        invalid = [j for j in jobs if j.action == INVALID]
        if invalid:
            raise SystemExit(f"attnsvm: {len(invalid)} job(s) with an invalid config")
        return returns

    def _restore(self) -> None:
        """Leave the sweep directory as the dry run found it."""
        assert self.sweep_dir is not None
        saved = self.sweep_dir / "multirun.yaml"
        if self.created is not None:
            shutil.rmtree(self.created, ignore_errors=True)
        elif self.multirun_yaml is not None:
            if not saved.is_file() or saved.read_bytes() != self.multirun_yaml:
                saved.write_bytes(self.multirun_yaml)  # a read-only sweep's was never rewritten
        else:
            saved.unlink(missing_ok=True)
