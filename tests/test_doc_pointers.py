"""Every ``*.py`` file and every ``python -m`` module that a docstring, a comment or a doc
(README.md, docs/*.md) names exists: a pointer a reader follows never leads nowhere."""

from __future__ import annotations

import importlib.util
import io
import re
import tokenize
from pathlib import Path

from conftest import REPO

PY_PATH = re.compile(r"(?<![\w.{/<>*-])([\w./-]*\w\.py)\b")  # not a template's <name>/x.py
MODULE = re.compile(r"python3? -m ([A-Za-z_][\w.]*\w)")
SOURCES = ("attnsvm", "hydra_plugins")
NOT_OURS = {
    "base.py",  # the paper's published code (docs/maxmargin.md), not this repository's
    "attnsvm/experiments/mypath/__init__.py",  # the copy docs/extending.md has the reader make
    "attnsvm/experiments/mypath/readme_rows.py",  # ... and the file that copy drops
}


def _prose(path: Path) -> str:
    """A module's docstrings (triple-quoted strings) and comments; a doc's whole text."""
    text = path.read_text(encoding="utf-8")
    if path.suffix != ".py":
        return text
    parts = []
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.COMMENT:
            parts.append(tok.string)
        elif tok.type == tokenize.STRING and tok.string.lstrip("rbuRBU").startswith('"""'):
            parts.append(tok.string)
    return "\n".join(parts)


def _files() -> list[Path]:
    docs = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    return docs + sorted(p for src in SOURCES for p in (REPO / src).rglob("*.py"))


def _repo_files() -> tuple[set[str], set[str]]:
    """(every .py path relative to the repo, every .py file name) of this checkout."""
    paths = {
        p.relative_to(REPO).as_posix()
        for top in (*SOURCES, "tests", "docs", "conf", "sweeps")
        if (REPO / top).exists()
        for p in (REPO / top).rglob("*.py")
    }
    paths |= {p.name for p in REPO.glob("*.py")}  # setup.py
    return paths, {p.rsplit("/", 1)[-1] for p in paths}


def _exists(name: str, where: Path, paths: set[str], names: set[str]) -> bool:
    if "/" not in name:
        return name in names
    name = name.removeprefix("./")
    if name in paths or (where.parent / name).exists():
        return True
    return any(p.endswith("/" + name) for p in paths)  # relative to a package: svm/solve.py


def test_every_py_file_named_in_prose_exists():
    paths, names = _repo_files()
    missing = [
        f"{path.relative_to(REPO)}: {name}"
        for path in _files()
        for name in sorted(set(PY_PATH.findall(_prose(path))))
        if name not in NOT_OURS and not _exists(name, path, paths, names)
    ]
    assert not missing, missing


def test_every_python_m_module_named_in_prose_exists():
    missing = []
    for path in _files():
        for module in sorted(set(MODULE.findall(_prose(path)))):
            try:
                found = importlib.util.find_spec(module) is not None
            except ModuleNotFoundError:
                found = False
            if not found:
                missing.append(f"{path.relative_to(REPO)}: python -m {module}")
    assert not missing, missing
