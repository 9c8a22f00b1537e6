"""The schema of a run: its groups' dataclasses, the enums of their values, the checks.

    from attnsvm.config import OptimizerConfig, Parameterization, ConfigError

The leaf layer: it imports nothing of attnsvm outside attnsvm/config/ (tests/test_house.py).
The package is a façade over modules with one job each: enums.py, checks.py and constraints.py
(leaves), schema.py (the core groups' dataclasses, shapes of values only: ``RunBase``, the core
keys, and ``make_run_config``, which makes ``RunConfig`` from the groups the registries supply),
plugins.py (your own components by import path), input_checks.py (data files, output
directories, generators). What needs the registries above it is attnsvm/composition/: it
exports ``RunConfig`` (the core's keys with every experiment's own group, attnsvm/experiments/
<name>/config.py), ``DatasetConfig`` (DatasetBase with every data set's keys), ``Generator``,
and the way from Hydra to a resolved run and its hash (``to_run_config``, ``config_hash``).
Each name means one class.
"""

from __future__ import annotations

from attnsvm.config.checks import ConfigError, plain_name
from attnsvm.config.enums import (
    W_ONLY_OPTIMIZERS,
    Attention,
    Backend,
    Device,
    DType,
    Engine,
    FroMethod,
    Gradient,
    Head,
    Init,
    Loss,
    Optimizer,
    Parameterization,
)
from attnsvm.config.schema import (
    CONF_MODULE,
    DatasetBase,
    HeadConfig,
    MetricsConfig,
    OptimizerConfig,
    ParameterizationConfig,
    RunBase,
    SolverConfig,
)

__all__ = [
    "CONF_MODULE",
    "W_ONLY_OPTIMIZERS",
    "Attention",
    "Backend",
    "ConfigError",
    "DType",
    "DatasetBase",
    "Device",
    "Engine",
    "FroMethod",
    "Gradient",
    "Head",
    "HeadConfig",
    "Init",
    "Loss",
    "MetricsConfig",
    "Optimizer",
    "OptimizerConfig",
    "Parameterization",
    "ParameterizationConfig",
    "RunBase",
    "SolverConfig",
    "plain_name",
]
