"""``hydra/launcher=dryrun``: list what a sweep would run and skip, without running anything.

python -m attnsvm.run -m dataset.d=2,4,8 hydra/launcher=dryrun hydra.sweep.dir=outputs/sweep1

Every job is planned exactly as the local launcher plans it (its SweepComposer and
attnsvm.results.plan.plan_job, milliseconds per job); the exit code is 1 when some job's
config is invalid. Nothing is written (``WRITES_NOTHING``: attnsvm's sweeper then writes no
multirun.yaml), so a read-only sweep is listed too.
"""

import logging
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


def format_plan(jobs: list, sweep_dir: Path) -> str:
    """The dry run's output: one line per job and a count per action."""
    from attnsvm.results.plan import INVALID, RERUN, RUN, SKIP

    lines = [f"attnsvm dry run of the sweep in {sweep_dir} (nothing is run):"]
    for j in jobs:
        where = Path(j.job_dir).name if Path(j.job_dir).parent == Path(sweep_dir) else j.job_dir
        lines.append(
            f"  #{j.num:<4} {j.action:<8} {j.config_hash or '-':<16}  {where:<24} "
            f"{j.note}  [{j.overrides}]"
        )
    counts = {a: sum(j.action == a for j in jobs) for a in (RUN, RERUN, SKIP, INVALID)}
    lines.append("  total: " + ", ".join(f"{v} {k}" for k, v in counts.items()))
    return "\n".join(lines)


class DryRunLauncher(Launcher):
    WRITES_NOTHING = True  # attnsvm's sweeper launches it on a sweep it cannot write

    def __init__(self) -> None:
        self.config: DictConfig | None = None
        self.hydra_context: HydraContext | None = None

    def setup(
        self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig
    ) -> None:
        self.config, self.hydra_context = config, hydra_context

    def launch(
        self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int
    ) -> Sequence[JobReturn]:
        from attnsvm.results.plan import INVALID
        from hydra_plugins.attnsvm_local.compose import composer_for

        assert self.config is not None and self.hydra_context is not None
        sweep_dir = Path(str(self.config.hydra.sweep.dir))
        composer = composer_for(self.hydra_context.config_loader, self.config)
        jobs = composer.plan(job_overrides, initial_job_idx, sweep_dir)
        returns = []
        for overrides, job in zip(job_overrides, jobs, strict=True):
            returns.append(JobReturn(overrides=list(overrides), status=JobStatus.COMPLETED))
            returns[-1].return_value = job.action
        print(format_plan(jobs, sweep_dir), flush=True)
        invalid = [j for j in jobs if j.action == INVALID]
        if invalid:
            raise SystemExit(f"attnsvm: {len(invalid)} job(s) with an invalid config")
        return returns
