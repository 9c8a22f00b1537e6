"""What a job runs: ``experiment=NAME``, a package of attnsvm/experiments/ or your own module.

The registry knows no experiment by name: the built-ins are the packages in this folder, found
when first asked for, and your own is any importable module (``experiment=mylab.my_exp``).
Both are the same kind of entry, a module that declares what it is and what it needs as one
object of the class ``Experiment`` (attnsvm/experiments/experiment.py):

    EXPERIMENT = Experiment(
        name="icl",                  # experiment=NAME (yours: the name its messages use)
        package=__name__,            # a package laid out as the template names none of its
                                     #   functions: each is its template module's, imported
                                     #   when first called (experiment.py: TEMPLATE):
                                     #   job.py       run_job(run, progress=None) -> JobResult
                                     #   summary.py   summary_text(runs, seconds) -> str
                                     #   plots.py     figures(runs, trajectory, out_dir, sweep)
                                     #   readme_rows.py  SWEEPS: its README results rows
                                     #   bench.py     bench_cases(quick), bench_jobs(quick, bench)
                                     #   reanalysis.py  reanalyse(run, arrays, before)
        Run=IclRun,                  # optional: its job's config, written out: RunBase (the
                                     #   keys every job has) and the groups it reads
                                     #   (attnsvm/experiments/icl/config.py); default RunBase
        Config=Config,               # optional: its own config group (a field of Run; config.py
        config_group="icl",          #   ``Config``), at key config_group (default: name)
        columns=Columns(...),        # optional: its summary, console table and report columns
                                     #   (attnsvm/results/columns.py), or a function of one
                                     #   config point's runs returning them; default: the
                                     #   attention SVM's (ranks, corr_fro / corr_nuc, feasible)
        check=check,                 # optional: (run) -> None, rules across groups, raising
                                     #   ConfigError
        reads=("head.train",),       # optional: options of shared groups that only some
                                     #   experiments read (composition/rules.py OPTIONAL_READS)
        instead={"optimizer.kind": "icl.optimizer"},  # optional: its key read in place of a
                                     #   key its Run lacks, named when that key is refused
                                     #   (default: the same name in its group; for
                                     #   <group>.kind, its key named <group>)
        datasets=("nexttoken",),     # optional: data sets only it reads
        data_set_code={"digits": {"instances": draw, "resolve": resolve}},  # optional: the
                                     #   draw and resolution of a data set of ``datasets``
                                     #   whose entry (attnsvm/data/sets/) declares only its
                                     #   keys: the experiment's own data (data_set_hook)
        fused_unfit="why",           # optional: why its training cannot use the fused kernel
        doc=__doc__,                 # optional: what it is (default: its module's docstring)
    )

A single module (your own, ``experiment=mylab.my_exp``) names its functions instead:
``run_job=run_job, summary_text=summary_text`` (required without ``package=``), and optionally
``figures=``, ``published=``, ``bench_cases=``, ``bench_jobs=``, ``reanalyse=`` (a field given
by name wins over the template's in a package too). The fields are checked when it is built: a
misspelt, missing or mistyped field fails there with its name, and a module without
``EXPERIMENT`` is refused when named. A function whose code imports torch is best named, not
imported: ``run_job=later("mylab.exp.job:run_job")`` (attnsvm/config/plugins.py) imports it
when first called, so finding the entries stays light.

conf/experiment/<name>.yaml composes a built-in's Run with one option per group it reads
(``experiment=NAME`` is a Hydra config group); an experiment without such a file (your own
module) gets its Run's defaults.

Everything around it is the core's, the same for built-ins and plug-ins: composition and
validation, thread limits, the job hash, the result contract and resume, sweeps, aggregation.
"""

from __future__ import annotations

import dataclasses
import pkgutil
from collections.abc import Callable, Mapping
from functools import cache

from attnsvm.config.checks import ConfigError
from attnsvm.config.plugins import load_declared
from attnsvm.config.schema import RunBase
from attnsvm.data import sets
from attnsvm.experiments.experiment import REQUIRED, Experiment
from attnsvm.svm.norm_names import DEFAULT as DEFAULT_NORMS
from attnsvm.svm.norm_names import FEASIBILITY

# options of the groups several experiments share that only some of them read: a value other
# than these is refused where the experiment does not declare the option (its ``reads``;
# attnsvm/composition/rules.py)
OPTIONAL_READS = {  # key -> the values that mean "not used"
    "head.train": (False,),
    "optimizer.gradient": ("exact",),
    "optimizer.schedule": ("constant",),  # the training loop's lr schedule and minibatches
    "optimizer.minibatch": (None,),
    "solver.norms": ([FEASIBILITY], list(DEFAULT_NORMS)),  # the oracle alone, the default
    "parameterization.p": (False,),  # the p-model (parameterization=p)
}


def _builtin() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if m.ispkg)


@cache
def builtin_names() -> tuple[str, ...]:
    """The built-in experiments (the packages of this folder), alphabetical."""
    return tuple(_builtin())


def names() -> tuple[str, ...]:
    """Every registered experiment's name (``experiment=NAME``)."""
    return builtin_names()


@cache
def default_name() -> str:
    """The built-in whose entry says ``default=True``: the experiment of a config that names
    none; "" when none does (its package was removed)."""
    found = [n for n in _builtin() if entry(n).default]
    if len(found) > 1:
        raise ConfigError(f"exactly one built-in experiment is the default; got {found}")
    return found[0] if found else ""


