"""Resolution: a checked config becomes the run that executes, a copy; the input is untouched.

What needs an implementation is decided here, not in the schema: the shape of a data file or a
published example (the data module named in attnsvm/data/__init__.py), plug-ins imported and
checked, the experiment's own config group and rules (its registry entry in
attnsvm/experiments/), the SVM norms a parameterization is measured against, and the engine
that trains. The job identity is the hash of this resolved run (attnsvm/config/identity.py).

    run = resolve(RunConfig(parameterization=ParameterizationConfig(kind="kq")))
    run.solver.norms    # ['fro', 'nuc']: (K,Q) is measured against the nuclear SVM
"""

from __future__ import annotations

import copy
import dataclasses
import importlib
from enum import Enum

from attnsvm.config.checks import ConfigError, plain_name
from attnsvm.config.enums import Engine, Head, Optimizer, Parameterization
from attnsvm.config.plugins import load_object
from attnsvm.config.rules import RULES, check_reads
from attnsvm.config.schema import NORMS, DatasetConfig, RunConfig, lp_exponent
from attnsvm.experiments import entry, group_of, with_groups

RESOLVED = "_attnsvm_resolved"  # set on a resolved run (not a field: never in its hash)


def resolve_dataset(ds: DatasetConfig) -> DatasetConfig:
    """The data set with n, T, d (and a file's digest) taken from the data, checked again."""
    from attnsvm.data import RESOLVERS

    path = RESOLVERS.get(ds.generator.value)
    if path is None:
        return ds
    filled = importlib.import_module(path).resolve_dataset(ds)
    return dataclasses.replace(ds, **filled) if filled else ds


def _plugin(value, builtin: type[Enum], key: str):
    """A built-in's member as it is; any other value must import as a "module.function"."""
    if isinstance(value, builtin):
        return value
    try:
        load_object(value, key)
    except ConfigError as exc:
        accepted = ", ".join(e.value for e in builtin)
        raise ConfigError(
            f"{key}={value!r} is invalid: accepted values are {accepted}, or the import path "
            f"of your own ({exc})"
        ) from None
    return value


def _norms(names: list[str], kind: Parameterization) -> list[str]:
    """Plug-in norms checked; (K,Q) always measured against the nuclear SVM too."""
    builtin = Enum("SVMNorm", {n: n for n in (*NORMS, "l<p>")}, type=str)
    for name in names:
        if name not in NORMS and lp_exponent(name) is None:
            _plugin(name, builtin, "solver.norms")
    if kind == Parameterization.kq and "nuc" not in names:
        return [names[0], "nuc", *names[1:]]
    return list(names)


def resolve(run: RunConfig) -> RunConfig:
    """The resolved copy of ``run`` (a resolved run is returned as it is)."""
    if getattr(run, RESOLVED, False):
        return run
    module = entry(run.experiment)
    run = with_groups(copy.deepcopy(run))
    run.dataset = resolve_dataset(run.dataset)
    run.optimizer.kind = _plugin(run.optimizer.kind, Optimizer, "optimizer.kind")
    run.head.kind = _plugin(run.head.kind, Head, "head.kind")
    run.solver.norms = _norms(run.solver.norms, run.parameterization.kind)
    for check in (*RULES, getattr(module, "check", None)):
        if check is not None:
            check(run)
    check_reads(run, module)
    if run.engine == Engine.fused:  # only a pinned engine can be refused; auto never is
        train_engine(run)
    object.__setattr__(run, RESOLVED, True)
    return run


def train_engine(run: RunConfig) -> Engine | None:
    """The engine that trains: ``auto`` resolved (fused where it applies, else torch); None
    when the job trains nothing (``train=false``). The job hash uses this, not ``engine``."""
    from attnsvm.train.fused import resolve_engine

    module = entry(run.experiment)
    unfit = getattr(module, "FUSED_UNFIT", None)
    return resolve_engine(
        run.engine,
        run.device,
        run.dtype,
        run.head.kind,
        f"experiment={plain_name(run.experiment)} ({unfit})" if unfit else None,
        run.train,
        run.optimizer.kind,
        run.head.train,
        run.parameterization.kind,
        run.loss,
        run.optimizer.gradient,
    )


def experiment_group(run: RunConfig):
    """The run's experiment's own config (None when it has none)."""
    group = group_of(entry(run.experiment))
    return None if group is None else getattr(run, group)
