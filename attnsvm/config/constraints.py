"""Each key's accepted values as data: one declaration gives the check, the error message and
the generated docs (as scikit-learn's ``_parameter_constraints``). A leaf: imports nothing of
attnsvm but checks.py.

    @dataclass
    class Config:
        lr: float = 0.1
        CONSTRAINTS: ClassVar = {"lr": Interval(float, 0, None, closed="neither", finite=True)}
        RULES: ClassVar = (Rule("lr", "floats < 1 with rule=gd", lambda c: ...),)

        def __post_init__(self) -> None:
            check_constraints(self, "mine")  # ConfigError: mine.lr=0 is invalid: accepted ...

``CONSTRAINTS`` maps a key to what it accepts alone; ``RULES`` are the few rules across keys
(a key's range that depends on another key), named by the key they refuse; ``READ_ONLY`` the
keys that act only for some values of another (``ReadOnlyWhen``). An enum-typed key
accepts its enum's values without being declared. Every refusal reads
``<group>.<key>=<value> is invalid: accepted values are <describe()>``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import MISSING, dataclass, fields, is_dataclass
from enum import Enum
from functools import cache
from numbers import Real

from attnsvm.config.checks import coerce_enums, plain, plain_name, require, type_hints

_COUNTS = {2: "two", 3: "three", 4: "four"}


def _num(x) -> str:
    return str(x) if isinstance(x, int) else f"{x:g}"


class Constraint:
    """What one key accepts: ``check(value)`` and the text ``describe()``."""

    def check(self, value) -> bool:
        raise NotImplementedError

    def describe(self) -> str:
        raise NotImplementedError

    def markdown(self) -> str:
        """The text for the docs' tables (names of options as code)."""
        return self.describe()


@dataclass(frozen=True)
class Interval(Constraint):
    """Numbers between ``low`` and ``high`` (None: unbounded), ``closed`` at "both", "left",
    "right" or "neither" end; ``finite``: inf and nan refused too; ``noun``: what the numbers
    are called (default: integers or floats, after ``type``); ``note``: why, in parentheses.

        Interval(float, 0, 1, closed="left").describe()   # 'floats in [0, 1)'
    """

    type: type
    low: float | None = None
    high: float | None = None
    closed: str = "left"
    finite: bool = False
    noun: str | None = None
    note: str = ""

    def check(self, value) -> bool:
        if isinstance(value, str) or not isinstance(value, Real):
            return False
        if self.finite and not math.isfinite(value):
            return False
        low_in = self.closed in ("both", "left")
        high_in = self.closed in ("both", "right")
        if self.low is not None and not (value >= self.low if low_in else value > self.low):
            return False
        if self.high is not None and not (value <= self.high if high_in else value < self.high):
            return False
        return True

    def describe(self) -> str:
        noun = self.noun or ("integers" if self.type is int else "floats")
        noun = f"finite {noun}" if self.finite else noun
        low_in = self.closed in ("both", "left")
        high_in = self.closed in ("both", "right")
        if self.low is not None and self.high is not None:
            left, right = "[" if low_in else "(", "]" if high_in else ")"
            text = f"{noun} in {left}{_num(self.low)}, {_num(self.high)}{right}"
        elif self.low is not None:
            text = f"{noun} {'>=' if low_in else '>'} {_num(self.low)}"
        elif self.high is not None:
            text = f"{noun} {'<=' if high_in else '<'} {_num(self.high)}"
        else:
            text = noun
        return f"{text} ({self.note})" if self.note else text


@dataclass(frozen=True)
class Options(Constraint):
    """One of the given values, or of an enum's (by member or by value)."""

    values: tuple

    def __init__(self, *values) -> None:
        if len(values) == 1 and isinstance(values[0], type) and issubclass(values[0], Enum):
            values = tuple(e.value for e in values[0])
        object.__setattr__(self, "values", tuple(values))

    def check(self, value) -> bool:
        return plain_name(value) in self.values

    def describe(self) -> str:
        return ", ".join(map(str, self.values))

    def markdown(self) -> str:
        return ", ".join(f"`{v}`" for v in self.values)


StrOptions = Options  # scikit-learn's name for options that are strings


@dataclass(frozen=True)
class BuiltinOrPath(Constraint):
    """A built-in's name (an enum's value) or the import path of your own ``module:function``
    (config/plugins.py: ``module.function`` too); the path is imported and checked at resolution
    (attnsvm/composition/resolve.py)."""

    builtin: type[Enum]

    def check(self, value) -> bool:
        return isinstance(plain_name(value), str) and bool(plain_name(value))

    def describe(self) -> str:
        return f"{Options(self.builtin).describe()}, or your module:function"

    def markdown(self) -> str:
        return f"{Options(self.builtin).markdown()}, or your `module:function`"


@dataclass(frozen=True)
class NoneOr(Constraint):
    """null, or what ``inner`` accepts. ``silent``: null is accepted without the text saying so
    (a rule elsewhere decides where null means something, as the data sets' shapes)."""

    inner: Constraint
    silent: bool = False

    def check(self, value) -> bool:
        return value is None or self.inner.check(value)

    def describe(self) -> str:
        return self.inner.describe() if self.silent else f"null or {self.inner.describe()}"

    def markdown(self) -> str:
        return self.inner.markdown() if self.silent else f"null or {self.inner.markdown()}"


