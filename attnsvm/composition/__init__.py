"""From Hydra's composed config to a checked, resolved run config and its hash.

    from attnsvm.composition import RunConfig, config_hash, to_run_config
    run = to_run_config(composed)    # checked and resolved
    config_hash(run)                 # the job's identity

The layer above the schema (attnsvm/config/: the groups' dataclasses, enums, checks; a leaf) and
the registries (the experiments, attnsvm/experiments/; the data sets, attnsvm/data/sets/; the
SVM norms and engines, attnsvm/svm/, attnsvm/train/), which it reads: compose.py (Hydra's
ConfigStore, override keys, the composed config converted), resolve.py and rules.py (what needs
an implementation: data shapes, plug-ins, the experiment's rules, the engine), identity.py (the
job hash). ``RunConfig`` is the core's groups with every experiment's own (its
attnsvm/experiments/<name>/config.py), ``DatasetConfig`` the core dataset keys with every data
set's own, ``Generator`` the data sets' names: built by the registries when first asked for.
"""

from __future__ import annotations

_LATER = {  # name -> module: loaded on first use, so that importing the package stays light
    "RunConfig": None,  # the core's with every experiment's group
    "DatasetConfig": None,  # the core keys with every data set's own (attnsvm/data/sets/)
    "Generator": None,  # the data sets' names
    "to_run_config": "attnsvm.composition.compose",
    "check_override_keys": "attnsvm.composition.compose",
    "register_configs": "attnsvm.composition.compose",
    "train_engine": "attnsvm.composition.resolve",
    "config_hash": "attnsvm.composition.identity",
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
    raise AttributeError(f"module 'attnsvm.composition' has no attribute {name!r}")


__all__ = [*_LATER]
