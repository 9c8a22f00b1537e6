"""The house's shape: no import cycle in attnsvm, a leaf schema in a leaf config package
(attnsvm/config/ imports nothing of attnsvm outside it; attnsvm/composition/ is the layer above
the registries that resolves and hashes a run), short modules and functions, and no shared
module that names an experiment, a data set or an SVM norm (the registries find them; DESIGN:
"no shared module names an experiment"). Read from the source with ``ast``, nothing imported
but the registries.

What may name what (no directory is exempt: every other module of attnsvm/ is searched):

* an experiment's name: only the experiments' registry and entries, attnsvm/experiments/**.
  "gd" is also a step rule (``optimizer=gd``, ``Optimizer.gd``, "ngd, gd, sign"), so it is
  matched only in the forms that mean the experiment: a value of the experiment key
  (``experiment=gd``, ``experiment: str = "gd"``, ``.experiment == "gd"``), a path into its
  package (``experiments.gd``, ``experiments/gd``), the registry's ``entry("gd")``, and "gd's",
  "gd job(s)", "gd sweep(s)", "gd experiment";
* a data set's name: also the data sets' registry and entries, attnsvm/data/sets/**, and the
  draw modules an entry names (its ``INSTANCES = "module:function"``, or an
  ``attnsvm/data/<m>.py`` path in its text): a data set's own code;
* an SVM norm's name: also the data sets' entries and draw modules, and NORM_DECLARERS: the
  norms' registry (svm/norm_names.py), the modules implementing a listed norm, and those
  declaring a geometry's norm (step rules, parameterizations), each with its reason;
* PENDING: named offenders whose fix is not made yet, each with the reason; the test fails
  when one no longer offends, so the list only shrinks.
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import pytest

from attnsvm.data import sets
from attnsvm.experiments import builtin_names
from attnsvm.experiments.experiment import TEMPLATE

PKG = Path(__file__).resolve().parents[1] / "attnsvm"
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60
# import nothing of attnsvm but the leaves before them (constraints.py: checks.py's require)
LEAVES = ("attnsvm.config.enums", "attnsvm.config.checks", "attnsvm.config.constraints")


def _name(path: Path) -> str:
    parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_name(p): p for p in sorted(PKG.rglob("*.py"))}


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    """Nodes under ``if TYPE_CHECKING:``: never imported at run time."""
    return {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for stmt in node.body
        for inner in ast.walk(stmt)
    }


def _targets(module: str, path: Path, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The modules of attnsvm an import statement loads (relative ones resolved)."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        base = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
        if node.level:
            base = base[: len(base) - node.level + 1]
            stem = ".".join([*base, *([node.module] if node.module else [])])
        else:
            stem = node.module or ""
        names = [f"{stem}.{a.name}" for a in node.names]  # a submodule, else the stem's name
        if node.module:  # from pkg.mod import ...: pkg.mod loads
            names.insert(0, stem)
    out = []
    for name in names:
        while name and name not in MODULES:  # "pkg.mod.func" -> "pkg.mod"
            name = name.rpartition(".")[0]
        if name and name != module:
            out.append(name)
    return out


LATER = re.compile(r"(attnsvm(?:\.\w+)+):\w+")  # "module:function": imported when called


def _later_targets(module: str, node: ast.AST) -> list[str]:
    """The modules a ``"module:function"`` string names (``later(...)``, a data set's
    ``INSTANCES``): imported when called, so an edge as a lazy import is."""
    if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
        return []
    match = LATER.fullmatch(node.value)
    return [match[1]] if match and match[1] in MODULES and match[1] != module else []


def _template_targets(module: str, node: ast.AST) -> list[str]:
    """The template modules of a package whose entry says ``package=__name__``
    (``Experiment``'s TEMPLATE): imported when their function is first called."""
    if not (isinstance(node, ast.keyword) and node.arg == "package"):
        return []
    if not (isinstance(node.value, ast.Name) and node.value.id == "__name__"):
        return []
    return [f"{module}.{m}" for m, _ in TEMPLATE.values() if f"{module}.{m}" in MODULES]


@cache
def graph() -> dict[str, set[str]]:
    """module -> the attnsvm modules it imports: at module level, inside functions, later by
    a ``"module:function"`` path, or as its package's template modules. Built when a test asks,
    not as the file is collected (every xdist worker collects it)."""
    graph = {}
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text())
        skip = _type_checking_nodes(tree)
        graph[module] = {
            target
            for node in ast.walk(tree)
            if isinstance(node, ast.Import | ast.ImportFrom) and id(node) not in skip
            for target in _targets(module, path, node)
        } | {
            target
            for node in ast.walk(tree)
            for target in [*_later_targets(module, node), *_template_targets(module, node)]
        }
    return graph


