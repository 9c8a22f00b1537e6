"""The house's shape: no import cycle in attnsvm, a leaf schema, short modules and functions,
and a core that names no experiment (the registry finds them; DESIGN: "no shared module names
an experiment"). Read from the source with ``ast``, nothing imported but the registry."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from attnsvm.config.enums import Generator
from attnsvm.experiments import builtin_names

PKG = Path(__file__).resolve().parents[1] / "attnsvm"
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60
CORE = ("config", "train", "svm", "results", "figures", "job.py", "metrics.py", "run.py",
        "api.py", "progress.py", "runtime.py")  # fmt: skip
LEAVES = ("attnsvm.config.enums", "attnsvm.config.checks")  # import nothing of attnsvm


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


def _imports() -> dict[str, set[str]]:
    """module -> the attnsvm modules it imports, at module level or inside functions."""
    graph = {}
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text())
        skip = _type_checking_nodes(tree)
        graph[module] = {
            target
            for node in ast.walk(tree)
            if isinstance(node, ast.Import | ast.ImportFrom) and id(node) not in skip
            for target in _targets(module, path, node)
        }
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
    assert "attnsvm.experiments.rankdyn.job" in GRAPH["attnsvm.experiments.rankdyn"]  # in a def
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
    for leaf in LEAVES:
        assert not GRAPH[leaf], f"{leaf} imports {sorted(GRAPH[leaf])}"


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


# Data sets are named in the config still (the Generator enum and DatasetConfig hold every
# generator's keys; a per-generator schema is not built yet): an experiment whose name is also a
# data set's (nexttoken) is matched only as ``experiment=NAME`` there.
DATA_SETS = {g.value for g in Generator}


def _experiment_words() -> re.Pattern:
    """Each built-in's name as a whole word; "gd" (a step rule too) and the names that are also
    a data set's only as ``experiment=NAME``."""
    names = [re.escape(n) for n in builtin_names() if n != "gd" and n not in DATA_SETS]
    also = "|".join(re.escape(n) for n in ["gd", *sorted(set(builtin_names()) & DATA_SETS)])
    return re.compile(rf"\b({'|'.join(names)})\b|experiment=({also})\b", re.IGNORECASE)


def _core_files() -> list[Path]:
    return sorted(
        f for c in CORE for f in ([PKG / c] if c.endswith(".py") else (PKG / c).rglob("*.py"))
    )


WORDS = [
    ("icl_loss", False),
    ("# see ICL.", True),
    ("optimizer=gd", False),
    ("experiment=gd", True),
]


@pytest.mark.parametrize("text,hit", WORDS)
def test_the_experiment_pattern_matches_whole_words(text, hit):
    assert bool(_experiment_words().search(text)) == hit


def test_no_core_module_names_an_experiment():
    words, named = _experiment_words(), []
    for path in _core_files():
        for number, line in enumerate(path.read_text().splitlines(), 1):
            found = sorted({m.group(0) for m in words.finditer(line)})
            if found:
                named.append(f"{path.relative_to(PKG.parent)}:{number}: {', '.join(found)}")
    assert not named, "core modules that name an experiment:\n" + "\n".join(named)
