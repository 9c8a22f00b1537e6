"""Each key's accepted values are declared once (attnsvm/config/constraints.py): each kind of
constraint checks and says what it accepts, every ranged key of the core groups, the experiments'
groups and the data sets' own keys is declared, and a bad value of each is refused when the config
is composed, in one message form naming the key the user set."""

from __future__ import annotations

import dataclasses
import math
import typing
from enum import Enum

import pytest

import attnsvm
from attnsvm.composition.compose import SHARED_GROUPS
from attnsvm.config import ConfigError
from attnsvm.config.constraints import (
    BuiltinOrPath,
    Interval,
    NoneOr,
    Options,
    Rule,
    Satisfies,
    Several,
    check_constraints,
    declared,
    rules,
)
from attnsvm.config.schema import DatasetBase, RunBase
from attnsvm.data import sets
from attnsvm.experiments import builtin_names, config_groups, dataset_owners, entry, group_of
from cli_helpers import run_cli

FORM = "{key}={value!r} is invalid: accepted values are {accepted}"
QUARTER = "floats < 1 / size = 0.25"


class Color(str, Enum):
    red = "red"
    blue = "blue"


@pytest.mark.parametrize(
    ("constraint", "good", "bad", "text"),
    [
        (Interval(int, 1), [1, 7], [0, -3, None, "2"], "integers >= 1"),
        (
            Interval(float, 0, closed="neither"),
            [1e-9, math.inf],
            [0.0, -1.0, math.nan],
            "floats > 0",
        ),
        (Interval(float, 0, 1, closed="left"), [0.0, 0.5], [1.0, -0.1], "floats in [0, 1)"),
        (Interval(float, 0, 1, closed="right"), [1.0], [0.0, 1.5], "floats in (0, 1]"),
        (Interval(float, 0, 1, closed="both"), [0, 1], [1.01], "floats in [0, 1]"),
        (Interval(float, 0, 1, closed="neither"), [0.5], [0, 1], "floats in (0, 1)"),
        (Interval(float, None, 0.5, closed="neither"), [-9.0], [0.5], "floats < 0.5"),
        (
            Interval(float, 0, closed="neither", finite=True),
            [2.0],
            [math.inf, math.nan],
            "finite floats > 0",
        ),
        (Interval(float, finite=True), [-1e300], [math.inf, -math.inf], "finite floats"),
        (Interval(float, 0, noun="seconds"), [0.0], [-1.0], "seconds >= 0"),
        (Interval(int, 2, note="a vocabulary"), [2], [1], "integers >= 2 (a vocabulary)"),
        (Options("a", "b"), ["a"], ["c", None], "a, b"),
        (Options(Color), ["red", Color.blue], ["green"], "red, blue"),
        (
            BuiltinOrPath(Color),
            ["red", "mylab.make"],
            ["", None],
            "red, blue, or your module:function",
        ),
        (NoneOr(Interval(int, 1)), [None, 3], [0], "null or integers >= 1"),
        (NoneOr(Interval(int, 1), silent=True), [None, 3], [0], "integers >= 1"),
        (
            Several(Interval(float, 0, 1), 2),
            [[0.0, 0.5], (0.1, 0.2)],
            [[0.5], [0.5, 1.0], 0.5],
            "two floats in [0, 1)",
        ),
        (Satisfies("non-empty names", bool), ["x"], ["", None], "non-empty names"),
    ],
)
def test_each_kind_checks_and_says_what_it_accepts(constraint, good, bad, text):
    assert all(constraint.check(v) for v in good), good
    assert not any(constraint.check(v) for v in bad), bad
    assert constraint.describe() == text


@dataclasses.dataclass
class _Toy:
    color: Color = Color.red
    size: int = 3
    rate: float = 0.1

    CONSTRAINTS: typing.ClassVar = {"size": Interval(int, 1)}
    RULES: typing.ClassVar = (
        Rule("rate", "floats < 1 / size", lambda t: t.rate < 1 / t.size, lambda t: f"{1 / t.size}"),
    )

    def __post_init__(self) -> None:
        check_constraints(self, "toy")


@pytest.mark.parametrize(
    ("keys", "message"),
    [
        (dict(size=0), FORM.format(key="toy.size", value=0, accepted="integers >= 1")),
        (dict(color="green"), FORM.format(key="toy.color", value="green", accepted="red, blue")),
        (dict(size=4, rate=0.5), FORM.format(key="toy.rate", value=0.5, accepted=QUARTER)),
    ],
)
def test_one_message_form_for_a_constraint_an_enum_and_a_rule(keys, message):
    with pytest.raises(ConfigError) as got:
        _Toy(**keys)
    assert str(got.value) == message
    assert _Toy(color="blue").color is Color.blue  # an enum key taken by name


def _groups() -> dict[str, type]:
    """prefix -> class: the shared groups and the data sets' common keys, every experiment's
    group, each data set's own keys."""
    out = {"dataset": DatasetBase, **SHARED_GROUPS}
    out.update(config_groups())
    for name in sets.names():
        config = getattr(sets.entry(name), "Config", None)
        if config is not None:
            out[f"dataset={name}"] = config
    return out


_RANGED = (int, float, int | None, float | None, list[float], list[int])


