"""What a job runs: ``experiment=NAME``, a package of attnsvm/experiments/ or your own module.

The registry knows no experiment by name: the built-ins are the packages in this folder, found
when first asked for, and your own is any importable module (``experiment=mylab.my_exp``).
Both are the same kind of entry, a module that declares what it is and what it needs as one
object of the class ``Experiment`` (attnsvm/experiments/experiment.py):

    EXPERIMENT = Experiment(
        name="icl",                  # experiment=NAME (yours: the name its messages use)
        run_job=run_job,             # (run, progress=None) -> JobResult: all seeds of one job
        summary_text=summary_text,   # (runs, seconds) -> str, printed after the run
        Config=IclConfig,            # optional: its config group (a dataclass), at key
        config_group="icl",          #   config_group (default: name)
        figures=figures,             # optional: (runs, trajectory, out_dir, sweep=None) -> list,
                                     #   aggregate draws (its own jobs' rows only)
        columns=Columns(...),        # optional: its summary, console table and report columns
                                     #   (attnsvm/results/columns.py), or a function of one
                                     #   config point's runs returning them; default: the
                                     #   attention SVM's (ranks, corr_fro / corr_nuc, feasible)
        check=check,                 # optional: (run) -> None, rules across groups, raising
                                     #   ConfigError
        reads=("solver", "metrics.epsilon"),  # the core groups and keys it reads, beyond its
                                     #   own group and COMMON_READS; an OPTIONAL_READS key only
                                     #   by its name; ("*",): every core key (gd); None (the
                                     #   default): every core group
        instead={"optimizer.kind": "icl.optimizer"},  # optional: its key read in place of a
                                     #   core key it does not read (default: the same name in
                                     #   its group; for <group>.kind, its key named <group>)
        datasets=("nexttoken",),     # optional: data sets only it reads
        fused_unfit="why",           # optional: why its training cannot use the fused kernel
        hash_neutral=True,           # its group enters the job hash only when not default
        published=published,         # optional: () -> its sweeps' rows of the README's results
                                     #   tables (attnsvm/results/published.py: Published)
        bench_cases=bench_cases,     # optional: (quick) -> {case: {"batched": x, "alone": y}},
                                     #   its own cases of python -m attnsvm.bench
        bench_jobs=bench_jobs,       # optional: (quick) -> [{"what", "target", "wall", "cpu",
                                     #   "outer", "peak_mib"}]: whole jobs of it, timed there
        doc=__doc__,                 # optional: what it is (default: its module's docstring)
    )

The fields are checked when it is built: a misspelt, missing or mistyped field fails there
with its name, and a module without ``EXPERIMENT`` is refused when named. A function whose code
imports torch is best named, not imported: ``run_job=later("mylab.exp.job:run_job")``
(attnsvm/config/plugins.py) imports it when first called, so finding the entries stays light.

Everything around it is the core's, the same for built-ins and plug-ins: composition and
validation, thread limits, the job hash, the result contract and resume, sweeps, aggregation.
"""

from __future__ import annotations

import dataclasses
import pkgutil
from functools import cache

from attnsvm.config.checks import ConfigError
from attnsvm.config.plugins import load_declared
from attnsvm.experiments.experiment import REQUIRED, Experiment
from attnsvm.svm.norm_names import DEFAULT as DEFAULT_NORMS
from attnsvm.svm.norm_names import FEASIBILITY

# the run keys the core reads for every experiment; any other key a user sets must be one the
# experiment declares it reads (reads), else it is refused at composition (composition/rules.py)
COMMON_READS = (
    "experiment",
    "seeds",
    "seed",
    "batch_size",
    "device",
    "threads",
    "engine",
    "progress_interval",
)
# options of the core groups that only some experiments read: a non-default value elsewhere is
# refused at composition (key -> its default, as the resolved config holds it)
OPTIONAL_READS = {  # key -> the values that mean "not used"
    "head.train": (False,),
    "optimizer.gradient": ("exact",),
    "loss": ("logistic",),
    "solver.norms": ([FEASIBILITY], list(DEFAULT_NORMS)),  # the oracle alone, the default
    "parameterization.p": (False,),  # the p-model (parameterization=p)
}