@cache
def entry(name: str, key: str = "experiment") -> Experiment:
    """The ``Experiment`` of experiment ``name`` ("": the default), checked: a ConfigError
    names what is wrong."""
    name = getattr(name, "value", name) or default_name()
    builtin = _builtin()
    if not name:
        raise ConfigError(
            f"{key} is not set and no built-in experiment is the default (default=True): "
            f"accepted values are {', '.join(builtin)}, or the import path of your own module"
        )
    path = f"{__name__}.{name}" if name in builtin else name
    accepted = (
        f"{', '.join(builtin)}, or the import path of your own module declaring EXPERIMENT = "
        f"Experiment({', '.join(f'{f}=...' for f in REQUIRED)})"
    )
    module, declared = load_declared(path, "EXPERIMENT", Experiment, key, accepted)
    if name in builtin and declared.name != name:  # experiment=NAME names the package
        raise ConfigError(f"{path}.EXPERIMENT.name is {declared.name!r}, not {name!r}")
    if not declared.doc and module.__doc__:
        declared = dataclasses.replace(declared, doc=module.__doc__)
    return declared


def job_config(name: str) -> type:
    """The class of experiment ``name``'s job config (its ``Run``; RunBase where it has none)."""
    return entry(name).job_config


def name_of(experiment: Experiment) -> str:
    return experiment.name


def group_of(experiment: Experiment) -> str | None:
    """The key of the experiment's own config group, or None when it has none."""
    return experiment.group


def _field_types(cls: type) -> dict[str, object]:
    """field -> its type hint, of the dataclass ``cls``."""
    import typing

    hints = typing.get_type_hints(cls)
    return {f.name: hints[f.name] for f in dataclasses.fields(cls)}


def _is_group(hint) -> bool:
    return isinstance(hint, type) and dataclasses.is_dataclass(hint)


def has_key(experiment: Experiment, key: str) -> bool:
    """Whether the dotted config ``key`` is a key of the experiment's job config (under a dict
    of your plug-in's arguments, any key)."""
    import typing

    hint: object = experiment.job_config
    for part in key.split("."):
        if not _is_group(hint):  # below a leaf: only a dict's own keys (kwargs.<name>)
            return typing.get_origin(hint) is dict or hint is dict
        fields = _field_types(hint)
        if part not in fields:
            return False
        hint = fields[part]
    return True


def reads_key(experiment: Experiment, key: str) -> bool:
    """Whether the experiment reads the dotted config ``key``: a key of its job config, and an
    option of a shared group that only some experiments read only where it declares it
    (``reads``)."""
    if key in OPTIONAL_READS:
        return key in experiment.reads
    return has_key(experiment, key)


def read_groups(experiment: Experiment) -> list[str]:
    """What the experiment reads, for a message: its groups (``group.*``), then its keys."""
    fields = _field_types(experiment.job_config)
    groups = [f"{k}.*" for k, t in fields.items() if _is_group(t)]
    return [*groups, *(k for k, t in fields.items() if not _is_group(t))]


def instead(experiment: Experiment, key: str) -> str | None:
    """The key of its own group that the experiment reads in place of ``key``: its
    ``instead``'s, else the same name in its group (``<group>.kind`` and ``<group>=option``:
    its key named ``<group>``)."""
    if key in experiment.instead:
        return experiment.instead[key]
    group = experiment.group
    if group is None:
        return None
    top, _, name = key.partition(".")
    name = top if name in ("kind", "") else name.split(".")[0]  # group=option: its kind
    names = {f.name for f in dataclasses.fields(experiment.Config)}
    return f"{group}.{name}" if name in names else None


def readers(key: str) -> list[str]:
    """The built-in experiments whose job config has the dotted ``key``."""
    return [n for n in builtin_names() if reads_key(entry(n), key)]


def config_groups() -> dict[str, type]:
    """group key -> Config dataclass of every built-in experiment's own group."""
    found = [entry(n) for n in builtin_names()]
    return {e.group: e.Config for e in found if e.group is not None}


def dataset_owners() -> dict[str, str]:
    """data set -> the built-in experiment that alone reads it."""
    return {d: e.name for e in map(entry, builtin_names()) for d in e.datasets}


def data_set_code(name: str) -> Mapping:
    """The code that the experiment that alone reads data set ``name`` declares for it
    (``data_set_code``: field -> function); {} where none does."""
    name = sets.entry(name).name
    owner = dataset_owners().get(name)
    return {} if owner is None else entry(owner).data_set_code.get(name, {})


def data_set_hook(name: str, key: str) -> Callable | None:
    """Data set ``name``'s "module:function" field ``key`` (``instances`` or ``resolve``) as a
    function: its experiment's (``data_set_code``), else its entry's; None when neither gives
    one."""
    return data_set_code(name).get(key) or sets.hook(name, key)


def data_set_resolvers() -> dict[str, Callable]:
    """``${name:...}`` interpolations that experiments offer sweep files for their own data
    sets (``data_set_code``'s ``resolvers``): name -> function."""
    found = [entry(n).data_set_code for n in builtin_names()]
    return {
        k: f for code in found for c in code.values() for k, f in c.get("resolvers", {}).items()
    }


__all__ = [
    "OPTIONAL_READS",
    "Experiment",
    "RunBase",
    "builtin_names",
    "config_groups",
    "data_set_code",
    "data_set_hook",
    "data_set_resolvers",
    "dataset_owners",
    "default_name",
    "entry",
    "group_of",
    "has_key",
    "instead",
    "job_config",
    "name_of",
    "names",
    "read_groups",
    "readers",
    "reads_key",
]
