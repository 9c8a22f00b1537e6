"""Hydra's composition for ``attnsvm.compose``, once per set of structural overrides.

Hydra composes the config anew on every call (its defaults tree, every YAML file read again),
a quarter of a second. Calls that differ only in values (``dataset.d=4``, then ``dataset.d=8``)
share that work: the config of their *structural* overrides (a group's option, ``+``/``~``/
``++``, ``hydra.*``) is composed once, and each call's *value* overrides (``key=value`` of a
key that is not a group) are set on a copy with Hydra's own override code, as Hydra sets them
after its defaults. A call whose value keys overlap another override's key, and any error, take
Hydra's full composition, whose config or error is the one returned.

The memo lives for the process and is dropped when a file of the config package (its name,
size or modification time) or a node of Hydra's ConfigStore changes: a notebook that edits a
YAML file between two calls composes the new file.

    with initialize_config_module(config_module=CONF_MODULE, version_base="1.3"):
        cfg = compose_config(overrides)   # hydra.compose(config_name="config", overrides=...)
"""

from __future__ import annotations

import pickle
from importlib import resources

from hydra import compose
from hydra.core.config_store import ConfigStore
from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Override, OverrideType
from omegaconf import DictConfig

from attnsvm.config.schema import CONF_MODULE
from attnsvm.hydra_internals import apply_overrides

_BASES: dict[tuple[str, ...], DictConfig] = {}  # structural overrides -> Hydra's config
_GROUPS: dict[str, list[str]] = {}  # a group's parent -> the groups in it
_STAMP: list = [None]  # what the memo was composed from (``_stamp``)
STATS = {"hydra": 0, "memo": 0}  # compositions by route (tests count them)


def _store_ids(repo: dict, prefix: str = "") -> list[tuple[str, int]]:
    out = []
    for name, node in repo.items():
        if isinstance(node, dict):
            out += _store_ids(node, f"{prefix}{name}/")
        else:
            out.append((prefix + name, id(node.node)))
    return out


def _stamp() -> tuple:
    """The config package's files (name, size, mtime) and the ConfigStore's nodes (identity)."""
    conf = resources.files(CONF_MODULE)
    paths = conf.rglob("*.yaml") if hasattr(conf, "rglob") else ()  # a zip: never edited
    files = sorted((str(p), st.st_size, st.st_mtime_ns) for p in paths if (st := p.stat()))
    return tuple(files), tuple(sorted(_store_ids(ConfigStore.instance().repo)))


def is_group(key: str) -> bool:
    """Does ``key`` (``dataset``, ``sweeps/rankdyn_shape``, ``optimizer.kwargs``) name a
    config group of the search path Hydra was initialised with?"""
    parent, _, name = key.replace(".", "/").rpartition("/")
    if parent not in _GROUPS:  # Hydra searches its whole search path for it
        _GROUPS[parent] = GlobalHydra.instance().config_loader().list_groups(parent)
    return name in _GROUPS[parent]


def split(parsed: list[Override], is_group=is_group) -> tuple[tuple[str, ...], list[Override]]:
    """(the structural overrides' lines, the value overrides): a value is a plain ``key=value``
    of a key that is not a group (``is_group``), which Hydra sets after its defaults. Every
    override is structural when a value's key overlaps another override's key (their order
    then matters). The local sweep's composer splits its jobs with it too."""

    def is_value(o: Override) -> bool:
        if o.type != OverrideType.CHANGE or o.package is not None or o.is_sweep_override():
            return False
        if o.is_hydra_override() or o.key_or_group.split(".")[0] in ("hydra", "sweeps"):
            return False
        return not is_group(o.key_or_group)

    values = [o for o in parsed if is_value(o)]
    keys = [o.key_or_group for o in parsed]
    for k in (v.key_or_group for v in values):
        if sum(x == k or x.startswith(k + ".") or k.startswith(x + ".") for x in keys) > 1:
            values = []
            break
    return tuple(o.input_line for o in parsed if not any(o is v for v in values)), values


def compose_config(overrides: list[str]) -> DictConfig:
    """``hydra.compose(config_name="config", overrides=overrides)``, the structure memoised."""
    try:
        stamp = _stamp()
        if stamp != _STAMP[0]:
            _BASES.clear()
            _GROUPS.clear()
            _STAMP[0] = stamp
        structural, values = split(OverridesParser.create().parse_overrides(overrides))
        if structural not in _BASES:
            _BASES[structural] = compose(config_name="config", overrides=list(structural))
            STATS["hydra"] += 1
        cfg = pickle.loads(pickle.dumps(_BASES[structural]))  # a deep copy, faster
        apply_overrides(values, cfg)
    except Exception:  # noqa: BLE001  (Hydra's full composition raises the error to report)
        STATS["hydra"] += 1
        return compose(config_name="config", overrides=list(overrides))
    STATS["memo"] += 1
    return cfg
