"""Your own components, named in config by their import path ("mylab.heads.make"): one loader
for every plug-in point (heads, data generators), so a bad name always fails the same way, at
composition, naming the key."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from attnsvm.config.checks import ConfigError


def load_object(path: str, key: str) -> Any:
    """The object ``module.attribute`` named by config key ``key``."""
    module, _, name = str(path).rpartition(".")
    try:
        obj = getattr(importlib.import_module(module), name) if module else None
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"{key}={path!r} cannot be imported: {exc}") from None
    if not callable(obj):
        raise ConfigError(f"{key}={path!r} is not a callable 'module.function' path")
    return obj


def later(path: str) -> Callable:
    """``"module:function"`` as a function that imports its module when called, looking the
    function up each time (a patched one is seen): registry entries are read at composition,
    the code they point to imports torch."""
    module, _, name = path.partition(":")

    def call(*args, **kwargs):
        return getattr(importlib.import_module(module), name)(*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"{path}, imported when called."
    return call