def _cycle_through(start: str) -> list[str] | None:
    """The shortest import chain from ``start`` back to itself, if any (breadth first)."""
    paths = {start: [start]}
    queue = [start]
    while queue:
        here = queue.pop(0)
        for nxt in sorted(graph()[here]):
            if nxt == start:
                return [*paths[here], start]
            if nxt not in paths:
                paths[nxt] = [*paths[here], nxt]
                queue.append(nxt)
    return None


def test_attnsvm_has_no_import_cycle():
    cycles, seen = [], set()
    for module in sorted(graph()):
        cycle = _cycle_through(module)
        if cycle and not seen & set(cycle):
            seen |= set(cycle)
            cycles.append(" -> ".join(cycle))
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def test_the_graph_sees_function_level_and_relative_imports():
    """The checks above can fail: lazy imports inside functions, ``from .x`` and a package's
    template modules count."""
    g = graph()
    assert "attnsvm.experiments.gd.figures_sweep" in g["attnsvm.experiments.gd.plots"]  # def
    assert "attnsvm.experiments.rankdyn.bench" in g["attnsvm.experiments.rankdyn"]  # package=
    assert "attnsvm.experiments.rankdyn.job" in g["attnsvm.experiments.rankdyn"]  # package=
    assert "attnsvm.data.userdata" in g["attnsvm.data.sets.file"]  # INSTANCES = "m:f"
    assert "attnsvm.experiments.rankdyn.config" in g["attnsvm.experiments.rankdyn"]  # relative


def _schema_module() -> str:
    found = [
        m
        for m, p in MODULES.items()
        for node in ast.walk(ast.parse(p.read_text()))
        if isinstance(node, ast.ClassDef) and node.name == "RunBase"
    ]
    assert len(found) == 1, found
    return found[0]


def test_every_job_config_is_a_class_written_out():
    """Each experiment's job config is a class statement in its package (go-to-definition
    finds it): none is made at run time."""
    from attnsvm.experiments import entry, names

    for name in names():
        cls = entry(name).job_config
        path = MODULES[cls.__module__]
        defined = {n.name for n in ast.walk(ast.parse(path.read_text()))
                   if isinstance(n, ast.ClassDef)}  # fmt: skip
        assert cls.__qualname__ in defined and cls.__module__.startswith(
            f"attnsvm.experiments.{name}."
        ), (name, cls)


def test_the_schema_is_a_leaf():
    schema = _schema_module()
    assert schema == "attnsvm.config.schema"
    assert graph()[schema] <= set(LEAVES), graph()[schema] - set(LEAVES)
    for i, leaf in enumerate(LEAVES):
        assert graph()[leaf] <= set(LEAVES[:i]), f"{leaf} imports {sorted(graph()[leaf])}"


CONFIG = "attnsvm.config"  # the leaf layer: the schema, its enums, checks and plug-in loader
MODULE_NAME = re.compile(r"attnsvm(?:\.\w+)+")


def _named_modules(module: str) -> set[str]:
    """The attnsvm modules ``module`` names as a whole string (``importlib.import_module``'s
    argument, a lazy export's table): loaded later, so an edge as a lazy import is."""
    tree = ast.parse(MODULES[module].read_text())
    return {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and MODULE_NAME.fullmatch(node.value)
        and node.value in MODULES
    }


def _in_config(module: str) -> bool:
    return module == CONFIG or module.startswith(CONFIG + ".")


def test_config_imports_nothing_of_attnsvm_outside_it():
    """attnsvm/config/ is the leaf layer: the registries (experiments, data sets, SVM norms,
    engines) and attnsvm/composition/, which reads them, sit above it. Imports inside functions,
    ``"module:function"`` paths and module names as strings count."""
    outside = sorted(
        f"{module} imports {target}"
        for module in graph()
        if _in_config(module)
        for target in graph()[module] | _named_modules(module)
        if not _in_config(target)
    )
    assert not outside, "attnsvm/config/ imports above it:\n" + "\n".join(outside)


def test_no_module_over_400_lines():
    lengths = {p.relative_to(PKG.parent): len(p.read_text().splitlines()) for p in MODULES.values()}
    big = [f"{path}: {n}" for path, n in lengths.items() if n > MAX_MODULE_LINES]
    assert not big, f"modules over {MAX_MODULE_LINES} lines:\n" + "\n".join(big)


def test_no_function_over_60_lines():
    long = []
    for path in MODULES.values():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long.append(
                        f"{path.relative_to(PKG.parent)}:{node.lineno} {node.name}: {lines}"
                    )
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines:\n" + "\n".join(long)


