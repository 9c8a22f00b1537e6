"""Your own components, named in config by their import path: one path syntax,
``"module:function"`` (``"mylab.heads:make"``; a config value may also say ``"mylab.heads.make"``,
the form written before), and one loader for every plug-in point (heads, step rules, SVM norms,
data generators), so a bad name always fails the same way, at composition, naming the key. The
registries' own ``"module:function"`` strings (``later``) and the declared entries
(``load_declared``: ``EXPERIMENT``, ``DATA_SET``) load here too."""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable
from typing import Any

from attnsvm.config.checks import ConfigError

FORMS = "'module:function' (or 'module.function')"  # what a config value may say


def split_path(path: str, key: str) -> tuple[str, str]:
    """``"module:function"`` as (module, function); a config value's dotted
    ``"module.function"`` too. Anything else: a ConfigError naming ``key`` and the forms."""
    text = str(path)
    module, colon, name = text.partition(":")
    if not colon:
        module, _, name = text.rpartition(".")
    if not (module and name.isidentifier()):
        raise ConfigError(f"{key}={path!r} is invalid: accepted values are {FORMS} paths")
    return module, name


def load_object(path: str, key: str) -> Any:
    """The callable that ``path`` (``"module:function"``) names, for config key ``key``."""
    module, name = split_path(path, key)
    try:
        obj = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"{key}={path!r} cannot be imported: {exc}") from None
    if not callable(obj):
        raise ConfigError(f"{key}={path!r} is not a callable {FORMS} path")
    return obj


def later(path: str) -> Callable:
    """``"module:function"`` as a function that imports its module when called, looking the
    function up each time (a patched one is seen): registry entries are read at composition,
    the code they point to imports torch."""
    if ":" not in path:
        raise ValueError(f"{path!r} is not a 'module:function' path")
    module, name = split_path(path, "path")

    def call(*args, **kwargs):
        return getattr(importlib.import_module(module), name)(*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"{path}, imported when called."
    return call


def load_declared(path: str, attr: str, cls: type, key: str, accepted: str) -> tuple[Any, Any]:
    """Module ``path`` and the ``cls`` instance it declares as ``attr`` (``EXPERIMENT =
    Experiment(...)``), checked when first read: a module that cannot be imported, declares
    none, or builds it with a misspelt, missing or mistyped field is refused with a ConfigError
    naming ``key``, the module and the field (``accepted``: the values ``key`` accepts)."""
    form = f"{attr} = {cls.__name__}(...)"
    try:
        module = importlib.import_module(path)
    except ImportError as exc:
        raise ConfigError(
            f"{key}={path!r} is invalid: accepted values are {accepted} ({exc})"
        ) from None
    except TypeError as exc:  # the declaration itself: its fields
        if cls.__name__ not in str(exc):
            raise
        fields = ", ".join(f.name for f in dataclasses.fields(cls))
        raise ConfigError(
            f"{key}={path!r} is invalid: its {form} is refused: {exc} (the fields of "
            f"{cls.__name__}: {fields})"
        ) from None
    declared = vars(module).get(attr)
    if not isinstance(declared, cls):
        got = "has none" if declared is None else f"is a {type(declared).__name__}"
        raise ConfigError(
            f"{key}={path!r} is invalid: accepted values are {accepted}; {module.__name__} "
            f"must declare {form} ({attr} {got})"
        )
    return module, declared
