"""In a local sweep's worker: one job, run as Hydra's ``run_job`` runs it, with less copying.

    setup_worker(hydra_context, singleton_state)   # once per worker (the pool's setup)
    status = run_one(sweep_config, planned)         # each job: its composed config and plan

Hydra's steps in its order: the output directory, ``HydraConfig``, ``hydra.job.chdir``,
``run.log``, the ``.hydra/`` files, ``hydra.job.env_set``, the callbacks; the task is
``attnsvm.run.main_planned``. Hydra copies the config four times and writes ``.hydra/`` through a
pure-Python YAML emitter; here the config is not copied and the files come from libyaml, with
the same text (tests/test_fast_compose.py).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import yaml
from hydra.core.hydra_config import HydraConfig
from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn, JobStatus, configure_log, env_override, setup_globals
from omegaconf import DictConfig, OmegaConf, open_dict, read_write

from attnsvm.hydra_internals import flush_loggers, yaml_str_representer

_WORKER: dict = {}  # the sweep's Hydra context (``setup_worker``)


class _Dumper(getattr(yaml, "CDumper", yaml.Dumper)):
    """OmegaConf's YAML dumper (strings that read as another type are quoted) on libyaml's
    emitter when PyYAML has it: the same text as ``OmegaConf.to_yaml``."""


_Dumper.add_representer(str, yaml_str_representer())


def hydra_files(cfg: DictConfig) -> dict[str, str]:
    """The text of a job's ``.hydra/`` files as Hydra's ``run_job`` writes them (the task
    config, the hydra node, the task overrides), from one conversion of ``cfg``."""
    tree = OmegaConf.to_container(cfg, resolve=False, enum_to_str=True)
    hydra = tree.pop("hydra")
    parts = {"config.yaml": tree, "hydra.yaml": {"hydra": hydra}}
    parts["overrides.yaml"] = hydra["overrides"]["task"]
    dump = {"default_flow_style": False, "allow_unicode": True, "sort_keys": False}
    return {name: yaml.dump(part, Dumper=_Dumper, **dump) for name, part in parts.items()}


def task_config(sweep_config: DictConfig) -> DictConfig:
    return OmegaConf.masked_copy(sweep_config, [k for k in sweep_config if k != "hydra"])


class SweepJobReturn(JobReturn):
    """Hydra's JobReturn whose ``cfg`` (the task config, a copy) is made only when read:
    attnsvm's callback and sweeper never read it."""

    @property
    def cfg(self) -> DictConfig | None:
        return None if self.hydra_cfg is None else task_config(self.hydra_cfg)

    @cfg.setter
    def cfg(self, value) -> None:  # JobReturn's __init__ sets None: made from hydra_cfg
        pass


def setup_worker(hydra_context, singleton_state) -> None:
    """Once per worker: Hydra's global state as the sweep's process has it."""
    setup_globals()
    Singleton.set_state(singleton_state)
    _WORKER["hydra_context"] = hydra_context


def run_one(config: DictConfig, planned: tuple):
    """One job (module doc); returns ``attnsvm.run.main``'s status, or raises its error."""
    from attnsvm.run import main_planned

    hc = config.hydra
    out = os.path.abspath(os.path.join(str(hc.sweep.dir), str(hc.sweep.subdir)))
    with read_write(hc.runtime), open_dict(hc.runtime):
        hc.runtime.output_dir = out
    HydraConfig.instance().set_config(config)  # the public route: a 7 ms copy is below the bar
    Path(out).mkdir(parents=True, exist_ok=True)
    cwd = os.getcwd()
    ret = SweepJobReturn(overrides=list(hc.overrides.task), hydra_cfg=config, working_dir=cwd)
    try:
        if hc.job.chdir:
            os.chdir(out)
            ret.working_dir = out
        configure_log(hc.job_logging, hc.verbose)
        if hc.output_subdir is not None:
            where = Path(out) / str(hc.output_subdir)
            where.mkdir(parents=True, exist_ok=True)
            for name, text in hydra_files(config).items():
                (where / name).write_text(text, encoding="utf-8")
        callbacks = _WORKER["hydra_context"].callbacks
        with env_override(hc.job.env_set):
            callbacks.on_job_start(config=config, task_function=main_planned)
            try:
                ret.return_value, ret.status = main_planned(planned, config), JobStatus.COMPLETED
            except Exception as exc:  # noqa: BLE001  (raised below, after on_job_end)
                ret.return_value, ret.status = exc, JobStatus.FAILED
        ret.task_name = str(hc.job.name)
        flush_loggers()
        callbacks.on_job_end(config=config, job_return=ret)
        return ret.return_value  # a status, or the job's error raised
    finally:
        os.chdir(cwd)
        sys.stdout.flush()  # the job's summary before the sweep's last line
        sys.stderr.flush()
