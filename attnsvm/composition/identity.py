"""Job identity: the hash of the resolved run, less the keys that cannot change a number.

The hash is what lets a sweep resume: a job whose hash has finished results is skipped. So keys
added after results were first written enter it only away from their defaults, and the keys an
experiment's hash has always held though its job config lacks them enter at the values they
always had (its ``hash_legacy``): sweep directories written before keep their identities.
Sweeps of the other experiments, written when every job config held every group, are carried
to their new identity by attnsvm/composition/migrate.py (``legacy_hash`` below names the old one).
"""

from __future__ import annotations

import copy
import hashlib
import json

from attnsvm.composition.resolve import resolve
from attnsvm.config.checks import flatten, plain  # noqa: F401  (flatten: re-exported)
from attnsvm.data.sets import hash_neutral_defaults
from attnsvm.experiments import entry
from attnsvm.experiments.engine import train_engine
from attnsvm.experiments.legacy import LEGACY_BASE, LEGACY_NEUTRAL
from attnsvm.results.artifacts import NON_RESULT_KEYS
from attnsvm.svm.norm_names import DEFAULT as DEFAULT_NORMS

# Keys added after results were first written: at these defaults they change no number, so
# they stay out of the hash and earlier sweeps keep their identities (resume, skip). Each data
# set's own keys are so too (``hash_neutral_defaults`` of attnsvm/data/sets/), and those an
# experiment's own Config lists in its ``HASH_NEUTRAL`` class attribute.
HASH_NEUTRAL_DEFAULTS = {
    "parameterization": {"key_query": None},
    "head": {"kwargs": {}, "train": False},
    "optimizer": {
        "kwargs": {},
        "p": 2.0,
        "normalize": True,
        "betas": [0.9, 0.999],
        "gradient": "exact",
        "beta": 0.99,
        "weight_decay": 0.0,
        "schedule": "constant",
        "decay_a": 0.5,
        "minibatch": None,
        "replacement": False,
    },
    "solver": {"norms": list(DEFAULT_NORMS)},
    "metrics": {"window": 0.5, "gap_shrink": 0.1},
    "": {"loss": "logistic"},  # run-level keys
}


def hashed(cfg) -> dict:
    """What the hash of the resolved ``cfg`` is taken of: its keys less the non-result ones and
    the hash-neutral defaults, ``engine`` as the engine that trains, and its ``hash_legacy``."""
    d = plain(cfg)
    for k in NON_RESULT_KEYS:
        d.pop(k, None)
    neutral = {**HASH_NEUTRAL_DEFAULTS, "dataset": plain(hash_neutral_defaults())}
    experiment = entry(cfg.experiment)
    if experiment.group is not None:  # its own group's later keys (its Config's HASH_NEUTRAL)
        own = getattr(experiment.Config, "HASH_NEUTRAL", {})
        neutral[experiment.group] = {**neutral.get(experiment.group, {}), **own}
    for group, defaults in neutral.items():
        for k, default in defaults.items():
            where = d if group == "" else d.get(group)
            if where is not None and where.get(k, default) == default:
                where.pop(k, None)
    if "engine" in d:
        d["engine"] = plain(train_engine(cfg))
    d.update(copy.deepcopy(dict(experiment.hash_legacy)))
    return d


def _digest(d: dict) -> str:
    return hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()[:16]


def config_hash(cfg) -> str:
    """Stable 16-hex-digit identity of a run config (results-relevant keys only).

    ``engine`` enters as the engine that trains (``auto`` resolved), so results of the fused
    and the torch engine never share a hash, and ``auto`` and the engine it picks do."""
    return _digest(hashed(resolve(cfg)))


def legacy_hash(cfg) -> str:
    """The identity the resolved ``cfg`` had before each experiment had its own job config: its
    keys over LEGACY_BASE, its own group left out at its defaults where LEGACY_NEUTRAL says so.
    An experiment whose hash keeps its old keys (``hash_legacy``) has its ``config_hash``."""
    cfg = resolve(cfg)
    module = entry(cfg.experiment)
    d = hashed(cfg)
    if not module.hash_legacy:
        d = {**copy.deepcopy(LEGACY_BASE), **d}
    group = module.group
    if group in LEGACY_NEUTRAL and plain(getattr(cfg, group)) == plain(module.Config()):
        d.pop(group)
    return _digest(d)