DATA_SETS = set(sets.names())
DISTINCT = {"maxmargin", "joint2d", "nexttoken"} & DATA_SETS
NORMS = ("fro", "nuc", "max", "spectral")
SETS = PKG / "data" / "sets"
NORM_DECLARERS = {
    "svm/norm_names.py": "the norms' registry: the names solver.norms accepts",
    "svm/norms.py": "implements each name of norm_names.py",
    "svm/solve.py": "the Frobenius and nuclear solvers, each solution named by its norm",
    "svm/masked.py": "the SVM of a masked problem, by the norm asked for",
    "train/step_rules.py": "each step rule declares the SVM norm of its geometry (svm_norm)",
    "train/parameterizations.py": "each parameterization declares its SVM norm (SVM_NORM)",
}
EXP, SET, NORM = "experiment", "data set", "norm"
PENDING = {  # path -> (what it names, why it is not fixed here yet)
}


def _rel(path: Path) -> str:
    return path.relative_to(PKG).as_posix()


def _draw_modules() -> set[str]:
    """The modules of attnsvm/data/ the data set entries name: a data set's own code."""
    named = set()
    for entry in SETS.glob("*.py"):
        text = entry.read_text()
        named |= {f"data/{m}.py" for m in re.findall(r"attnsvm\.data\.(\w+):\w+", text)}
        named |= set(re.findall(r"attnsvm/(data/\w+\.py)", text))
    return {m for m in named if (PKG / m).is_file()}


def _searched(what: str) -> list[Path]:
    """Every module of attnsvm/ but the registries and entries that may name ``what``
    ("experiment", "data set" or "norm"; the module docstring)."""
    allowed = {"experiments"} | ({"data/sets"} if what != "experiment" else set())
    own = _draw_modules() if what != "experiment" else set()
    own |= set(NORM_DECLARERS) if what == "norm" else set()
    return [
        p
        for p in sorted(PKG.rglob("*.py"))
        if not any(_rel(p).startswith(f"{a}/") for a in allowed) and _rel(p) not in own
    ]


GD_EXPERIMENT = (
    r"experiments?\s*(:\s*str\s*)?(=|==|!=|:)\s*[\"']?gd\b|experiments[./]gd\b"
    r"|\b(entry|module_of)\(\s*[\"']gd[\"']|\bgd('s\b| jobs?\b| sweeps?\b| experiment\b)"
)


def _experiment_words() -> re.Pattern:
    """Each built-in's name as a whole word; "gd" (a step rule too) in the forms that mean the
    experiment (GD_EXPERIMENT, lower case: "GD's" is the algorithm's)."""
    names = [re.escape(n) for n in builtin_names() if n != "gd"]
    return re.compile(rf"\b({'|'.join(names)})\b|(?-i:{GD_EXPERIMENT})", re.IGNORECASE)


def _data_set_words() -> re.Pattern:
    every = "|".join(map(re.escape, sorted(DATA_SETS)))
    distinct = "|".join(map(re.escape, sorted(DISTINCT)))
    forms = rf"(dataset|generator)(\.value)?\s*(=|==|!=)\s*[\"']?({every})\b|Generator\.({every})"
    return re.compile(rf"\b({distinct})\b|{forms}")


def _norm_words() -> re.Pattern:
    """A norm's name as a string (``"nuc"``, ``'l3'``) or in ``solver.norms=[...]``."""
    names = "|".join(NORMS)
    return re.compile(rf"[\"']({names}|l\d+(\.\d+)?)[\"']|norms=\[\s*({names})")


WORDS = [
    ("icl_loss", False),
    ("# see ICL.", True),
    ("optimizer=gd", False),
    ("optimizer.kind in ngd, gd, sign, adam", False),
    ("if ocfg.kind not in (Optimizer.ngd, Optimizer.gd):", False),
    ("the default gd step rule", False),
    ('gd = "gd"', False),
    ("experiment=gd", True),
    ('experiment: str = "gd"  # a package', True),
    ('runs[runs.experiment == "gd"]', True),
    ("from attnsvm.experiments.gd.job import solve_svms", True),
    ("(attnsvm/experiments/gd/limits.py)", True),
    ('entry("gd")', True),
    ("A trained gd job solves", True),
    ("gd's figures", True),
    ("dataset=nexttoken", True),
    ("GD's iterates", False),
]


@pytest.mark.parametrize("text,hit", WORDS)
def test_the_experiment_pattern_matches_where_an_experiment_is_named(text, hit):
    assert bool(_experiment_words().search(text)) == hit


