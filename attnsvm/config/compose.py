"""From Hydra to a resolved run: the schemas in Hydra's ConfigStore, unknown keys named with
the accepted ones, and the composed config converted, checked and resolved.

    register_configs()                         # before composing (the CLI and API do it)
    run = to_run_config(composed)              # RunConfig, resolved (attnsvm/config/resolve.py)
"""

from __future__ import annotations

import importlib
import re

from omegaconf import DictConfig, OmegaConf

from attnsvm.config.checks import ConfigError
from attnsvm.config.resolve import resolve
from attnsvm.config.schema import (
    DatasetBase,
    HeadConfig,
    MetricsConfig,
    OptimizerConfig,
    ParameterizationConfig,
    RunConfig,
    SolverConfig,
)
from attnsvm.experiments import run_config_class

CORE_GROUPS = {  # the dataset group as the core has it; Hydra gets every data set's keys too
    "dataset": DatasetBase,
    "parameterization": ParameterizationConfig,
    "optimizer": OptimizerConfig,
    "solver": SolverConfig,
    "head": HeadConfig,
    "metrics": MetricsConfig,
}


def to_run_config(cfg: DictConfig) -> RunConfig:
    """Convert a composed (Hydra) config into a resolved RunConfig; Hydra's own keys dropped."""
    plain = OmegaConf.to_container(cfg, resolve=True)
    plain.pop("hydra", None)
    plain.pop("sweep", None)
    merged = OmegaConf.merge(OmegaConf.structured(run_config_class()), plain)
    return resolve(OmegaConf.to_object(merged))


_OVERRIDE = re.compile(r"^(?P<key>[A-Za-z_][\w.]*)=")  # key=value; not +key, ~key, group/x
_NOT_SCHEMA = ("hydra", "sweep", "sweeps")  # Hydra's own keys and the sweep definitions


def check_override_keys(overrides: list[str]) -> None:
    """Fail on an overridden key that the schema lacks, listing the keys it accepts.

    Hydra rejects such a key too, but without saying which keys exist. Appending (``+key``),
    deleting (``~key``) and Hydra's own options are left to Hydra.

        check_override_keys(["dataset.dd=3"])  # ConfigError: ... accepted keys of dataset: ...
    """
    schema = OmegaConf.structured(run_config_class())
    for arg in overrides:
        match = _OVERRIDE.match(arg)
        if match is None or match["key"].split(".")[0] in _NOT_SCHEMA:
            continue
        node, path = schema, []
        for part in match["key"].split("."):
            if not isinstance(node, DictConfig):
                break
            if part not in node:
                where = f" of {'.'.join(path)}" if path else ""
                raise ConfigError(
                    f"unknown key {match['key']!r}: accepted keys{where} are {', '.join(node)}"
                )
            node, path = node[part], [*path, part]


def _later(module: str, name: str):
    """A resolver that imports its module when a sweep file first uses it."""

    def call(*args):
        return getattr(importlib.import_module(module), name)(*args)

    return call


def register_configs() -> None:
    """Register the schemas in Hydra's ConfigStore; YAML options in conf/ extend them."""
    from hydra.core.config_store import ConfigStore

    from attnsvm.data import sets

    resolvers = {**sets.omegaconf_resolvers(), "attnsvm_help": "attnsvm.cli_help:header"}
    for name, path in resolvers.items():
        OmegaConf.register_new_resolver(name, _later(*path.split(":")), replace=True)
    cs = ConfigStore.instance()
    cs.store(name="base_config", node=run_config_class())
    nodes = {**CORE_GROUPS, "dataset": sets.dataset_class()}
    for group, node in nodes.items():  # outside the groups: never an option to choose
        cs.store(name=f"base_{group}", node=node)  # conf/<group>/*.yaml: /base_<group>@_here_
