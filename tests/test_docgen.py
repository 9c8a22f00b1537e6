"""The generated parts of docs/ agree with the code: the configuration reference (every group,
key, default and accepted value, from the schema) and the result columns (from a tiny job of
each built-in experiment). ``python -m attnsvm.docgen --write`` regenerates both."""

from __future__ import annotations

import dataclasses
import shutil
import typing

import pytest

from attnsvm import docgen
from attnsvm.config.constraints import Interval, Rule, Satisfies

FIX = "run `python -m attnsvm.docgen --write` and commit docs/"


def _generated(tag: str) -> str:
    text = (docgen.DOCS / docgen.TARGETS[tag]).read_text()
    return text.split(f"<!-- generated:{tag} -->\n")[1].split(f"\n<!-- /generated:{tag} -->")[0]


def test_configuration_md_holds_the_current_config_reference():
    assert _generated("config-reference") == docgen.config_reference(), FIX


@pytest.mark.slow
def test_result_contract_md_holds_the_columns_the_experiments_write():
    assert _generated("result-columns") == docgen.result_columns(), FIX


def test_a_changed_reference_is_found_stale_and_rewritten(tmp_path):
    shutil.copy(docgen.DOCS / "configuration.md", tmp_path / "configuration.md")
    path = tmp_path / "configuration.md"
    path.write_text(path.read_text().replace("| `seeds` | `8` |", "| `seeds` | `9` |"))
    assert docgen.stale(["config-reference"], tmp_path) == [path]
    assert docgen.stale(["config-reference"], tmp_path, write=True) == [path]
    assert docgen.stale(["config-reference"], tmp_path) == []
    assert "| `seeds` | `8` |" in path.read_text()


@dataclasses.dataclass
class _Toy:
    rate: float = 0.5  # how fast
    names: list[str] = dataclasses.field(default_factory=lambda: ["a"])
    size: int = 3

    CONSTRAINTS: typing.ClassVar = {
        "rate": Interval(float, 0, 1, closed="neither"),
        "names": Satisfies("non-empty lists", bool),
    }
    RULES: typing.ClassVar = (Rule("rate", "floats < 1 / size", lambda t: t.rate < 1 / t.size),)


def test_a_key_row_holds_default_declared_constraints_and_comment():
    rows = docgen.key_table(_Toy, "toy")
    assert rows[2] == "| `toy.rate` | `0.5` | floats in (0, 1); floats < 1 / size | how fast |"
    assert rows[3] == '| `toy.names` | `["a"]` | non-empty lists |  |'
    assert rows[4] == "| `toy.size` | `3` | `int` |  |"  # nothing declared: its type


def test_splice_replaces_only_between_its_markers():
    text = "a\n<!-- generated:x -->\nold\n<!-- /generated:x -->\nb\n"
    assert docgen.splice(text, "x", "new") == text.replace("old", "new")
    with pytest.raises(ValueError, match="generated:y"):
        docgen.splice(text, "y", "new")
