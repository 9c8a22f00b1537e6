"""In a local sweep's worker: one job, run by Hydra's own ``run_job``.

setup_worker(hydra_context, singleton_state)   # once per worker (the pool's setup)
status = run_one(sweep_config, planned)         # each job: its composed config and plan
"""

from __future__ import annotations

import functools
import sys

from hydra.core.singleton import Singleton
from hydra.core.utils import run_job, setup_globals

_WORKER: dict = {}  # the sweep's Hydra context (``setup_worker``)


def setup_worker(hydra_context, singleton_state) -> None:
    """Once per worker: Hydra's global state as the sweep's process has it."""
    setup_globals()
    Singleton.set_state(singleton_state)
    _WORKER["hydra_context"] = hydra_context


def run_one(config, planned: tuple):
    """One job; returns ``attnsvm.run.execute``'s status, or raises its error."""
    from attnsvm.run import execute

    try:
        ret = run_job(
            hydra_context=_WORKER["hydra_context"],
            task_function=functools.partial(execute, planned),
            config=config,
            job_dir_key="hydra.sweep.dir",
            job_subdir_key="hydra.sweep.subdir",
        )
        return ret.return_value  # a status, or the job's error raised
    finally:
        sys.stdout.flush()  # the job's summary before the sweep's last line
        sys.stderr.flush()
