"""``hydra/sweeper=attnsvm`` (conf/config.yaml's default): Hydra's basic sweeper, whose check
that every job composes costs milliseconds per job (compose.SweepComposer.check: Hydra's errors).

A sweep directory that cannot be written is planned first: all finished, the sweep reports them
skipped and writes nothing; else one ``attnsvm:`` line says how many jobs are left, and nothing
starts. A launcher that writes nothing (``WRITES_NOTHING``: the dry run) gets no multirun.yaml.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from hydra.core.config_store import ConfigStore
from hydra.core.override_parser.overrides_parser import OverridesParser

from attnsvm.composition.migrate import migrate_sweep
from attnsvm.config.input_checks import read_only_message, read_only_part
from attnsvm.hydra_internals import basic_sweeper
from attnsvm.results.job_dir import Leftovers
from attnsvm.results.plan import SKIP, refuse_invalid
from attnsvm.results.sweep_status import record_statuses
from hydra_plugins.attnsvm_local.compose import composer_for

log = logging.getLogger("hydra_plugins.attnsvm_local")


@dataclass
class AttnsvmSweeperConf:
    _target_: str = "hydra_plugins.attnsvm_local.sweeper.AttnsvmSweeper"
    max_batch_size: int | None = None
    params: dict[str, str] | None = None


ConfigStore.instance().store(
    group="hydra/sweeper", name="attnsvm", node=AttnsvmSweeperConf, provider="attnsvm"
)


class AttnsvmSweeper(basic_sweeper()):
    def validate_batch_is_legal(self, batch: Sequence[Sequence[str]]) -> None:
        composer = composer_for(self.hydra_context.config_loader, self.config)
        for overrides in batch:
            composer.check(list(overrides))

    def sweep(self, arguments: list[str]):
        before = Leftovers(Path(str(self.config.hydra.sweep.dir)))
        try:
            return self._sweep(arguments)
        except BaseException:
            before.undo()  # a sweep refused before any job ran leaves nothing behind
            raise
        finally:
            end_workers = getattr(self.launcher, "end_workers", None)  # the local launcher's
            if end_workers is not None:
                end_workers()

    def _sweep(self, arguments: list[str]):
        if getattr(self.launcher, "WRITES_NOTHING", False):  # the dry run: it lists the jobs
            return self._each_batch(arguments, self.launcher.launch)
        sweep_dir = Path(str(self.config.hydra.sweep.dir))
        blocked = read_only_part(sweep_dir)
        if blocked is None:
            migrate_sweep(sweep_dir)  # an old sweep's jobs carried to their job configs
            return super().sweep(arguments)
        self._finished_read_only(arguments, sweep_dir, blocked)
        return []

    def _each_batch(self, arguments: list[str], fn) -> list:
        """``fn(batch, first job number)`` for each batch of the grid, checked, as the basic
        sweeper makes them (without its multirun.yaml)."""
        params = [*self._parse_config(), *arguments]
        parser = OverridesParser.create(config_loader=self.hydra_context.config_loader)
        out, first = [], 0
        for batch in self.split_arguments(parser.parse_overrides(params), self.max_batch_size):
            self.validate_batch_is_legal(batch)
            out.append(fn(batch, first))
            first += len(batch)
        return out

    def _finished_read_only(self, arguments: list[str], sweep_dir: Path, blocked: Path) -> None:
        """A read-only sweep (module doc): all finished, recorded skipped; else SystemExit."""
        composer = composer_for(self.hydra_context.config_loader, self.config)
        batches = self._each_batch(arguments, lambda b, n: composer.plan(b, n, sweep_dir))
        planned = [job for batch in batches for job in batch]
        refuse_invalid(planned)
        left = sum(j.action != SKIP for j in planned)
        if left:
            what = f"{left} of its {len(planned)} jobs still to run (nothing was started)"
            msg = read_only_message("hydra.sweep.dir", str(sweep_dir), blocked, what)
            raise SystemExit(f"attnsvm: {msg}")
        log.info(
            "%d jobs in %s (read-only): all finished before, nothing written",
            len(planned),
            sweep_dir,
        )
        record_statuses(["skipped"] * len(planned))
