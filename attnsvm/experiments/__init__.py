"""What a job runs: ``experiment=NAME``, a built-in by name or your own by module path.

An experiment is a module with two functions:

    run_job(cfg: RunConfig, progress=None) -> pipeline.JobResult   # all seeds of one job
    summary_text(runs: pd.DataFrame, seconds: float) -> str         # printed after the run

Everything around it is the framework's, the same for built-ins and plug-ins: composition and
validation, thread limits (``pipeline.run_job``), the job hash, the result contract and resume
(``attnsvm/run.py``), sweeps and aggregation. Your own, without editing attnsvm:

    python -m attnsvm.run experiment=mylab.my_experiment seeds=4
"""

from __future__ import annotations

import importlib
from types import ModuleType

from attnsvm.config import ConfigError, Experiment

# built-in name -> its module: attnsvm.<name> (the Experiment enum is the one list of them)
BUILTIN = {e.value: f"attnsvm.experiments.{e.value}" for e in Experiment}
PROTOCOL = ("run_job", "summary_text")


def module_of(name: str, key: str = "experiment") -> ModuleType:
    """The module of experiment ``name``; a ConfigError names what is wrong with it."""
    name = getattr(name, "value", name)  # the Experiment enum or a plain string
    path = BUILTIN.get(name, name)
    try:
        module = importlib.import_module(path)
    except ImportError as exc:
        raise ConfigError(
            f"{key}={name!r}: importing {path!r} (a module with {' and '.join(PROTOCOL)}): {exc}"
        ) from None
    missing = [f for f in PROTOCOL if not callable(getattr(module, f, None))]
    if missing:
        raise ConfigError(f"{key}={name!r}: {path} has no {' or '.join(missing)}")
    return module
