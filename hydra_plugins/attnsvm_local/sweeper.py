"""``hydra/sweeper=attnsvm`` (conf/config.yaml's default): Hydra's basic sweeper, whose check
that every job of a batch composes costs milliseconds per job instead of a Hydra composition
each (which had been half a 40-job sweep's planning).

The check is the same: Hydra composes every distinct set of structural overrides (config
groups, ``+key``, ``~key``, ``hydra.*``), and each value override is set on a copy of its node
as Hydra sets it; any override that fails, or that is not a plain value, is composed in full,
so the error is Hydra's own (compose.SweepComposer.check). The grid, its batches and
``hydra.sweeper.params`` are the basic sweeper's; the local launcher reuses the compositions.

A sweep directory that cannot be written (a finished sweep made read-only, shared or
archived) is planned before anything is written, with any launcher: when every job finished
before, the sweep reports them skipped and exits 0 having written nothing (no multirun.yaml,
no launcher started); when some job is left to run, one ``attnsvm:`` line names the directory
and how many are left, and nothing starts. A launcher that writes nothing (``WRITES_NOTHING``:
the dry run) is launched as usual, without the multirun.yaml.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from hydra.core.config_store import ConfigStore
from hydra.core.hydra_config import HydraConfig
from hydra.core.override_parser.overrides_parser import OverridesParser

from attnsvm.composition.migrate import migrate_sweep
from attnsvm.config.input_checks import read_only_message, read_only_part
from attnsvm.hydra_internals import basic_sweeper
from attnsvm.results.plan import INVALID, SKIP, plan_plain, record_statuses
from attnsvm.results.store import finished_index
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
        sweep_dir = Path(str(self.config.hydra.sweep.dir))
        blocked = read_only_part(sweep_dir)
        if blocked is None:
            if not getattr(self.launcher, "WRITES_NOTHING", False):
                migrate_sweep(sweep_dir)  # an old sweep's jobs carried to their job configs
            return super().sweep(arguments)
        if getattr(self.launcher, "WRITES_NOTHING", False):  # the dry run: it lists the jobs
            return self._launch_unsaved(arguments)
        self._finished_read_only(arguments, sweep_dir, blocked)
        return []

    def _batches(self, arguments: list[str]) -> list[list[list[str]]]:
        """The grid's jobs in batches, as the basic sweeper makes them."""
        params = [*self._parse_config(), *arguments]
        parser = OverridesParser.create(config_loader=self.hydra_context.config_loader)
        return self.split_arguments(parser.parse_overrides(params), self.max_batch_size)

    def _launch_unsaved(self, arguments: list[str]) -> list:
        """The basic sweeper's loop without its multirun.yaml."""
        returns, first = [], 0
        for batch in self._batches(arguments):
            self.validate_batch_is_legal(batch)
            returns.append(self.launcher.launch(batch, initial_job_idx=first))
            first += len(batch)
        return returns

    def _finished_read_only(self, arguments: list[str], sweep_dir: Path, blocked: Path) -> None:
        """A read-only sweep (module doc): every job planned as the local launcher plans it;
        all finished: recorded skipped for the summary; else SystemExit with one line."""
        batches = self._batches(arguments)
        composer = composer_for(self.hydra_context.config_loader, self.config)
        index, planned = finished_index(sweep_dir), []
        for batch in batches:
            self.validate_batch_is_legal(batch)
            for overrides in batch:
                num = len(planned)
                plain, out = composer.plan_inputs(list(overrides), num, sweep_dir)
                label = " ".join(overrides)
                planned.append(plan_plain(plain, num, out, sweep_dir, label, index))
        HydraConfig.instance().set_config(self.config)
        invalid = [j for j in planned if j.action == INVALID]
        if invalid:
            where = "; ".join(f"job #{j.num} [{j.overrides}]: {j.note}" for j in invalid)
            raise SystemExit(f"attnsvm: invalid config: {where} (no job was started)")
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
    """What a sweep writes before its first job: the basic sweeper's multirun.yaml, the Slurm
    launcher's .submitit folder, the sweep directory and the folders made for it. ``undo``
    after a failure removes them (restoring an earlier sweep's multirun.yaml) when nothing else
    was written: a refused sweep point, an unreachable Slurm controller or Ray cluster leaves
    the disk as it found it. Once a job directory exists the files describe it and stay."""

    BEFORE_JOBS = ("multirun.yaml", ".submitit")

    def __init__(self, sweep_dir: Path) -> None:
        self.sweep_dir = sweep_dir.absolute()
        self.existed = sweep_dir.is_dir()
        self.made = [d for d in (self.sweep_dir, *self.sweep_dir.parents) if not d.exists()]
        self.entries = set(os.listdir(sweep_dir)) if self.existed else set()
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
            if self.yaml is not None:
                if yaml.read_bytes() != self.yaml:
                    yaml.write_bytes(self.yaml)
            else:
                yaml.unlink(missing_ok=True)
            for made in self.made:  # the sweep directory and the folders made for it
                made.rmdir()  # fails, leaving it, once one holds anything else
        except OSError:
            pass
