"""What ``dataset=NAME`` draws: the data sets, each a light module of this folder (its draw lives
in a heavier module it names, imported only when it draws).

The registry knows no data set by name: it finds the modules here, and those your installed
packages declare as entry points of the group ``attnsvm.data_sets`` (``ramp = "mylab.ramp"``
in your pyproject's ``[project.entry-points."attnsvm.data_sets"]``). Each declares one object
of the class ``DataSet`` (attnsvm/data/data_set.py says what each field means):

    DATA_SET = DataSet(
        name="nexttoken",            # optional (default: the module's name, or its entry point's)
        Config=NextTokenKeys,        # optional: a dataclass of the keys only it reads
        order=3,                     # optional: where its keys sit among the data sets' keys
        default=True,                # exactly one: the data set of ``DatasetConfig()``
        shape_from_data=True,        # optional: n, T, d may be null (taken at resolution)
        check=check,                 # optional: (ds) -> None, checks beyond Config's
        resolve="module:function",   # optional: (ds) -> fields filled at resolution
        check_run=check_run,         # optional: (run) -> None, rules across groups
        instances="module:function", # (ds, seeds) -> (X, Y, Z, v, *extra) stacked over seeds
        extra=("V",),                # optional: what follows v (default: the ReLU head's V)
        accepted_seeds="module:function",  # optional: (ds, first, count) -> the seeds it takes
        values=True,                 # optional: gives V (head=relu), or a "module:function"
        inits=True,                  # optional: gives published starts (init=published)
        planar_paths=True,           # optional: 2-D pictures: jobs also write each GD path
        resolvers={"name": "module:function"},  # optional: ${name:...} in sweep files
        preflight="module:function", # optional: (run) -> None, what it draws checked early
        doc=__doc__,
    )

Its fields are checked when it is built (a misspelt or missing one fails with its name) and a
module without ``DATA_SET`` is refused when the registry first reads it. An experiment's own
data declares its keys here and no code: the experiment that alone reads it gives its draw,
resolution, rules and resolvers (attnsvm/experiments/experiment.py: ``data_set_code``).

``DatasetConfig`` (exported by attnsvm.composition) is the core keys (attnsvm/config/schema.py:
``DatasetBase``) plus every data set's own keys; its ``generator`` is an enum of the names
found here, so Hydra and the errors list them.
"""

from __future__ import annotations

import dataclasses
import pkgutil
import typing
from enum import Enum
from functools import cache
from importlib.metadata import entry_points

from attnsvm.config.checks import ConfigError, plain_name, require
from attnsvm.config.constraints import check_constraints
from attnsvm.config.plugins import later, load_declared
from attnsvm.config.schema import DatasetBase
from attnsvm.data.data_set import DataSet

GROUP = "attnsvm.data_sets"  # entry points of installed packages: ``ramp = "mylab.ramp"``


@cache
def _modules() -> dict[str, DataSet]:
    """name -> entry: this folder's modules' ``DATA_SET``, then those of your installed
    packages' entry points, each checked."""
    out = {}
    for found in pkgutil.iter_modules(__path__):
        if not found.ispkg:
            data_set = _declared(f"{__name__}.{found.name}", found.name)
            out[data_set.name] = data_set
    for point in entry_points(group=GROUP):
        if point.name in out:
            raise ConfigError(f"the data set {point.name!r} of {point.value} shadows a built-in")
        out[point.name] = _declared(point.value, point.name)
    default = [n for n, m in out.items() if m.default]
    if len(default) != 1:
        raise ConfigError(f"exactly one data set is the default (DEFAULT = True); got {default}")
    return out


def _declared(path: str, name: str) -> DataSet:
    """Module ``path``'s ``DATA_SET``, its name and doc filled in where it gives none."""
    key = f"data set {name}"
    module, data_set = load_declared(path, "DATA_SET", DataSet, key, "an importable module")
    filled = {"name": data_set.name or name, "doc": data_set.doc or module.__doc__ or ""}
    return dataclasses.replace(data_set, **filled)


@cache
def names() -> tuple[str, ...]:
    """The data sets, the default first, then alphabetical."""
    found = _modules()
    return tuple(sorted(found, key=lambda n: (not found[n].default, n)))


def entry(name: str) -> DataSet:
    """The ``DataSet`` of data set ``name``; a ConfigError lists the data sets."""
    name = plain_name(name)
    if name not in _modules():
        accepted = ", ".join(names())
        raise ConfigError(f"dataset.generator={name!r} is invalid: accepted values are {accepted}")
    return _modules()[name]


def name_of(ds) -> str:
    """The data set of a dataset group: a ``DatasetConfig``'s enum member, or the core's
    ``DatasetBase`` string ("" for the default data set)."""
    name = plain_name(ds.generator)
    return name if name != "" else names()[0]


