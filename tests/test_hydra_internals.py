"""Hydra's and OmegaConf's private code, called only through attnsvm/hydra_internals.py, does
what attnsvm relies on in the versions installed, which are the supported ones."""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib.metadata import version

import pytest
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.utils import JobReturn, JobStatus
from omegaconf import OmegaConf, ValidationError
from packaging.version import Version

from attnsvm import hydra_internals as hi
from conftest import REPO

PRIVATE = re.compile(
    r"hydra\._internal|omegaconf\._|\._get_node\(|\._value\(\)|\._set_value\(|\._return_value"
    r"|_apply_overrides_to_config"
)


def _parsed(*overrides: str):
    return OverridesParser.create().parse_overrides(list(overrides))


def test_the_installed_hydra_is_in_the_supported_range_pyproject_declares():
    low, high = hi.SUPPORTED_HYDRA
    assert Version(low) <= Version(version("hydra-core")) < Version(high)
    assert f'"hydra-core>={low},<{high}"' in (REPO / "pyproject.toml").read_text()


def test_grid_expands_a_sweep_as_the_basic_sweeper():
    (batch,) = hi.grid(_parsed("a=1,2", "b=x,y"))
    assert [list(job) for job in batch] == [
        ["a=1", "b=x"], ["a=1", "b=y"], ["a=2", "b=x"], ["a=2", "b=y"]
    ]  # fmt: skip
    assert len(hi.grid(_parsed("a=1,2,3"), max_batch_size=2)) == 2


def test_apply_overrides_and_override_dirname():
    cfg = OmegaConf.create({"a": 0, "b": {"c": "x"}})
    parsed = _parsed("a=5", "b.c=y")
    hi.apply_overrides(parsed, cfg)
    assert (cfg.a, cfg.b.c) == (5, "y")
    assert hi.override_dirname(parsed, "=", ",", ["b.c"]) == "a=5"


def test_raw_nodes_read_and_set_without_resolving():
    cfg = OmegaConf.structured({"n": 1, "ref": "${n}"})
    assert hi.raw_value(hi.child(cfg, "ref")) == "${n}"
    node = hi.child(OmegaConf.structured(_Typed), "n")
    hi.set_raw_value(node, 3)
    assert hi.raw_value(node) == 3
    with pytest.raises(ValidationError):
        hi.set_raw_value(node, "not a number")


@dataclass
class _Typed:
    n: int = 1


def test_returned_gives_what_the_task_returned_without_raising():
    ret = JobReturn(status=JobStatus.FAILED)
    ret.return_value = RuntimeError("failed job")  # Hydra stores a failed job's error there
    assert isinstance(hi.returned(ret), RuntimeError)


def test_no_other_module_calls_private_hydra_or_omegaconf_code():
    found = [
        f"{path.relative_to(REPO)}:{n}: {line.strip()}"
        for path in sorted([*REPO.glob("attnsvm/**/*.py"), *REPO.glob("hydra_plugins/**/*.py")])
        if path.name != "hydra_internals.py"
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if PRIVATE.search(line)
    ]
    assert not found, found
