"""The house's shape: no import cycle in attnsvm, a leaf schema, short modules and functions,
and a core that names no experiment (the registry finds them; DESIGN: "no shared module names
an experiment"). Read from the source with ``ast``, nothing imported but the registry."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from attnsvm.data import sets
from attnsvm.experiments import builtin_names

PKG = Path(__file__).resolve().parents[1] / "attnsvm"
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60
CORE = ("config", "train", "svm", "results", "figures", "job.py", "metrics.py", "run.py",
        "api.py", "progress.py", "runtime.py")  # fmt: skip
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
        names = [stem, *(f"{stem}.{a.name}" for a in node.names)]
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


def _imports() -> dict[str, set[str]]:
    """module -> the attnsvm modules it imports: at module level, inside functions, or later
    by a ``"module:function"`` path."""
    graph = {}
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text())
        skip = _type_checking_nodes(tree)
        graph[module] = {
            target
            for node in ast.walk(tree)
            if isinstance(node, ast.Import | ast.ImportFrom) and id(node) not in skip
            for target in _targets(module, path, node)
        } | {target for node in ast.walk(tree) for target in _later_targets(module, node)}
    return graph


GRAPH = _imports()


def _cycle_through(start: str) -> list[str] | None:
    """The shortest import chain from ``start`` back to itself, if any (breadth first)."""
    paths = {start: [start]}
    queue = [start]
    while queue:
        here = queue.pop(0)
        for nxt in sorted(GRAPH[here]):
            if nxt == start:
                return [*paths[here], start]
            if nxt not in paths:
                paths[nxt] = [*paths[here], nxt]
                queue.append(nxt)
    return None


def test_attnsvm_has_no_import_cycle():
    cycles, seen = [], set()
    for module in sorted(GRAPH):
        cycle = _cycle_through(module)
        if cycle and not seen & set(cycle):
            seen |= set(cycle)
            cycles.append(" -> ".join(cycle))
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def test_the_graph_sees_function_level_and_relative_imports():
    """The checks above can fail: lazy imports inside functions and ``from .x`` count."""
    assert "attnsvm.experiments.rankdyn.bench" in GRAPH["attnsvm.experiments.rankdyn"]  # in a def
    assert "attnsvm.experiments.rankdyn.job" in GRAPH["attnsvm.experiments.rankdyn"]  # later()
    assert "attnsvm.data.userdata" in GRAPH["attnsvm.data.sets.file"]  # INSTANCES = "m:f"
    assert "attnsvm.experiments.rankdyn.config" in GRAPH["attnsvm.experiments.rankdyn"]  # relative


def _schema_module() -> str:
    found = [
        m
        for m, p in MODULES.items()
        for node in ast.walk(ast.parse(p.read_text()))
        if isinstance(node, ast.ClassDef) and node.name == "RunConfig"
    ]
    assert len(found) == 1, found
    return found[0]


def test_the_schema_is_a_leaf():
    schema = _schema_module()
    assert schema == "attnsvm.config.schema"
    assert GRAPH[schema] <= set(LEAVES), GRAPH[schema] - set(LEAVES)
    for i, leaf in enumerate(LEAVES):
        assert GRAPH[leaf] <= set(LEAVES[:i]), f"{leaf} imports {sorted(GRAPH[leaf])}"


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


# Data sets are entries of attnsvm/data/sets/ and SVM norms of attnsvm/svm/norm_names.py: the core
# names neither. The distinctive data set names are matched anywhere; the others (also ordinary
# words, or a head's name) where they name a data set. Step rules and parameterizations declare
# the SVM norm of their geometry and svm/ implements the norms: theirs is the norms' registry,
# so train/ and svm/ are not searched for norm names.
DATA_SETS = set(sets.names())
DISTINCT = {"maxmargin", "joint2d", "nexttoken"} & DATA_SETS
NORMS = ("fro", "nuc", "max", "spectral")


def _experiment_words() -> re.Pattern:
    """Each built-in's name as a whole word; "gd" (a step rule too) only as ``experiment=gd``."""
    names = [re.escape(n) for n in builtin_names() if n != "gd"]
    return re.compile(rf"\b({'|'.join(names)})\b|experiment=gd\b", re.IGNORECASE)


def _data_set_words() -> re.Pattern:
    every = "|".join(map(re.escape, sorted(DATA_SETS)))
    distinct = "|".join(map(re.escape, sorted(DISTINCT)))
    forms = rf"(dataset|generator)(\.value)?\s*(=|==|!=)\s*[\"']?({every})\b|Generator\.({every})"
    return re.compile(rf"\b({distinct})\b|{forms}")


def _norm_words() -> re.Pattern:
    """A norm's name as a string (``"nuc"``, ``'l3'``) or in ``solver.norms=[...]``."""
    names = "|".join(NORMS)
    return re.compile(rf"[\"']({names}|l\d+(\.\d+)?)[\"']|norms=\[\s*({names})")


def _core_files() -> list[Path]:
    return sorted(
        f for c in CORE for f in ([PKG / c] if c.endswith(".py") else (PKG / c).rglob("*.py"))
    )


WORDS = [
    ("icl_loss", False),
    ("# see ICL.", True),
    ("optimizer=gd", False),
    ("experiment=gd", True),
    ("dataset=nexttoken", True),
]


@pytest.mark.parametrize("text,hit", WORDS)
def test_the_experiment_pattern_matches_whole_words(text, hit):
    assert bool(_experiment_words().search(text)) == hit


MEMBER = re.compile(r"^\s*(\w+) = [\"']\1[\"']")  # an enum member: the step rule ``spectral``


def _named(words: re.Pattern, skip=()) -> list[str]:
    named = []
    for path in _core_files():
        if path.relative_to(PKG).parts[0] in skip:
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            found = sorted({m.group(0) for m in words.finditer(line)})
            if found and not (skip and MEMBER.match(line)):
                named.append(f"{path.relative_to(PKG.parent)}:{number}: {', '.join(found)}")
    return named


def test_no_core_module_names_an_experiment():
    named = _named(_experiment_words())
    assert not named, "core modules that name an experiment:\n" + "\n".join(named)


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


def test_no_core_module_names_a_data_set():
    named = _named(_data_set_words())
    assert not named, "core modules that name a data set:\n" + "\n".join(named)


def test_no_core_module_names_a_norm():
    named = _named(_norm_words(), skip=("train", "svm"))
    assert not named, "core modules that name an SVM norm:\n" + "\n".join(named)