def hook(name: str, key: str):
    """Data set ``name``'s ``"module:function"`` field ``key`` as a function, or None."""
    path = getattr(entry(name), key)
    return None if path is None else later(path)


@cache
def own_keys() -> dict[str, tuple[tuple[str, ...], dataclasses.Field, object]]:
    """key -> (the data sets that read it, its field, its resolved type) for the keys beyond the
    core's. Data sets that declare the same key must agree on its type and default; none may
    redeclare a core key (its default enters every job hash)."""
    core = {f.name for f in dataclasses.fields(DatasetBase)}
    out: dict = {}
    for name in sorted(names(), key=lambda n: (entry(n).order, n)):
        config = entry(name).Config
        if config is None:
            continue
        hints = typing.get_type_hints(config)
        for f in dataclasses.fields(config):
            if f.name in core:
                raise TypeError(f"dataset={name} redeclares the core key dataset.{f.name}")
            if f.name in out:
                owners, first, kind = out[f.name]
                if (kind, _default(first)) != (hints[f.name], _default(f)):
                    raise TypeError(f"dataset.{f.name}: {owners[0]} and {name} disagree")
                out[f.name] = ((*owners, name), first, kind)
            else:
                out[f.name] = ((name,), f, hints[f.name])
    return out


def _default(f: dataclasses.Field):
    return f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default


@cache
def generator_enum() -> type[Enum]:
    """``Generator``: the data sets' names as a str enum (Hydra checks and lists them)."""
    members = {n: n for n in names()}
    return Enum("Generator", members, type=str, module="attnsvm.composition", qualname="Generator")


def _check(ds) -> None:
    """The core checks, then the chosen data set's: its keys only, and its own rules."""
    if ds.generator == "":  # the core's DatasetBase says "" for the default data set
        ds.generator = names()[0]
    DatasetBase.__post_init__(ds)
    name = ds.generator.value
    data_set = entry(name)
    if not data_set.shape_from_data:
        for key in ("n", "T", "d"):
            accepted = DatasetBase.CONSTRAINTS[key].inner.describe()  # null: from the data only
            require(getattr(ds, key) is not None, f"dataset.{key}", accepted, None)
    for key, (owners, f, _) in own_keys().items():
        if name not in owners and getattr(ds, key) != _default(f):
            readers = " or ".join(f"dataset={o}" for o in owners)
            raise ConfigError(
                f"dataset.{key} is read by {readers} only; got dataset.generator={name}: "
                f"set {readers}, or drop dataset.{key}"
            )
    if data_set.Config is not None:  # its own keys: their CONSTRAINTS and RULES
        check_constraints(ds, "dataset", data_set.Config)
    if data_set.check is not None:
        data_set.check(ds)


@cache
def dataset_class() -> type:
    """``DatasetConfig``: the core keys and every data set's own, one flat group."""
    gen = generator_enum()
    default = gen(names()[0])
    fields = [("generator", gen, dataclasses.field(default=default))]
    for key, (_, f, kind) in own_keys().items():
        spec = {"default_factory": f.default_factory}
        if f.default_factory is dataclasses.MISSING:
            spec = {"default": f.default}
        fields.append((key, kind, dataclasses.field(**spec)))
    return dataclasses.make_dataclass(
        "DatasetConfig",
        fields,
        bases=(DatasetBase,),
        namespace={"__module__": "attnsvm.composition", "__post_init__": _check,
                   "__doc__": DatasetBase.__doc__},
    )  # fmt: skip


def hash_neutral_defaults() -> dict:
    """The data sets' own keys at their defaults (the job hash leaves them out there)."""
    return {key: _default(f) for key, (_, f, _) in own_keys().items()}


def omegaconf_resolvers() -> dict[str, str]:
    """``${name:...}`` interpolations the data sets offer sweep files: name -> module:function."""
    return {k: v for n in names() for k, v in entry(n).resolvers.items()}


def gives_values(run) -> bool:
    """Whether the run's data set gives the value matrix V that head=relu reads."""
    values = entry(name_of(run.dataset)).values
    return later(values)(run) if isinstance(values, str) else bool(values)


def with_values() -> list[str]:
    """The data sets that give (or may give) V."""
    return [n for n in names() if entry(n).values]


def with_inits() -> list[str]:
    """The data sets that give published starts (parameterization.init=published)."""
    return [n for n in names() if entry(n).inits]


def preflight(run) -> None:
    """The data set's check of what it will draw, before a job directory is written (a user's
    generator called for two seeds): its ``preflight``."""
    ds = getattr(run, "dataset", None)  # an experiment that reads no data set: nothing to check
    check = None if ds is None else hook(name_of(ds), "preflight")
    if check is not None:
        check(run)
