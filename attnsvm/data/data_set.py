"""``DataSet``: what a data set is, declared once per entry as ``DATA_SET = DataSet(...)``
(attnsvm/data/sets/__init__.py: the registry reads nothing else).

Its fields are checked when it is built: a misspelt or missing field fails there, with its name
(the registry re-raises it as a ConfigError naming the module). A function whose code is heavy
is named as ``"module:function"`` (imported when it draws).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True, kw_only=True)
class DataSet:
    """One data set: a module of attnsvm/data/sets/ or of your installed package."""

    name: str = ""  # dataset=NAME (default: its module's name, or its entry point's)
    Config: type | None = None  # a dataclass of the keys only it reads (flat in ``dataset``;
    #   at their defaults they enter no job hash); Config.CONSTRAINTS / Config.RULES: what each
    #   accepts, checked when it is chosen (attnsvm/config/constraints.py)
    order: float = math.inf  # where its keys sit among the data sets' keys (the runs table's
    #   columns): the order they joined, so tables keep their columns; a new one: last
    default: bool = False  # exactly one: the data set of ``DatasetConfig()``
    shape_from_data: bool = False  # n, T, d may be null (taken at resolution)
    check: Callable | None = None  # (ds) -> None: checks beyond Config's, at construction
    resolve: str | None = None  # "module:function", (ds) -> fields filled at resolution
    check_run: Callable | None = None  # (run) -> None: rules across groups
    instances: str | None = None  # "module:function", (ds, seeds) -> (X, Y, Z, v, *extra)
    extra: tuple[str, ...] = ("V",)  # what follows v (default: the ReLU head's V)
    accepted_seeds: str | None = None  # "module:function", (ds, first, count) -> its seeds
    values: bool | str = False  # gives the value matrix V (head=relu), or a "module:function"
    #   (run) -> bool deciding per run
    inits: bool = False  # gives published starts (init=published)
    planar_paths: bool = False  # its draws are pictures in the plane (d = 2): a job that trains
    #   on it also writes each seed's GD path there and its tokens (tables paths and tokens)
    resolvers: Mapping[str, str] = field(default_factory=dict)  # ${name:...} in sweep files:
    #   name -> "module:function"
    preflight: str | None = None  # "module:function", (run) -> None: what it draws checked
    #   before a job directory is written
    doc: str = ""  # what it is (default: its module's docstring)

    def __post_init__(self) -> None:
        _expect(self, "name", isinstance(self.name, str), "a str")
        _expect(self, "Config", _maybe(self.Config, _is_dataclass_type), "a dataclass or None")
        _expect(self, "order", isinstance(self.order, int | float), "a number")
        for name in ("default", "shape_from_data", "inits", "planar_paths"):
            _expect(self, name, isinstance(getattr(self, name), bool), "a bool")
        for name in ("check", "check_run"):
            _expect(self, name, _maybe(getattr(self, name), callable), "a function or None")
        for name in ("resolve", "instances", "accepted_seeds", "preflight"):
            _expect(self, name, _maybe(getattr(self, name), _is_path), "a 'module:function'")
        values = isinstance(self.values, bool) or _is_path(self.values)
        _expect(self, "values", values, "a bool or a 'module:function'")
        extra = isinstance(self.extra, tuple) and all(isinstance(e, str) for e in self.extra)
        _expect(self, "extra", extra, "a tuple of str")
        resolvers = isinstance(self.resolvers, Mapping) and all(
            isinstance(k, str) and _is_path(v) for k, v in self.resolvers.items()
        )
        _expect(self, "resolvers", resolvers, "a dict of name -> 'module:function'")
        _expect(self, "doc", isinstance(self.doc, str), "a str")


def _is_path(value) -> bool:
    module, colon, name = value.partition(":") if isinstance(value, str) else ("", "", "")
    return bool(module and colon and name.isidentifier())


def _is_dataclass_type(value) -> bool:
    return isinstance(value, type) and dataclasses.is_dataclass(value)


def _maybe(value, test: Callable) -> bool:
    return value is None or test(value)


def _expect(obj, name: str, ok: bool, what: str) -> None:
    if not ok:
        raise TypeError(f"{type(obj).__name__}.{name} must be {what}; got {getattr(obj, name)!r}")
