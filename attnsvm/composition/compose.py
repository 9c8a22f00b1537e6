"""From Hydra to a resolved run: the schemas in Hydra's ConfigStore, unknown keys named with
the accepted ones, and the composed config converted, checked and resolved.

    register_configs()                         # before composing (the CLI and API do it)
    run = to_run_config(composed)              # RunConfig, resolved (composition/resolve.py)
    run = run_config_from_plain(plain)         # the same from the plain dict of a composed config

A sweep converts many configs that differ in a few values: the schema is built once, and a
config whose keys are those of the last one fully converted differs from it only in leaves;
each is checked by its own schema node and the dataclasses on its path are rebuilt (their
``__post_init__`` checks run again), which is what the full merge does, in well under a
millisecond instead of tens. Anything else (other keys, containers, a value that fails) takes
the full merge, whose error is the one reported.
"""

from __future__ import annotations

import copy
import dataclasses
import re

from omegaconf import DictConfig, OmegaConf, ValueNode

from attnsvm.composition.resolve import resolve
from attnsvm.config.checks import ConfigError
from attnsvm.config.plugins import later
from attnsvm.config.schema import (
    DatasetBase,
    HeadConfig,
    MetricsConfig,
    OptimizerConfig,
    ParameterizationConfig,
    RunBase,
    SolverConfig,
)
from attnsvm.experiments import run_config_class
from attnsvm.hydra_internals import child, raw_value, set_raw_value

CORE_GROUPS = {  # the dataset group as the core has it; Hydra gets every data set's keys too
    "dataset": DatasetBase,
    "parameterization": ParameterizationConfig,
    "optimizer": OptimizerConfig,
    "solver": SolverConfig,
    "head": HeadConfig,
    "metrics": MetricsConfig,
}


def to_run_config(cfg: DictConfig) -> RunBase:
    """Convert a composed (Hydra) config into a resolved RunConfig; Hydra's own keys dropped."""
    return run_config_from_plain(OmegaConf.to_container(cfg, resolve=True))


# per schema class: the schema node, and the last fully converted config (flat plain values,
# its merged node, its RunConfig before resolution)
_SCHEMAS: dict[type, DictConfig] = {}
_LAST: dict[type, tuple[dict, DictConfig, RunBase]] = {}
STATS = {"full": 0, "fast": 0}  # conversions by route (tests count them)


def _flat(d: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        out.update(_flat(v, key + ".") if isinstance(v, dict) and v else {key: v})
    return out


def _full(plain: dict) -> RunBase:
    cls = run_config_class()
    if cls not in _SCHEMAS:
        _SCHEMAS[cls] = OmegaConf.structured(cls)
    merged = OmegaConf.merge(_SCHEMAS[cls], plain)
    run = OmegaConf.to_object(merged)
    STATS["full"] += 1
    _LAST[cls] = (_flat(plain), merged, copy.deepcopy(run))
    return run


def _changed_leaf(run, merged: DictConfig, key: str, value):
    """``run`` with leaf ``key`` set to ``value`` as the schema node converts it, every
    dataclass on the path rebuilt; None where that is not a plain leaf of dataclasses."""
    *path, last = key.split(".")
    node, objs = merged, [run]
    for part in path:
        node = child(node, part)
        objs.append(getattr(objs[-1], part))
    leaf = child(node, last)
    if not isinstance(leaf, ValueNode) or isinstance(value, (dict, list)):
        return None
    if not all(dataclasses.is_dataclass(o) for o in objs):
        return None
    leaf = copy.deepcopy(leaf)  # keeps its parent by reference, copies its type and flags
    set_raw_value(leaf, value)
    new = raw_value(leaf)
    for obj, name in zip(reversed(objs), reversed([*path, last]), strict=True):
        new = dataclasses.replace(obj, **{name: new})
    return new


def _fast(plain: dict) -> RunBase | None:
    last = _LAST.get(run_config_class())
    if last is None:
        return None
    flat0, merged, run0 = last
    flat = _flat(plain)
    if flat.keys() != flat0.keys():
        return None
    run = copy.deepcopy(run0)
    for key, value in flat.items():
        old = flat0[key]
        if type(value) is type(old) and value == old:
            continue
        try:
            run = _changed_leaf(run, merged, key, value)
        except Exception:  # the full merge reports it
            return None
        if run is None:
            return None
    STATS["fast"] += 1
    return run


def run_config_from_plain(plain: dict) -> RunBase:
    """The resolved RunConfig of a composed config's plain dict (``OmegaConf.to_container(cfg,
    resolve=True)``; its ``hydra`` and ``sweep`` keys are dropped): the module doc's fast route
    where it applies, else the full merge."""
    plain = {k: v for k, v in plain.items() if k not in ("hydra", "sweep")}
    run = _fast(plain)
    return resolve(run if run is not None else _full(plain))


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


def register_configs() -> None:
    """Register the schemas in Hydra's ConfigStore; YAML options in conf/ extend them."""
    from hydra.core.config_store import ConfigStore

    from attnsvm.data import sets

    resolvers = {**sets.omegaconf_resolvers(), "attnsvm_help": "attnsvm.cli_help:header"}
    for name, path in resolvers.items():
        # imported when a sweep file first uses it
        OmegaConf.register_new_resolver(name, later(path), replace=True)
    cs = ConfigStore.instance()
    cs.store(name="base_config", node=run_config_class())
    nodes = {**CORE_GROUPS, "dataset": sets.dataset_class()}
    for group, node in nodes.items():  # outside the groups: never an option to choose
        cs.store(name=f"base_{group}", node=node)  # conf/<group>/*.yaml: /base_<group>@_here_