@cache
def builtin_names() -> tuple[str, ...]:
    """The packages of this folder, in a fixed order: the groups that always enter the job hash
    first (as before the house move), then the others; alphabetical within each."""
    names = [m.name for m in pkgutil.iter_modules(__path__) if m.ispkg]
    return tuple(sorted(names, key=lambda n: (hash_neutral(entry(n)), n)))


def _builtin() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if m.ispkg)


@cache
def default_name() -> str:
    """The built-in whose entry says ``default=True``: the experiment of a config that names
    none (the schema's ``experiment=""``); "" when none does (its package was removed)."""
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


module_of = entry  # the name before the house move


def name_of(experiment: Experiment) -> str:
    return experiment.name


def group_of(experiment: Experiment) -> str | None:
    """The key of the experiment's config group, or None when it has none."""
    return experiment.group


def hash_neutral(experiment: Experiment) -> bool:
    return experiment.hash_neutral


def reads(experiment: Experiment) -> set[str]:
    """Options of OPTIONAL_READS the experiment reads ("*": all of them)."""
    got = set(experiment.reads or ())
    return set(OPTIONAL_READS) if "*" in got else got


def reads_key(experiment: Experiment, key: str) -> bool:
    """Whether the experiment reads the dotted config ``key`` (an OPTIONAL_READS key is read
    only where named: ``reads``)."""
    top = key.split(".")[0]
    if top == experiment.group or top in COMMON_READS:
        return True
    if top in config_groups():  # another experiment's group
        return False
    got = experiment.reads
    if got is None or "*" in got:
        return True
    return any(key == r or key.startswith(r + ".") for r in got)


def read_groups(experiment: Experiment) -> list[str]:
    """What the experiment reads, for a message: its group, the core groups (``group.*``) and
    keys it declares, the common run keys."""
    from attnsvm.config.schema import RunBase

    core = dataclasses.fields(RunBase)
    groups = {f.name for f in core if dataclasses.is_dataclass(f.default_factory)}
    got = experiment.reads
    if got is None or "*" in got:  # every core key ("*": the optional ones too)
        every = got is not None
        got = [f.name for f in core if every or f.name not in OPTIONAL_READS]
    own = [experiment.group] if experiment.group else []
    mine = [f"{k}.*" if k in groups or k in own else k for k in [*own, *got]]
    return [*mine, *(k for k in COMMON_READS if k not in mine)]


def instead(experiment: Experiment, key: str) -> str | None:
    """The key of its own group that the experiment reads in place of core ``key``: its
    ``instead``'s, else the same name in its group (``<group>.kind``: its key named ``<group>``)."""
    if key in experiment.instead:
        return experiment.instead[key]
    group = experiment.group
    if group is None or "." not in key:
        return None
    top, _, name = key.partition(".")
    name = top if name == "kind" else name
    names = {f.name for f in dataclasses.fields(experiment.Config)}
    return f"{group}.{name}" if name in names else None


def config_groups() -> dict[str, type]:
    """group key -> Config dataclass of every built-in experiment that has one."""
    found = [entry(n) for n in builtin_names()]
    return {e.group: e.Config for e in found if e.group is not None}


def dataset_owners() -> dict[str, str]:
    """data set -> the built-in experiment that alone reads it."""
    return {d: e.name for e in map(entry, builtin_names()) for d in e.datasets}


@cache
def run_config_class() -> type:
    """``RunConfig``: the core schema (attnsvm/config/schema.py) with every built-in
    experiment's config group as a field, so ``RunConfig(regpath=RegpathConfig(points=5))``
    and ``regpath.points=5`` both work."""
    from attnsvm.config.schema import make_run_config
    from attnsvm.data.sets import dataset_class

    return make_run_config(dataset_class(), config_groups(), default_name(), "attnsvm.composition")


def with_groups(run):
    """``run`` as a ``run_config_class()`` instance: every experiment's group at its default
    where ``run`` has none, and the core's ``DatasetBase`` as the full ``DatasetConfig``."""
    from attnsvm.data.sets import dataset_class

    cls, data = run_config_class(), dataset_class()
    if isinstance(run, cls) and isinstance(run.dataset, data) and run.experiment:
        return run
    values = {f.name: getattr(run, f.name) for f in dataclasses.fields(run)}
    values["experiment"] = values["experiment"] or default_name()
    if not isinstance(values["dataset"], data):
        base = values["dataset"]
        values["dataset"] = data(
            **{f.name: getattr(base, f.name) for f in dataclasses.fields(base)}
        )
    return cls(**values)
