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
from attnsvm.composition.rules import unread_key
from attnsvm.config.checks import ConfigError, flatten, plain
from attnsvm.config.plugins import later
from attnsvm.config.schema import (
    CONF_MODULE,
    HeadConfig,
    MetricsConfig,
    OptimizerConfig,
    ParameterizationConfig,
    RunBase,
    SolverConfig,
)
from attnsvm.experiments import builtin_names, data_set_resolvers, default_name, entry, has_key
from attnsvm.hydra_internals import child, raw_value, set_raw_value

SHARED_GROUPS = {  # the groups several experiments read, each with its options in conf/<group>/
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


def _experiment(plain: dict):
    """The experiment a composed config's plain dict names ("" or none: the default)."""
    return entry(plain.get("experiment") or default_name())


def check_keys(plain: dict, module) -> None:
    """Refuse a key outside the experiment's job config, naming what it reads instead."""
    for key, value in flatten(plain).items():
        if not has_key(module, key):
            raise unread_key(module, key, value)


def _full(plain: dict) -> RunBase:
    module = _experiment(plain)
    check_keys(plain, module)
    cls = module.job_config
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
    last = _LAST.get(_experiment(plain).job_config)
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


_OVERRIDE = re.compile(r"^(?P<key>[A-Za-z_][\w.]*)=(?P<value>.*)$")  # not +key, ~key, group/x
_NOT_SCHEMA = ("hydra", "sweep", "sweeps")  # Hydra's own keys and the sweep definitions
_EXPERIMENT = re.compile(r"^\s*-\s*override\s+/experiment\s*:\s*(?P<name>\S+)", re.M)


def _sweep_experiments(overrides: list[str]) -> list[str]:
    """The experiments a ``+sweeps=NAME`` file runs: the one it chooses (``override
    /experiment: X``) and those its grid sweeps (``hydra.sweeper.params.experiment``)."""
    from importlib.resources import files

    found: list[str] = []
    for arg in overrides:
        if arg.startswith("+sweeps="):
            path = files(CONF_MODULE) / "sweeps" / f"{arg.split('=', 1)[1]}.yaml"
            try:
                text = path.read_text()
            except (FileNotFoundError, NotADirectoryError):
                continue
            chosen = _EXPERIMENT.search(text)
            found += [chosen["name"]] if chosen else []
            grid = OmegaConf.create(text).get("hydra", {}).get("sweeper", {}).get("params", {})
            swept = (grid or {}).get("experiment")
            found += [v.strip() for v in str(swept).split(",")] if swept else []
    return found


def _named_experiments(overrides: list[str]) -> list[str]:
    """The experiments a command line runs: its ``experiment=`` values (a sweep's several),
    else its sweep file's, else the default."""
    for arg in overrides:
        if arg.startswith("experiment="):
            value = arg.split("=", 1)[1]
            return [v.strip() for v in value.split(",")] if "," in value else [value]
    return _sweep_experiments(overrides) or [default_name()]


def _unknown(module, key: str, value: str) -> ConfigError | None:
    """The error for ``key`` in the job config of ``module``: unread (its group or key is not
    there) or unknown (a misspelt key of a group it has); None where it is a key of it."""
    from omegaconf import OmegaConf

    if has_key(module, key):
        return None
    schema = OmegaConf.structured(module.job_config)
    top = key.split(".")[0]
    if top not in schema:
        return unread_key(module, key, value)
    node, path = schema, []
    for part in key.split("."):
        if not isinstance(node, DictConfig) or part not in node:
            break
        node, path = node[part], [*path, part]
    if not isinstance(node, DictConfig):
        return unread_key(module, key, value)  # an option only some experiments read
    return ConfigError(
        f"unknown key {key!r}: accepted keys of {'.'.join(path)} are {', '.join(node)}"
    )


def check_override_keys(overrides: list[str]) -> None:
    """Fail on an overridden key outside the job config of the experiment it runs, naming what
    that experiment reads instead, or a misspelt key of one of its groups, listing the accepted
    ones. An ``experiment=`` naming your own module registers it as an option of the group.

    Hydra rejects such a key too, but without saying which keys exist. Appending (``+key``),
    deleting (``~key``) and Hydra's own options are left to Hydra.

        check_override_keys(["dataset.dd=3"])  # ConfigError: ... accepted keys of dataset: ...
    """
    modules = [entry(name) for name in _named_experiments(overrides)]
    for module in modules:
        if module.name not in builtin_names():
            _PLUGINS[module.name] = module
    for arg in overrides:
        match = _OVERRIDE.match(arg)
        if match is None or match["key"].split(".")[0] in (*_NOT_SCHEMA, "experiment"):
            continue
        for module in modules:
            error = _unknown(module, match["key"], match["value"])
            if error is not None:
                raise error


_PLUGINS: dict = {}  # your own experiments named on a command line: name -> entry


def _has_yaml(name: str) -> bool:
    from importlib.resources import files

    return (files(CONF_MODULE) / "experiment" / f"{name}.yaml").is_file()


def register_configs() -> None:
    """Register the schemas in Hydra's ConfigStore; YAML options in conf/ extend them: each
    experiment's job config as ``base_experiment_<name>`` (conf/experiment/<name>.yaml starts
    from it), the shared groups' as ``base_<group>``, and an experiment without a YAML file
    (your own module) as its option ``experiment=<name>``: its job config at its defaults."""
    from hydra.core.config_store import ConfigStore

    from attnsvm.data import sets

    resolvers = {**sets.omegaconf_resolvers(), **data_set_resolvers(),
                 "attnsvm_help": "attnsvm.cli_help:header"}  # fmt: skip
    cs = ConfigStore.instance()
    modules = {**{n: entry(n) for n in builtin_names()}, **_PLUGINS}
    nodes = {**SHARED_GROUPS, "dataset": sets.dataset_class()}
    wanted = (resolvers, {n: m.job_config for n, m in modules.items()}, nodes)
    if _REGISTERED.get("what") == wanted and _still_stored(cs, resolvers):
        return  # storing the same schemas again would be a third of an in-process compose
    for name, path in resolvers.items():
        # imported when a sweep file first uses it (an experiment's: its own lazy function)
        function = later(path) if isinstance(path, str) else path
        OmegaConf.register_new_resolver(name, function, replace=True)
    stored = {}  # (group, file) -> the node Hydra now holds there

    def store(name: str, node, **how) -> None:  # how: Hydra's group and package
        cs.store(name=name, node=node, **how)
        where = (how.get("group", ""), f"{name}.yaml")
        stored[where] = _node_at(cs, *where)

    for name, module in modules.items():
        store(f"base_experiment_{name}", module.job_config)
        if not _has_yaml(name):  # its schema, then its defaults as plain values (enum names)
            node = {"defaults": [f"/base_experiment_{name}@_here_", "_self_"]}
            node.update(plain(module.job_config()))
            store(name, node, group="experiment", package="_global_")
    for group, node in nodes.items():  # outside the groups: never an option to choose
        store(f"base_{group}", node)  # conf/<group>/*.yaml: /base_<group>@_here_
    _REGISTERED.update(what=wanted, nodes=stored)


_REGISTERED: dict = {}  # what register_configs last stored: its inputs and Hydra's nodes


def _node_at(cs, group: str, name: str):
    return (cs.repo.get(group, {}) if group else cs.repo).get(name)


def _still_stored(cs, resolvers: dict) -> bool:
    """Whether Hydra still holds the very nodes stored last (a test or a user may have
    cleared or replaced one) and every resolver."""
    return all(_node_at(cs, *p) is n for p, n in _REGISTERED["nodes"].items()) and all(
        OmegaConf.has_resolver(r) for r in resolvers
    )
