"""The run configuration: ``RunConfig`` and its groups, and the way from Hydra to a run.

    from attnsvm.config import RunConfig, to_run_config
    run = to_run_config(composed)    # checked and resolved

The package is a façade over modules with one job each: enums.py and checks.py (leaves),
schema.py (the core groups' dataclasses: shapes of values only), resolve.py and rules.py (what
needs an implementation: data shapes, plug-ins, the experiment's rules, the engine),
identity.py (the job hash), compose.py (Hydra's ConfigStore, override keys). Each experiment
brings its own group (attnsvm/experiments/<name>/config.py); ``RunConfig`` holds them all.
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
    SolverConfig,
)

_LATER = {  # name -> module: loaded on first use, so that importing the schema stays light
    "RunConfig": None,  # the core's with every experiment's group
    "DatasetConfig": None,  # the core keys with every data set's own (attnsvm/data/sets/)
    "Generator": None,  # the data sets' names
    "to_run_config": "attnsvm.config.compose",
    "check_override_keys": "attnsvm.config.compose",
    "register_configs": "attnsvm.config.compose",
    "train_engine": "attnsvm.config.resolve",
    "config_hash": "attnsvm.config.identity",
}


def __getattr__(name: str):
    if name == "RunConfig":
        from attnsvm.experiments import run_config_class

        return run_config_class()
    if name in ("DatasetConfig", "Generator"):
        from attnsvm.data import sets

        return sets.dataset_class() if name == "DatasetConfig" else sets.generator_enum()
    if name in _LATER:
        import importlib

        return getattr(importlib.import_module(_LATER[name]), name)
    raise AttributeError(f"module 'attnsvm.config' has no attribute {name!r}")


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
    "SolverConfig",
    "plain_name",
    *_LATER,
]
