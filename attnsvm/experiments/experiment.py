"""``Experiment``: what an experiment is, declared once per entry as ``EXPERIMENT =
Experiment(...)`` (attnsvm/experiments/__init__.py: the registry reads nothing else).

Its fields are checked when it is built: a misspelt or missing field fails there, with its name
(the registry re-raises it as a ConfigError naming the module).

A package laid out as the template (``package=__name__``) names none of its functions: each
function field it leaves out is the one its template module defines (``TEMPLATE``: job.py's
``run_job``, summary.py's ``summary_text``, plots.py's ``figures``, ...), imported when first
called, so reading the entries imports no torch.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache

from attnsvm.config.schema import RunBase
from attnsvm.results.columns import Columns


@dataclass(frozen=True, kw_only=True)
class Experiment:
    """One experiment: a built-in package of attnsvm/experiments/ or your own module."""

    name: str  # experiment=NAME of a built-in; yours: any name its messages use
    package: str | None = None  # a package laid out as the template (its __name__): each
    #   function below left out is its template module's (TEMPLATE), imported when called
    run_job: Callable | None = None  # (run, progress=None) -> JobResult: all seeds of one job
    summary_text: Callable | None = None  # (runs, seconds) -> str, printed after the run
    Run: type | None = None  # its job's config: RunBase and the groups and keys it reads
    #   (None: RunBase alone, the keys every job has)
    Config: type | None = None  # its own config group (a dataclass), a field of Run ...
    config_group: str | None = None  # ... at this key (default: name)
    figures: Callable | None = None  # (runs, trajectory, out_dir, sweep=None) -> list
    columns: Columns | Callable | None = None  # summary / console / report columns, or a
    #   function of one config point's runs returning them; None: the attention SVM's
    check: Callable | None = None  # (run) -> None: rules across groups, raising ConfigError
    reads: tuple[str, ...] = ()  # options of the shared groups that only some experiments read
    #   (attnsvm/composition/rules.py: OPTIONAL_READS), where its Run has the group
    instead: Mapping[str, str] = field(default_factory=dict)  # a key it lacks -> its own key
    #   read in its place (named when the key is refused)
    datasets: tuple[str, ...] = ()  # data sets only it reads
    data_set_code: Mapping[str, Mapping[str, Callable]] = field(default_factory=dict)  # a data
    #   set of ``datasets`` -> its functions by DataSet field (CODE_FIELDS): the code of a data
    #   set whose entry (attnsvm/data/sets/) declares only its keys, this experiment's own data
    fused_unfit: str | None = None  # why its training cannot use the fused kernel
    hash_legacy: Mapping[str, object] = field(default_factory=dict)  # keys its job hash has
    #   always held at these values though its Run lacks them (old sweeps keep their identity)
    published: Callable | None = None  # () -> its sweeps' rows of the README's results tables
    bench_cases: Callable | None = None  # (quick) -> {case: {"batched": x, "alone": y, ...}}
    bench_jobs: Callable | None = None  # (quick, bench) -> [{"what", "target", "wall", ...}]:
    #   whole jobs of it timed by python -m attnsvm.bench with the tools it hands down (bench:
    #   attnsvm/bench/experiment_cases.py's JobBench) (its rows of the report and README)
    reanalyse: Callable | None = None  # (run, arrays, result before) -> JobResult: its SVMs
    #   and metrics again from a finished job's arrays.npz, nothing trained (attnsvm.reanalyse)
    default: bool = False  # the experiment of a config that names none (exactly one built-in)
    doc: str = ""  # what it is (python -m attnsvm.run --help); default: its module's docstring

    def __post_init__(self) -> None:
        _expect(self, "package", _maybe(self, "package", _is_str), "a package's name or None")
        if self.package is not None:
            for name, (module, attr) in TEMPLATE.items():
                if getattr(self, name) is None and attr in _defined(f"{self.package}.{module}"):
                    object.__setattr__(self, name, Template(f"{self.package}.{module}", attr))
        for name in ("run_job", "summary_text"):
            _expect(self, name, callable(getattr(self, name)), _required(self, name))
        for name in ("figures", "check", "published", "bench_cases", "bench_jobs", "reanalyse"):
            _expect(self, name, _maybe(self, name, callable), "a function or None")
        _expect(self, "name", isinstance(self.name, str) and self.name != "", "a non-empty str")
        _expect(self, "Config", _maybe(self, "Config", _is_dataclass_type), "a dataclass or None")
        _expect(self, "config_group", _maybe(self, "config_group", _is_str), "a str or None")
        columns = _maybe(self, "columns", lambda c: isinstance(c, Columns) or callable(c))
        _expect(self, "columns", columns, "a Columns, a function returning one, or None")
        _expect(self, "reads", _strs(self.reads), "a tuple of str")
        _expect(
            self, "Run", _maybe(self, "Run", _is_run), "a dataclass subclassing RunBase or None"
        )
        _expect(self, "datasets", _strs(self.datasets), "a tuple of str")
        code = isinstance(self.data_set_code, Mapping) and all(
            k in self.datasets and isinstance(f, Mapping) and set(f) <= set(CODE_FIELDS)
            and all(_is_code(key, c) for key, c in f.items())
            for k, f in self.data_set_code.items()
        )  # fmt: skip
        _expect(self, "data_set_code", code, _DATA_SET_CODE_IS)
        instead = isinstance(self.instead, Mapping) and all(
            _is_str(k) and _is_str(v) for k, v in self.instead.items()
        )
        _expect(self, "instead", instead, "a dict of str -> str")
        _expect(self, "fused_unfit", _maybe(self, "fused_unfit", _is_str), "a str or None")
        _expect(self, "hash_legacy", isinstance(self.hash_legacy, Mapping), "a dict")
        _expect(self, "default", isinstance(self.default, bool), "a bool")
        _expect(self, "doc", isinstance(self.doc, str), "a str")

    @property
    def job_config(self) -> type:
        """The class of its job's config (RunBase where it declares none)."""
        return RunBase if self.Run is None else self.Run

    @property
    def group(self) -> str | None:
        """The key of its config group, or None when it has none."""
        if self.Config is None:
            return None
        return self.config_group or self.name