MEMBER = re.compile(r"^\s*(\w+) = [\"']\1[\"']")  # an enum member: the step rule ``spectral``


def _data_set_module(path: Path) -> bool:
    return _rel(path).startswith("data/sets/") or _rel(path) in _draw_modules()


def _named(words: re.Pattern, what: str) -> dict[str, list[str]]:
    """path -> its lines that name ``what``, over the modules searched for it. A data set's
    modules may name their data set where it is an experiment's name too (nexttoken)."""
    named = {}
    for path in _searched(what):
        own = DATA_SETS if _data_set_module(path) else set()
        for number, line in enumerate(path.read_text().splitlines(), 1):
            found = sorted({m.group(0) for m in words.finditer(line)} - own)
            if found and not MEMBER.match(line):
                named.setdefault(_rel(path), []).append(f"{number}: {', '.join(found)}")
    return named


def _check(words: re.Pattern, what: str) -> None:
    named = _named(words, what)
    pending = {p for p, (kinds, _) in PENDING.items() if what in kinds}
    new = [
        f"attnsvm/{p}:{line}" for p, lines in named.items() if p not in pending for line in lines
    ]
    assert not new, f"shared modules that name a {what}:\n" + "\n".join(new)
    stale = sorted(pending - set(named))
    assert not stale, f"PENDING lists modules that no longer name a {what}: {stale}"


def test_no_shared_module_names_an_experiment():
    _check(_experiment_words(), EXP)


DATA_SET_WORDS = [
    ("dataset=maxmargin", True),
    ("the maxmargin examples", True),
    ('if ds.generator.value == "paths":', True),
    ("Generator.relu", True),
    ("head=relu reads V", False),
    ("random draws", False),
    ("a data file", False),
]


@pytest.mark.parametrize("text,hit", DATA_SET_WORDS)
def test_the_data_set_pattern_matches_where_a_data_set_is_named(text, hit):
    assert bool(_data_set_words().search(text)) == hit


@pytest.mark.parametrize(
    "text,hit",
    [('norms = ["fro", "nuc"]', True), ("solver.norms=[fro,l3]", True), ("'l1.75'", True),
     ("x.max(dim=0)", False), ("the nuclear-norm SVM", False), ('"spectral_gap"', False)],
)  # fmt: skip
def test_the_norm_pattern_matches_a_norm_s_name(text, hit):
    assert bool(_norm_words().search(text)) == hit


def test_no_shared_module_names_a_data_set():
    _check(_data_set_words(), SET)


def test_no_shared_module_names_a_norm():
    _check(_norm_words(), NORM)


def test_the_exemptions_are_modules_that_exist():
    """The rule's lists name real modules: a renamed one does not silently widen a check."""
    listed = [*NORM_DECLARERS, *PENDING, *_draw_modules()]
    missing = [p for p in listed if not (PKG / p).is_file()]
    assert not missing, missing
    assert "data/userdata.py" in _draw_modules()  # instances="attnsvm.data.userdata:..."
    assert "data/nexttoken.py" in _draw_modules()  # named by path in data/sets/nexttoken.py


@pytest.mark.parametrize("name", ["RunConfig", "DatasetConfig"])
def test_each_config_name_means_one_class(name):
    """``RunConfig`` and ``DatasetConfig`` are each one class, wherever a module of attnsvm
    holds that name (a class statement, an ``import ... as``, a made class): the leaf's
    RunBase / DatasetBase are the core's, under names of their own."""
    import importlib
    import pkgutil

    import attnsvm

    held = {}
    for info in pkgutil.walk_packages(attnsvm.__path__, "attnsvm."):
        if info.name.split(".")[-1] in ("__main__", "run") or ".bench" in info.name:
            continue  # entry points: importing them runs or parses argv
        module = importlib.import_module(info.name)
        if name in vars(module) or info.name == "attnsvm.composition":
            held[info.name] = getattr(module, name)
    assert "attnsvm.composition" in held, held
    classes = {id(c): f"{c.__module__}.{c.__qualname__}" for c in held.values()}
    assert len(classes) == 1, {m: f"{c.__module__}.{c.__qualname__}" for m, c in held.items()}
    defined = [
        f"{path}:{node.lineno}"
        for path in MODULES.values()
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ClassDef) and node.name == name
    ]
    assert len(defined) <= 1, defined  # RunConfig: the class statement of config/schema.py


