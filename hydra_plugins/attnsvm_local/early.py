"""The sweep's workers, started with the command: ``python -m attnsvm.run -m ...``.

A worker takes seconds to start (a fresh interpreter importing torch and pandas), and
the sweep's own process takes seconds to compose and plan the sweep before it knows what to
run. Started by ``attnsvm.run``'s ``cli`` before its key checks and Hydra, the workers' start
runs beside those, and the pool takes them (attnsvm.workers.start_early); a command refused
for a bad key ends them as it exits. Only where the command
is a sweep on this launcher and the machine has a second core; as many as the sweep will
use, as far as the command line tells before Hydra composes it (``early_workers``). A sweep
with fewer jobs left to run ends the rest, having cost their cores some seconds.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from importlib import resources

from omegaconf import OmegaConf

from attnsvm.config.schema import CONF_MODULE
from attnsvm.workers import start_early
from attnsvm.workers import usable_cores as cores  # the cores this process may run on
from hydra_plugins.attnsvm_local.sweep import WARM, n_workers

MULTIRUN = ("-m", "--multirun")
# Hydra's flags that print or exit instead of running the sweep
NO_RUN = ("-h", "--help", "--hydra-help", "-i", "--info", "-c", "--cfg", "-p", "--package")
NO_RUN += ("--resolve", "-sc", "--shell-completion", "--version")
LAUNCHER = "hydra/launcher="
THIS_LAUNCHER = ("local",)
N_JOBS = "hydra.launcher.n_jobs="
SWEEPS = re.compile(r"(range|choice|glob)\(")  # sweeps over values it does not list
ONE_VALUE = re.compile(r"\[[^]]*\]|\{[^}]*\}|'[^']*'|\"[^\"]*\"")


def is_local_sweep(argv: Sequence[str]) -> bool:
    """``argv`` asks Hydra for a multirun on this launcher (the default of ``-m``)."""
    if not any(a in MULTIRUN for a in argv) or any(a.split("=")[0] in NO_RUN for a in argv):
        return False
    launchers = [a.lstrip("+~").partition("=")[2] for a in argv if LAUNCHER in a]
    return all(name in THIS_LAUNCHER for name in launchers)


def early_workers(argv: Sequence[str]) -> int:
    """The workers the sweep of ``argv`` will start, as far as its command line tells: its
    ``n_jobs`` (the command's, else the launcher config's) over at least ``least_jobs``, up
    to one per core; none on one core, where the sweep's own start comes first. The first
    imports while the sweep is composed and forks the others once warm (attnsvm/adopted.py):
    on a 2-core Xeon the 40-job grid's first job then started at 1.6 s on 2 workers, as on 1,
    where two workers importing side by side started it at 1.8-2.0 s
    (docs/benchmarks_sweep.txt)."""
    given = [a.partition("=")[2] for a in argv if a.lstrip("+").startswith(N_JOBS)]
    try:
        n_jobs = int(given[-1]) if given else _configured_n_jobs()
    except ValueError:  # Hydra will say what is wrong with it
        return 0
    here = cores()
    return min(n_workers(n_jobs, least_jobs(argv)), here) if here > 1 else 0


def least_jobs(argv: Sequence[str]) -> int:
    """A lower bound on the jobs of ``argv``'s grid: the product of its lists' lengths, a
    range(), choice() or glob() or a sweep file (``+sweeps=``) counted as two values."""
    jobs = 1
    for key, _, value in (a.partition("=") for a in argv if "=" in a and not a.startswith("-")):
        value = ONE_VALUE.sub("", value)  # [a,b], {k: v} and quoted text are one value
        if key.lstrip("+~") == "sweeps" or SWEEPS.match(value):
            jobs *= 2
        elif "," in value:
            jobs *= value.count(",") + 1
    return jobs


def _configured_n_jobs() -> int:
    path = resources.files(CONF_MODULE) / "hydra" / "launcher" / "local.yaml"
    return int(OmegaConf.load(str(path)).n_jobs)


def start_early_workers(argv: Sequence[str]) -> None:
    """The module doc: the workers of a local sweep (``is_local_sweep``), started now."""
    count = early_workers(argv)
    if count:
        start_early(WARM, count)
