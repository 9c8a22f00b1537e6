"""``hydra/sweeper=attnsvm`` (conf/config.yaml's default): Hydra's basic sweeper, whose check
that every job composes costs milliseconds per job (compose.SweepComposer.check: Hydra's errors).

A sweep directory that cannot be written is planned first: all finished, the sweep reports them
skipped and writes nothing; else one ``attnsvm:`` line says how many jobs are left, and nothing
starts. A launcher that writes nothing (``WRITES_NOTHING``: the dry run) gets no multirun.yaml.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from hydra.core.config_store import ConfigStore
from hydra.core.override_parser.overrides_parser import OverridesParser

from attnsvm.composition.migrate import migrate_sweep
from attnsvm.config.input_checks import read_only_message, read_only_part
from attnsvm.hydra_internals import basic_sweeper
from attnsvm.results.plan import SKIP, record_statuses, refuse_invalid
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


class Leftovers:
    """What a sweep writes before its first job: multirun.yaml, Slurm's .submitit folder, the
    sweep directory and the folders made for it. ``undo`` after a failure removes them (an
    earlier sweep's multirun.yaml restored) when nothing else was written there: a refused
    sweep, an unreachable Slurm controller or Ray cluster leaves the disk as it found it."""

    BEFORE_JOBS = ("multirun.yaml", ".submitit")

    def __init__(self, sweep_dir: Path) -> None:
        self.sweep_dir = sweep_dir.absolute()
        self.made = [d for d in (self.sweep_dir, *self.sweep_dir.parents) if not d.exists()]
        self.entries = set(os.listdir(sweep_dir)) if sweep_dir.is_dir() else set()
        yaml = sweep_dir / "multirun.yaml"
        self.yaml = yaml.read_bytes() if yaml.is_file() else None

    def undo(self) -> None:
        try:
            new = set(os.listdir(self.sweep_dir)) - self.entries
        except OSError:
            return
        if not new <= set(self.BEFORE_JOBS):
            return  # a job ran (or something else wrote here): keep everything
        if ".submitit" in new:
            shutil.rmtree(self.sweep_dir / ".submitit", ignore_errors=True)
        yaml = self.sweep_dir / "multirun.yaml"
        try:
            if self.yaml is None:
                yaml.unlink(missing_ok=True)
            elif yaml.read_bytes() != self.yaml:
                yaml.write_bytes(self.yaml)
            for made in self.made:  # the sweep directory and the folders made for it
                made.rmdir()  # fails, leaving it, once one holds anything else
        except OSError:
            pass