# The flow reads top to bottom: the entry points compose a run (composition), whose typed config
# (attnsvm/config/, the leaf) goes to its experiment, which calls the core functions (svm over
# train over data) and writes results. A module imports its own layer or those below it; never
# one above. A module is in the layer of its longest listed package (``attnsvm``: itself only).
LAYERS = (
    ("entry points", ("attnsvm", "attnsvm.__main__", "attnsvm.run", "attnsvm.api", "attnsvm.job",
                      "attnsvm.workers", "attnsvm.interrupt", "attnsvm.bench",
                      "attnsvm.lost_jobs", "attnsvm.query", "attnsvm.report", "attnsvm.publish",
                      "attnsvm.aggregate", "attnsvm.reanalyse", "attnsvm.docgen")),
    ("composition", ("attnsvm.composition", "attnsvm.cli_help")),
    ("experiments", ("attnsvm.experiments",)),
    ("svm", ("attnsvm.svm",)),
    ("train", ("attnsvm.train",)),
    ("data", ("attnsvm.data",)),
    ("results", ("attnsvm.results",)),
    ("leaves", ("attnsvm.config", "attnsvm.runtime", "attnsvm.parallel", "attnsvm.progress",
                "attnsvm.metrics", "attnsvm.figures", "attnsvm.hydra_internals",
                "attnsvm.kernel", "attnsvm._version")),
)  # fmt: skip
_READERS = (
    "results' readers build their tables from each experiment's declarations (axes, "
    "columns, README rows), so they sit above the experiments while results' writers "
    "sit below; the package is not split yet"
)
UPWARD_ALLOWED = {  # "importer -> imported": why it still runs up (the list only shrinks)
    "attnsvm.results.aggregate -> attnsvm.experiments": _READERS,
    "attnsvm.results.readme -> attnsvm.experiments": _READERS,
}  # fmt: skip


def layer_of(module: str) -> int:
    """The index in LAYERS of ``module``'s layer (0: the top)."""
    best = max(
        ((len(prefix), i) for i, (_, prefixes) in enumerate(LAYERS) for prefix in prefixes
         if module == prefix or (prefix != "attnsvm" and module.startswith(prefix + "."))),
        default=None,
    )  # fmt: skip
    assert best is not None, f"{module} is in no layer of LAYERS"
    return best[1]


def _direct_targets(module: str, path: Path, node: ast.Import | ast.ImportFrom) -> list[str]:
    """What an import statement names: ``from pkg import mod`` is ``pkg.mod`` only (the parent
    package is loaded by any import of it, not chosen), ``from pkg import name`` is ``pkg``."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        base = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
        stem = node.module or ""
        if node.level:
            stem = ".".join([*base[: len(base) - node.level + 1], *([stem] if stem else [])])
        names = [f"{stem}.{a.name}" if f"{stem}.{a.name}" in MODULES else stem for a in node.names]
    out = []
    for name in names:
        while name and name not in MODULES:
            name = name.rpartition(".")[0]
        if name and name != module:
            out.append(name)
    return out


def upward_imports() -> list[str]:
    """Every "importer -> imported" edge that runs up LAYERS: at module level, inside functions
    and by a ``"module:function"`` path (imports under ``if TYPE_CHECKING:`` never run)."""
    up = set()
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text())
        skip = _type_checking_nodes(tree)
        for node in ast.walk(tree):
            targets = _later_targets(module, node) + _template_targets(module, node)
            if isinstance(node, ast.Import | ast.ImportFrom) and id(node) not in skip:
                targets += _direct_targets(module, path, node)
            up |= {f"{module} -> {t}" for t in targets if layer_of(t) < layer_of(module)}
    return sorted(up)


def test_the_flow_reads_top_to_bottom():
    up = upward_imports()
    new = [edge for edge in up if edge not in UPWARD_ALLOWED]
    assert not new, "imports that run up the layers:\n" + "\n".join(new)
    stale = sorted(set(UPWARD_ALLOWED) - set(up))
    assert not stale, f"UPWARD_ALLOWED lists imports that no longer run up: {stale}"


def test_the_layer_check_sees_an_upward_import():
    """The check can fail: results over composition, data over train run up; down is fine."""
    assert layer_of("attnsvm.results.store") > layer_of("attnsvm.composition.identity")
    assert layer_of("attnsvm.data.generators") > layer_of("attnsvm.train.loop")
    assert layer_of("attnsvm.kernel.batchops") > layer_of("attnsvm.data.generators")
    assert layer_of("attnsvm.experiments.gd.job") < layer_of("attnsvm.svm.solve")
    assert layer_of("attnsvm.bench.cli") == 0 and layer_of("attnsvm") == 0
    with pytest.raises(AssertionError, match="in no layer"):  # a new module must be placed
        layer_of("attnsvm.unplaced")
