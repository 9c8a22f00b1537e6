"""Resolution: a checked config becomes the run that executes, a copy; the input is untouched.

What needs an implementation is decided here, not in the schema: the shape of a data file or a
published example (the data set's entry in attnsvm/data/sets/), plug-ins imported and
checked, the experiment's own config group and rules (its registry entry in
attnsvm/experiments/), the SVM norms a parameterization is measured against, and the engine
that trains (attnsvm/experiments/engine.py). The job identity is the hash of this resolved run
(attnsvm/composition/identity.py).

    run = resolve(RunConfig(parameterization=ParameterizationConfig(kind="kq")))
    run.solver.norms    # the default set, and the SVM (K,Q) is measured against
"""

from __future__ import annotations

import copy
import dataclasses
from enum import Enum

from attnsvm.composition.rules import RULES, check_reads
from attnsvm.config.checks import ConfigError
from attnsvm.config.enums import Engine, Head, Optimizer, Parameterization
from attnsvm.config.plugins import load_object
from attnsvm.config.schema import DatasetBase, RunBase
from attnsvm.experiments import data_set_hook, entry, group_of
from attnsvm.experiments.engine import train_engine

RESOLVED = "_attnsvm_resolved"  # set on a resolved run (not a field: never in its hash)


def resolve_dataset(ds: DatasetBase) -> DatasetBase:
    """The data set with n, T, d (and a file's digest) taken from the data, checked again
    (the data set's ``resolve``: attnsvm/data/sets/, or its experiment's: data_set_code)."""
    fill = data_set_hook(ds.generator.value, "resolve")
    filled = None if fill is None else fill(ds)
    return dataclasses.replace(ds, **filled) if filled else ds


def _plugin(value, builtin: type[Enum], key: str):
    """A built-in's member as it is; any other value must import as a "module:function"
    (config/plugins.py: the one path syntax)."""
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


def _norms(names: list[str], kind: Parameterization | None) -> list[str]:
    """The SVMs a job solves (attnsvm/svm/norm_names.py: its order and default set), plug-ins
    checked, and always the one the parameterization is measured against."""
    from attnsvm.svm.norm_names import BUILTIN, is_builtin, norm_names
    from attnsvm.train.parameterizations import svm_norm

    names = norm_names(names)
    builtin = Enum("SVMNorm", {n: n for n in (*BUILTIN, "l<p>")}, type=str)
    for name in names:
        if not is_builtin(name):
            _plugin(name, builtin, "solver.norms")
    if kind is not None and svm_norm(kind) not in names:
        return [names[0], svm_norm(kind), *names[1:]]
    return names


def _own_class(run: RunBase, module) -> None:
    """A run is an instance of its experiment's job config (``RunConfig`` for gd)."""
    cls = module.job_config
    if type(run) is not cls:
        raise ConfigError(
            f"experiment={module.name}'s job config is {cls.__module__}.{cls.__qualname__}; "
            f"got a {type(run).__name__}: build a {cls.__qualname__} (or compose "
            f"experiment={module.name})"
        )


def resolve(run: RunBase) -> RunBase:
    """The resolved copy of ``run`` (a resolved run is returned as it is)."""
    if getattr(run, RESOLVED, False):
        return run
    module = entry(run.experiment)
    _own_class(run, module)
    run = copy.deepcopy(run)
    run.experiment = run.experiment or module.name
    if hasattr(run, "dataset"):
        run.dataset = resolve_dataset(run.dataset)
    if hasattr(run, "optimizer"):
        run.optimizer.kind = _plugin(run.optimizer.kind, Optimizer, "optimizer.kind")
    if hasattr(run, "head"):
        run.head.kind = _plugin(run.head.kind, Head, "head.kind")
    if hasattr(run, "solver"):
        kind = run.parameterization.kind if hasattr(run, "parameterization") else None
        run.solver.norms = _norms(run.solver.norms, kind)
    for check in (*RULES, module.check):
        if check is not None:
            check(run)
    check_reads(run, module)
    if run.engine == Engine.fused:  # only a pinned engine can be refused; auto never is
        train_engine(run)
    object.__setattr__(run, RESOLVED, True)
    return run


def experiment_group(run: RunBase):
    """The run's experiment's own config (None when it has none)."""
    group = group_of(entry(run.experiment))
    return None if group is None else getattr(run, group)
