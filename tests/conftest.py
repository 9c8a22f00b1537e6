"""Shared fixtures: small instances, the repo paths, one torch thread."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import torch

from attnsvm.composition import DatasetConfig
from attnsvm.data.generators import make_instances

REPO = Path(__file__).resolve().parents[1]
CONF_DIR = REPO / "conf"

torch.set_num_threads(1)

# The hundreds of interpreters the tests start (jobs, sweeps and their spawned workers) read
# attnsvm's bytecode from __pycache__ as Python does by default, instead of compiling every
# module in each, where the environment sets PYTHONDONTWRITEBYTECODE.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False


def pytest_report_header(config):
    """Which golden set tests/test_golden.py compares with, and how."""
    sys.path.insert(0, str(REPO / "tests" / "golden"))
    import make
    import tolerances

    kind, own = make.reference_kind()
    if own:
        return f"golden tables: {kind}, this machine kind's own set, bit for bit"
    return (
        f"golden tables: this machine is {make.machine_kind()}; compared with the set of {kind} "
        f"within tolerances: {tolerances.describe()}"
    )


@pytest.fixture
def small_instances():
    return make_instances(DatasetConfig(n=4, T=5, d=6), list(range(6)))