@dataclass(frozen=True)
class Several(Constraint):
    """A list of exactly ``count`` values, each accepted by ``inner``."""

    inner: Constraint
    count: int

    def check(self, value) -> bool:
        if not isinstance(value, list | tuple) or len(value) != self.count:
            return False
        return all(self.inner.check(v) for v in value)

    def describe(self) -> str:
        return f"{_COUNTS.get(self.count, self.count)} {self.inner.describe()}"


@dataclass(frozen=True)
class Satisfies(Constraint):
    """What ``test`` accepts, described by ``text`` (a shape no interval says: a square
    matrix, a path that is not empty)."""

    text: str
    test: Callable[[object], bool]

    def check(self, value) -> bool:
        return bool(self.test(value))

    def describe(self) -> str:
        return self.text


@dataclass(frozen=True)
class Rule:
    """A rule across keys: ``holds(obj)`` or ``key`` is refused, its accepted values
    ``accepted`` (followed by `` = actual(obj)`` in the message where given)."""

    key: str
    accepted: str
    holds: Callable[[object], bool]
    actual: Callable[[object], str] | None = None


@dataclass(frozen=True)
class ReadOnlyWhen:
    """``key`` acts only where ``holds(obj)``: ``when`` says where, ``on`` names the key that
    decides it. Elsewhere it is refused away from its default, and no row or job.json records
    it (``plain_read``): a row never shows a value that did not act."""

    key: str
    on: str
    when: str
    holds: Callable[[object], bool]


def _default(cls: type, key: str):
    (f,) = [f for f in fields(cls) if f.name == key]
    return f.default_factory() if f.default_factory is not MISSING else f.default


def unread(obj) -> list[str]:
    """The keys of ``obj`` that do not act, given its other keys (its class's ``READ_ONLY``)."""
    return [r.key for r in getattr(type(obj), "READ_ONLY", ()) if not r.holds(obj)]


def plain_read(obj):
    """``plain(obj)`` less, in each group, the keys it declares unread here (``READ_ONLY``):
    the config a row and job.json record."""
    if not is_dataclass(obj):
        return plain(obj)
    skip = set(unread(obj))
    return {f.name: plain_read(getattr(obj, f.name)) for f in fields(obj) if f.name not in skip}


@cache
def declared(cls: type) -> dict[str, Constraint]:
    """key -> its constraint: ``cls.CONSTRAINTS``, and ``Options`` of each enum-typed key (read
    once per class: each sweep point's configs are checked with it)."""
    hints = type_hints(cls)
    out: dict[str, Constraint] = {}
    for f in fields(cls):
        kind = hints.get(f.name)
        if isinstance(kind, type) and issubclass(kind, Enum):
            out[f.name] = Options(kind)
    return {**out, **getattr(cls, "CONSTRAINTS", {})}


def rules(cls: type) -> tuple[Rule, ...]:
    return tuple(getattr(cls, "RULES", ()))


def accepted_text(cls: type, key: str, markdown: bool = False) -> str | None:
    """What ``key`` of ``cls`` accepts, its constraint's and its rules' texts ("; ")."""
    c = declared(cls).get(key)
    said = [(c.markdown() if markdown else c.describe())] if c is not None else []
    said += [r.accepted for r in rules(cls) if r.key == key]
    said += [f"read only when {r.when}" for r in getattr(cls, "READ_ONLY", ()) if r.key == key]
    return "; ".join(said) or None


def _full(prefix: str, key: str) -> str:
    return f"{prefix}.{key}" if prefix else key


def check_constraints(obj, prefix: str, cls: type | None = None) -> None:
    """Check ``obj``'s keys against what ``cls`` (default: its own class) declares: enum keys
    taken by name, then each constraint, then each rule. ``prefix``: the group the user sets
    the keys under (``optimizer`` for ``optimizer.lr``)."""
    cls = cls or type(obj)
    if cls is type(obj):
        coerce_enums(obj, prefix)
    for key, constraint in declared(cls).items():
        value = getattr(obj, key)
        require(constraint.check(value), _full(prefix, key), constraint.describe(), _shown(value))
    for rule in rules(cls):
        if not rule.holds(obj):
            accepted = rule.accepted + (f" = {rule.actual(obj)}" if rule.actual else "")
            require(False, _full(prefix, rule.key), accepted, _shown(getattr(obj, rule.key)))
    for r in getattr(cls, "READ_ONLY", ()):
        default = _default(cls, r.key)
        if not r.holds(obj) and getattr(obj, r.key) != default:
            on = getattr(obj, r.on)
            here = f"{_full(prefix, r.on)}={'null' if on is None else plain_name(on)}"
            accepted = f"{_shown(default)} (its default): only {r.when} reads it; here {here}"
            require(False, _full(prefix, r.key), accepted, _shown(getattr(obj, r.key)))


def _shown(value):
    """An enum member as its value (``'population'``, not ``<Gradient.population: ...>``)."""
    return value.value if isinstance(value, Enum) else value