FIELDS = tuple(f.name for f in dataclasses.fields(Experiment))
# the DataSet fields an experiment may give for its own data set (attnsvm/data/data_set.py):
# its draw, (ds, seeds) -> (X, Y, Z, v, *extra); its resolution, (ds) -> the fields filled; its
# rules across groups, (run) -> None; its ${name:...} resolvers of sweep files, name -> function
CODE_FIELDS = ("instances", "resolve", "check_run", "resolvers")
_DATA_SET_CODE_IS = (
    f"a dict of data set (one of datasets) -> {{field: function}}, fields in {CODE_FIELDS}"
)
REQUIRED = ("name", "run_job", "summary_text")  # run_job and summary_text: or package's

# a package's template: function field -> (its module in the package, the name it defines
# there); a name bound to a value (readme_rows.py's SWEEPS) is the function's return value
TEMPLATE = {
    "run_job": ("job", "run_job"),
    "summary_text": ("summary", "summary_text"),
    "figures": ("plots", "figures"),
    "reanalyse": ("reanalysis", "reanalyse"),
    "published": ("readme_rows", "SWEEPS"),
    "bench_cases": ("bench", "bench_cases"),
    "bench_jobs": ("bench", "bench_jobs"),
}


@dataclass(frozen=True)
class Template:
    """``name`` of module ``module`` (a template module of a package), imported when first
    called and looked up at every call (a patched function is seen); go-to-definition finds it
    in that module."""

    module: str
    name: str

    def __call__(self, *args, **kwargs):
        found = getattr(importlib.import_module(self.module), self.name)
        return found(*args, **kwargs) if callable(found) else found


@cache
def _defined(module: str) -> frozenset[str]:
    """The top-level names ``module`` defines (``def NAME``, ``NAME =``), read from its source
    without importing it; none where there is no such module."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return frozenset()
    with open(spec.origin, encoding="utf-8") as source:
        text = source.read()
    return frozenset(re.findall(r"^(?:async )?(?:def |class )?([A-Za-z_]\w*)\s*[(:=]", text, re.M))


def _required(obj, name: str) -> str:
    module, attr = TEMPLATE[name]
    where = f" ({obj.package}.{module} defines no {attr})" if obj.package else ""
    return f"a function, or with package=, its {module}.py's {attr}{where}"


def _is_code(key: str, value) -> bool:
    """A function, or for ``resolvers`` a dict of name -> function."""
    if key == "resolvers":
        return isinstance(value, Mapping) and all(
            _is_str(k) and callable(f) for k, f in value.items()
        )
    return callable(value)


def _is_str(value) -> bool:
    return isinstance(value, str)


def _is_dataclass_type(value) -> bool:
    return isinstance(value, type) and dataclasses.is_dataclass(value)


def _is_run(value) -> bool:
    return _is_dataclass_type(value) and issubclass(value, RunBase)


def _strs(value) -> bool:
    return isinstance(value, tuple) and all(isinstance(v, str) for v in value)


def _maybe(obj, name: str, test: Callable) -> bool:
    value = getattr(obj, name)
    return value is None or test(value)


def _expect(obj, name: str, ok: bool, what: str) -> None:
    if not ok:
        raise TypeError(f"{type(obj).__name__}.{name} must be {what}; got {getattr(obj, name)!r}")
