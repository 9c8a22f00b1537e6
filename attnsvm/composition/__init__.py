"""From Hydra's composed config to a checked, resolved run config and its hash.

    from attnsvm.composition import RunConfig, config_hash, to_run_config
    run = to_run_config(composed)    # checked and resolved: its experiment's job config
    config_hash(run)                 # the job's identity

The layer above the schema (attnsvm/config/: the groups' dataclasses, enums, checks; a leaf) and
the registries (the experiments, attnsvm/experiments/; the data sets, attnsvm/data/sets/; the
SVM norms and engines, attnsvm/svm/, attnsvm/train/), which it reads: compose.py (Hydra's
ConfigStore, override keys, the composed config converted), resolve.py and rules.py (what needs
an implementation: data shapes, plug-ins, the experiment's rules, the engine), identity.py (the
job hash). ``experiment=NAME`` is a config group (conf/experiment/): each experiment's job
config is its own class, written out in its package (attnsvm/experiments/<name>/config.py);
``RunConfig`` is the default experiment's, ``DatasetConfig`` the core dataset keys with every
data set's own (attnsvm/data/dataset_config.py).
"""

from __future__ import annotations

from attnsvm.composition.compose import check_override_keys, register_configs, to_run_config
from attnsvm.composition.identity import config_hash
from attnsvm.config.schema import RunBase
from attnsvm.data.dataset_config import DatasetConfig, Generator
from attnsvm.experiments import default_name, job_config
from attnsvm.experiments.engine import train_engine

# the default experiment's job config (its class statement: attnsvm/experiments/<name>/config.py)
RunConfig = job_config(default_name()) if default_name() else RunBase

__all__ = [
    "DatasetConfig",
    "Generator",
    "RunConfig",
    "check_override_keys",
    "config_hash",
    "register_configs",
    "to_run_config",
    "train_engine",
]
