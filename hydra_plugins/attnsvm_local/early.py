"""The sweep's first worker, started with the command: ``python -m attnsvm.run -m ...``.

A worker takes seconds to start (a fresh interpreter importing torch, pandas and scipy), and
the sweep's own process takes seconds to compose and plan the sweep before it knows what to
run. Started by ``attnsvm.run``'s ``cli`` before Hydra, the first worker's start runs beside
that on another core, and the pool takes it (attnsvm.workers.start_early). Only where the
command is a sweep on this launcher and the machine has a core to spare; a sweep with nothing
left to run ends it at exit, having cost a core's idle seconds.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from attnsvm.workers import start_early
from hydra_plugins.attnsvm_local.sweep import WARM

MULTIRUN = ("-m", "--multirun")
# Hydra's flags that print or exit instead of running the sweep
NO_RUN = ("-h", "--help", "--hydra-help", "-i", "--info", "-c", "--cfg", "-p", "--package")
NO_RUN += ("--resolve", "-sc", "--shell-completion", "--version")
LAUNCHER = "hydra/launcher="
THIS_LAUNCHER = ("local",)


def is_local_sweep(argv: Sequence[str]) -> bool:
    """``argv`` asks Hydra for a multirun on this launcher (the default of ``-m``)."""
    if not any(a in MULTIRUN for a in argv) or any(a.split("=")[0] in NO_RUN for a in argv):
        return False
    launchers = [a.lstrip("+~").partition("=")[2] for a in argv if LAUNCHER in a]
    return all(name in THIS_LAUNCHER for name in launchers)


def spare_core() -> bool:
    """More than one core for this process: the worker's start does not slow Hydra's."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) > 1
    return (os.cpu_count() or 1) > 1


def start_first_worker() -> None:
    """The module doc: the first worker of a local sweep (``is_local_sweep``), started now."""
    if spare_core():
        start_early(WARM)