@pytest.mark.parametrize(("group", "cls"), [*_groups().items(), ("", RunBase)])
def test_every_ranged_key_declares_what_it_accepts(group, cls):
    hints = typing.get_type_hints(cls)
    said = set(declared(cls)) | {r.key for r in rules(cls)}
    ranged = [f.name for f in dataclasses.fields(cls) if hints[f.name] in _RANGED]
    assert [k for k in ranged if k not in said] == [], f"{group or 'run'}: declare them"


def _bad(c) -> object | None:
    """A value ``c`` refuses (None where a constraint has no simple one)."""
    if isinstance(c, NoneOr):
        return _bad(c.inner)
    if isinstance(c, Several):
        inner = _bad(c.inner)
        return None if inner is None else [inner] * c.count
    if isinstance(c, BuiltinOrPath):
        return ""
    if not isinstance(c, Interval):
        return None
    if c.low is not None:
        low_in = c.closed in ("both", "left")
        return c.type(c.low - 1) if low_in else c.type(c.low)
    if c.high is not None:
        return c.type(c.high + 1)
    return math.inf if c.finite else None


def _setting(group: str) -> tuple[list[str], str]:
    """The overrides that choose ``group``'s keys, and the prefix the user sets them under."""
    if group.startswith("dataset="):
        name = group.split("=")[1]
        owner = dataset_owners().get(name)
        return [f"dataset={name}", *([f"experiment={owner}"] if owner else [])], "dataset"
    readers = {group_of(entry(n)): n for n in builtin_names()}
    return ([f"experiment={readers[group]}"] if group in readers else []), group


def _value(v) -> str:
    return "''" if v == "" else str(v).replace(" ", "")


CASES = [
    ([*chosen, f"{prefix}.{key}={_value(bad)}"], f"{prefix}.{key}", c.describe())
    for group, cls in _groups().items()
    for chosen, prefix in [_setting(group)]
    for key, c in declared(cls).items()
    if (bad := _bad(c)) is not None
] + [
    ([f"{key}={bad}"], key, c.describe())
    for key, c in RunBase.CONSTRAINTS.items()
    if (bad := _bad(c)) is not None
]


@pytest.mark.parametrize(("overrides", "key", "accepted"), CASES, ids=[c[0][-1] for c in CASES])
def test_a_bad_value_of_each_declared_key_is_refused_at_composition(overrides, key, accepted):
    with pytest.raises(ConfigError) as got:
        attnsvm.compose(overrides)
    message = str(got.value)
    assert message.startswith(f"{key}=")
    assert f"is invalid: accepted values are {accepted}" in message


def test_the_declared_cases_cover_every_experiment_group():
    covered = {case[1].split(".")[0] for case in CASES}
    assert set(config_groups()) <= covered
    assert len(CASES) >= 60


RULED = [  # overrides, the key=value refused, the start of what it accepts
    (["experiment=icl", "icl.lr=-1"], "icl.lr=-1.0", "finite floats > 0"),
    (["experiment=rankdyn", "rankdyn.lr=0"], "rankdyn.lr=0.0", "null or finite floats > 0"),
    (
        ["experiment=benign", "benign.setting=token_selection", "benign.T=2"],
        "benign.T=2",
        "null or integers >= 3 with benign.setting=token_selection",
    ),
    (
        ["experiment=icl", "icl.layers=2", "icl.gradient=population"],
        "icl.gradient='population'",
        "population only with icl.layers=1",
    ),
    (
        ["experiment=regpath", "regpath.r_max=0.25"],
        "regpath.r_max=0.25",
        "floats > regpath.r_min = 0.5",
    ),
    (
        ["experiment=multitoken", "multitoken.zero_threshold=0.01"],
        "multitoken.zero_threshold=0.01",
        "floats <= multitoken.threshold = 0.001",
    ),
    (
        ["dataset.attention=self", "dataset.query_index=8"],
        "dataset.query_index=8",
        "integers in [-T, T) = [-8, 8)",
    ),
    (["optimizer=md", "optimizer.p=1"], "optimizer.p=1.0", "floats > 1 for optimizer=md"),
    (
        ["head.kind=relu", "head.train=true"],
        "head.train=True",
        "false, or true with head.kind=linear",
    ),
]


@pytest.mark.parametrize(("overrides", "refused", "accepted"), RULED)
def test_experiment_keys_and_rules_across_keys_are_refused_naming_the_key(
    overrides, refused, accepted
):
    with pytest.raises(ConfigError) as got:
        attnsvm.compose(overrides)
    assert str(got.value).startswith(f"{refused} is invalid: accepted values are {accepted}")


@pytest.mark.slow
@pytest.mark.parametrize("override", ["icl.lr=-1", "rankdyn.lr=0"])
def test_the_cli_refuses_an_experiment_key_in_one_line_and_writes_nothing(tmp_path, override):
    experiment = override.split(".")[0]
    out = f"hydra.run.dir={tmp_path}/run"
    res = run_cli(f"experiment={experiment}", override, out, timeout=120)
    assert res.returncode != 0
    last = [line for line in res.stdout.splitlines() if line.strip()][-1]
    assert last.startswith(f"attnsvm: invalid config: {override}"), res.stdout
    assert "is invalid: accepted values are" in last and "Traceback" not in res.stdout
    assert not (tmp_path / "run").exists()
