"""A sweep's job configs as Hydra's ``load_sweep_config`` makes them, in milliseconds: Hydra
composes once per distinct set of *structural* overrides (config groups, ``+``/``~``,
``hydra.*``), and each job's *value* overrides (``key=value`` of a key the composition has) are
applied to a copy of it with Hydra's own code (through attnsvm/hydra_internals.py).

    composer = composer_for(loader, master_config)
    planned = composer.plan(job_overrides, first_num, sweep_dir)   # every job, not composed
    cfg = composer.compose(overrides, num)       # a job's full config (hydra node included)
    composer.check(overrides)                    # Hydra's own error for an override that fails

tests/test_fast_compose.py checks both routes against ``load_sweep_config``.
"""

from __future__ import annotations

import copy
import pickle
from pathlib import Path

from hydra.core.hydra_config import HydraConfig
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Override
from hydra.core.utils import filter_overrides
from omegaconf import DictConfig, OmegaConf, ValueNode, open_dict

from attnsvm.composition.compose import run_config_from_plain
from attnsvm.composition.compose_memo import split
from attnsvm.composition.identity import config_hash
from attnsvm.config.checks import ConfigError
from attnsvm.hydra_internals import (
    apply_overrides,
    child,
    override_dirname,
    raw_value,
    set_raw_value,
)
from attnsvm.results.plan import INVALID, PlannedJob, plan_job
from attnsvm.results.store import finished_index

JOB_NUM = "${hydra.job.num}"  # the default subdir: the job directory is the job number


def task_config(sweep_config: DictConfig) -> DictConfig:
    return OmegaConf.masked_copy(sweep_config, [k for k in sweep_config if k != "hydra"])


