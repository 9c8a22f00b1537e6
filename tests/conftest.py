"""Shared fixtures: small instances, the repo paths, one torch thread."""

from __future__ import annotations

import os
import sys
from pathlib import Path

# The hundreds of interpreters the tests start (jobs, sweeps and their spawned workers) read
# bytecode from __pycache__ as Python does by default, instead of compiling every module in
# each, where the environment sets PYTHONDONTWRITEBYTECODE. Set before this process imports
# torch: the README's test command installs without byte-compiling (pip --no-compile), so the
# first process to import a module writes its cache.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False

import pytest  # noqa: E402
import torch  # noqa: E402

from attnsvm.composition import DatasetConfig  # noqa: E402
from attnsvm.data.generators import make_instances  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
CONF_DIR = REPO / "conf"

torch.set_num_threads(1)


# Tests that install or start system software (Slurm with MariaDB, Debian's Chromium) run only
# where that is asked for: in CI (CI=true) or by this variable. Elsewhere they skip, saying so.
SYSTEM_OPT_IN = "ATTNSVM_SYSTEM_TESTS"


def system_software_allowed() -> bool:
    return os.environ.get("CI", "").lower() == "true" or os.environ.get(SYSTEM_OPT_IN) == "1"


def skip_unless_system_software(what: str) -> None:
    """Skip the calling test or fixture unless it may install ``what`` system-wide."""
    if not system_software_allowed():
        pytest.skip(
            f"would install or start {what} system-wide: run with CI=true or {SYSTEM_OPT_IN}=1"
        )


# Under pytest-xdist (pyproject's addopts: -n auto --dist loadgroup) a test file runs on one worker,
# so its module fixtures (the golden tables' recomputation, a sweep several tests read) are made
# once; the cluster tests share one group, so that no two clusters (or a cluster and a test that
# needs none running) are up at once. The groups are read from the file names by the scheduler
# below: xdist 3.8 marks a group by rewriting ``item._nodeid``, which pytest 9 no longer reads,
# so its ``xdist_group`` marks split every file over both workers.
CLUSTER_FILES = (  # every file that starts Ray (or Slurm), or needs none running
    "test_cluster_slurm",
    "test_cluster_ray",
    "test_cluster_ray_nodes",
    "test_ray_launcher",
    "test_launchers",
)
# The groups that take longest (``pytest --durations``), started first so that neither worker is
# left with a long one at the end; the others follow by their number of tests.
LONGEST_FIRST = (
    "cluster",
    "test_golden",
    "test_sweep_flow",
    "test_migrate",
    "test_docs",
    "test_sweeps",
    "test_faults",
    "test_resume",
    "test_kernel_levels",
    "test_sweep_reports",
    "test_bad_input",
)


def xdist_group_of(nodeid: str) -> str:
    """The xdist group of a test: its file's stem, or "cluster"."""
    module = Path(nodeid.split("::", 1)[0]).stem
    return "cluster" if module in CLUSTER_FILES else module


def pytest_xdist_auto_num_workers(config):
    """``-n auto`` (pyproject's addopts): one worker per core this process may use, at most 8
    (the cluster group's minutes are serial, so more would wait for it). Not more workers than
    cores: the Ray tests' daemons then starve and the whole suite takes longer, though the
    cluster group leaves part of a core idle while it waits (tests that can use it start
    their processes side by side: the dry runs, the kernel levels)."""
    return max(1, min(len(os.sched_getaffinity(0)), 8))


def pytest_xdist_make_scheduler(config, log):
    """``--dist loadgroup``: one group per test file (``xdist_group_of``), the longest first."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class FileGroups(LoadScopeScheduling):
        ordered = False

        def _split_scope(self, nodeid: str) -> str:
            return xdist_group_of(nodeid)

        def _assign_work_unit(self, node) -> None:
            if not self.ordered:  # the queue is complete when the first unit is handed out
                rank = {group: i for i, group in enumerate(LONGEST_FIRST)}
                queue = sorted(self.workqueue.items(), key=lambda g: rank.get(g[0], len(rank)))
                self.workqueue.clear()
                self.workqueue.update(queue)
                self.ordered = True
            super()._assign_work_unit(node)

    return FileGroups(config, log)


def pytest_collection_modifyitems(config, items):
    """``@pytest.mark.system("what")`` skipped unless allowed."""
    if system_software_allowed():
        return
    for item in items:
        mark = item.get_closest_marker("system")
        if mark is not None:
            reason = (
                f"would install or start {mark.args[0]} system-wide: run with CI=true or "
                f"{SYSTEM_OPT_IN}=1"
            )
            item.add_marker(pytest.mark.skip(reason=reason))


def pytest_report_header(config):
    """Which golden sets tests/test_golden.py compares with, and how."""
    import json

    sys.path.insert(0, str(REPO / "tests" / "golden"))
    import make
    import tolerances

    cases = json.loads((REPO / "tests" / "golden" / "cases.json").read_text())
    by = {}
    for name in cases:
        try:
            by.setdefault(make.reference_kind(name, cases), []).append(name)
        except LookupError:
            by.setdefault(("no set", False), []).append(name)
    lines = [f"golden tables on this machine kind, {make.machine_kind()}:"]
    for (kind, own), names in sorted(by.items()):
        how = "bit for bit" if own else "within tolerances"
        lines.append(f"  {len(names)} cases against the set of {kind}, {how}")
    if not all(own for _, own in by):
        lines.append(f"  tolerances: {tolerances.describe()}")
    return lines


@pytest.fixture
def small_instances():
    return make_instances(DatasetConfig(n=4, T=5, d=6), list(range(6)))
