"""The checks every config group uses: one error type and one message form (key=value, and
what is accepted). A leaf: imports nothing of attnsvm. Each key's accepted values are declared
as data (attnsvm/config/constraints.py), which checks them through ``require``.

    require(lr > 0, "optimizer.lr", "floats > 0", lr)  # ConfigError: optimizer.lr=0 is invalid
"""

from __future__ import annotations

import functools
import typing
from collections.abc import Mapping
from dataclasses import fields, is_dataclass
from enum import Enum
from types import MappingProxyType

SEED_LIMIT = 2**32  # seed + seeds <= this: every seeded stream (torch, numpy) takes the seed


class ConfigError(ValueError):
    """A config value out of its accepted range; the message names the key."""


def plain_name(value) -> str:
    """An enum member's value, or the string itself (a plug-in's path)."""
    return getattr(value, "value", value)


def require(ok: bool, key: str, accepted: str, value: object) -> None:
    """The one form of a range error: key=value, and what is accepted."""
    if not ok:
        raise ConfigError(f"{key}={value!r} is invalid: accepted values are {accepted}")


def shown(text: str, width: int = 80) -> str:
    """``text`` shortened for a one-line message (a 5000-character path is not read)."""
    if len(text) <= width:
        return text
    return f"{text[: width // 2]}...{text[-width // 4 :]} ({len(text)} characters)"


def check_seed_range(seed: int, seeds: int) -> None:
    """Seeds seed .. seed + seeds - 1 must fit the random streams that are seeded with them."""
    if seed + seeds > SEED_LIMIT:
        raise ConfigError(
            f"seed={shown(str(seed), 40)} with seeds={shown(str(seeds), 40)} is invalid: "
            f"accepted values are seed + seeds <= 2**32 = {SEED_LIMIT}"
        )


@functools.cache
def type_hints(cls: type) -> Mapping:
    """``typing.get_type_hints`` of a config class, read once (a read-only view): it evaluates
    every string annotation (a compile each), and configs are made per sweep point and per seed
    (a job's solver settings, made per seed, cost 20% of a 256-seed job's metrics before)."""
    return MappingProxyType(typing.get_type_hints(cls))


def coerce_enums(obj, prefix: str) -> None:
    """Accept an enum field's value by name, as the CLI does (``ParameterizationConfig(
    kind="kq")`` from Python); an unknown name is a ConfigError listing the accepted values."""
    hints = type_hints(type(obj))
    for f in fields(obj):
        kind = hints[f.name]
        value = getattr(obj, f.name)
        if isinstance(kind, type) and issubclass(kind, Enum) and not isinstance(value, kind):
            accepted = [e.value for e in kind]
            key = f"{prefix}.{f.name}" if prefix else f.name
            require(value in accepted, key, ", ".join(accepted), value)
            setattr(obj, f.name, kind(value))


def builtin_or_path(value, builtin: type[Enum]):
    """A built-in's name becomes its enum member; anything else stays a string, the import
    path of a plug-in (resolution imports and checks it: attnsvm/composition/resolve.py)."""
    value = getattr(value, "value", value)
    return builtin(value) if value in {e.value for e in builtin} else value


def fill_shape(ds, shape: dict, source: str) -> dict:
    """A data set's n, T, d taken from the data where null, else checked against it:
    the fields to fill (``source`` names where the data's shape comes from)."""
    out = {}
    for key, value in shape.items():
        mine = getattr(ds, key)
        if mine is not None and mine != value:
            raise ConfigError(
                f"dataset.{key}={mine} but {source} has {key}={value}: set dataset.{key}="
                f"{value} or null"
            )
        out[key] = value
    return out


def plain(obj):
    """Dataclasses and enums as JSON-ready dicts and strings."""
    if is_dataclass(obj):
        return {f.name: plain(getattr(obj, f.name)) for f in fields(obj)}
    if isinstance(obj, Enum):
        return obj.value
    if isinstance(obj, dict):
        return {k: plain(v) for k, v in obj.items()}
    return obj


def flatten(d: dict, prefix: str = "") -> dict:
    """{"a": {"b": 1}} -> {"a.b": 1}."""
    out = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        out.update(flatten(v, key + ".") if isinstance(v, dict) else {key: v})
    return out