class SweepComposer:
    def __init__(self, loader, master: DictConfig) -> None:
        self.loader, self.master = loader, master
        self.parser = OverridesParser.create()
        self.bases: dict[tuple[str, ...], tuple[DictConfig, dict | None]] = {}
        self.splits: dict[tuple[str, ...], tuple] = {}  # split() by the job's overrides
        self.compositions = 0  # Hydra compositions (tests count them)

    def _is_group(self, key: str) -> bool:
        repo = self.loader.repository
        return repo.group_exists(key) or repo.group_exists(key.replace(".", "/"))

    def split(self, overrides: list[str]) -> tuple[tuple[str, ...], list[Override], list]:
        """(the structural overrides, the value overrides, every override parsed), once per
        job (composition/compose_memo.py's ``split``)."""
        key = tuple(overrides)
        if key not in self.splits:
            parsed = self.parser.parse_overrides(list(overrides))
            self.splits[key] = (*split(parsed, self._is_group), parsed)
        return self.splits[key]

    def _base(self, structural: tuple[str, ...]) -> tuple[DictConfig, dict | None]:
        """Hydra's composition with the structural overrides alone, and its task config as a
        plain dict (None when the task config has an interpolation)."""
        if structural not in self.bases:
            cfg = self.loader.load_sweep_config(self.master, list(structural))
            self.compositions += 1
            task = task_config(cfg)
            plain = OmegaConf.to_container(task, resolve=True)
            same = plain == OmegaConf.to_container(task, resolve=False)
            self.bases[structural] = (cfg, plain if same else None)
        return self.bases[structural]

    def compose(self, overrides: list[str], num: int) -> DictConfig:
        """The job's config, as ``load_sweep_config`` and the launcher's job number make it."""
        structural, values, parsed = self.split(overrides)
        base, _ = self._base(structural)
        cfg = pickle.loads(pickle.dumps(base))  # a deep copy, faster than copy.deepcopy
        apply_overrides(values, cfg)
        app = [o for o in parsed if not o.is_hydra_override()]
        names = cfg.hydra.job.config.override_dirname
        with open_dict(cfg):
            cfg.hydra.overrides.task = [o.input_line for o in app]
            cfg.hydra.job.override_dirname = override_dirname(
                app, names.kv_sep, names.item_sep, names.exclude_keys
            )
            cfg.hydra.job.id = f"{cfg.hydra.job.name}_{num}"
            cfg.hydra.job.num = num
        OmegaConf.copy_cache(from_config=self.master, to_config=cfg)
        return cfg

    def plan(self, job_overrides, first: int, sweep_dir: Path) -> list[PlannedJob]:
        """Each job planned as attnsvm.run.execute would run it (results.plan.plan_job), the
        sweep's finished index read once; a config that execute would refuse is ``INVALID``."""
        index, planned = finished_index(sweep_dir), []
        for num, overrides in enumerate(job_overrides, start=first):
            plain, out = self.plan_inputs(list(overrides), num, sweep_dir)
            label = " ".join(filter_overrides(list(overrides)))
            try:
                run = run_config_from_plain(plain)
                chash = config_hash(run)  # as execute: resolving engine=auto may refuse the build
            except ConfigError as exc:
                planned.append(PlannedJob(num, INVALID, "", str(out), str(exc), label))
                continue
            planned.append(plan_job(run, chash, num, out, sweep_dir, label, index))
        HydraConfig.instance().set_config(self.master)  # plan_inputs may have set a job's
        return planned

    def plan_inputs(self, overrides: list[str], num: int, sweep_dir: Path):
        """(the job's task config as a plain dict, its job directory), without composing the
        job where that is exact (``_with_values``)."""
        structural, values, _ = self.split(overrides)
        base, plain = self._base(structural)
        subdir = child(base.hydra.sweep, "subdir")
        if plain is not None and subdir is not None and raw_value(subdir) == JOB_NUM:
            job = _with_values(plain, values)
            if job is not None:
                return job, Path(sweep_dir) / str(num)
        cfg = self.compose(overrides, num)
        HydraConfig.instance().set_config(cfg)  # for ${hydra:...} in the task config
        task = task_config(cfg)
        out = Path(sweep_dir) / str(OmegaConf.select(cfg, "hydra.sweep.subdir"))
        return OmegaConf.to_container(task, resolve=True), out

    def check(self, overrides: list[str]) -> None:
        """Hydra's composition error for these overrides, if any: each value is set on a copy
        of its node of the base, as Hydra sets it; anything doubtful is composed in full."""
        structural, values, _ = self.split(overrides)
        base, _ = self._base(structural)
        for o in values:
            node = _node(base, o.key_or_group)
            try:
                ok = isinstance(node, ValueNode) and not isinstance(o.value(), (dict, list))
                if ok:
                    set_raw_value(copy.deepcopy(node), o.value())
            except Exception:
                ok = False
            if not ok:
                self.loader.load_sweep_config(self.master, list(overrides))
                self.compositions += 1
                return


def _node(cfg: DictConfig, key: str):
    node = cfg
    for part in key.split("."):
        if not isinstance(node, DictConfig) or part not in node:
            return None
        node = child(node, part)
    return node


def _with_values(plain: dict, values: list[Override]) -> dict | None:
    """A copy of ``plain`` with each value override's leaf set; None where a key is not a
    leaf already there (Hydra's composition decides those)."""
    out = copy.deepcopy(plain)
    for o in values:
        *path, last = o.key_or_group.split(".")
        where = out
        for part in path:
            where = where.get(part) if isinstance(where, dict) else None
        value = o.value()
        if not isinstance(where, dict) or last not in where:
            return None
        if isinstance(where[last], (dict, list)) or isinstance(value, (dict, list)):
            return None
        if isinstance(value, str) and "${" in value:  # an interpolation: Hydra resolves it
            return None
        where[last] = value
    return out


_COMPOSER: list[SweepComposer] = []  # the sweep's (one per process)


def composer_for(loader, master: DictConfig) -> SweepComposer:
    """The sweep's composer, shared by the sweeper (its check) and the local launcher."""
    if not _COMPOSER or _COMPOSER[0].master is not master:
        _COMPOSER[:] = [SweepComposer(loader, master)]
    return _COMPOSER[0]
