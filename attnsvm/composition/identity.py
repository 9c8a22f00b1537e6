"""Job identity: the hash of the resolved run, less the keys that cannot change a number.

The hash is what lets a sweep resume: a job whose hash has finished results is skipped. So keys
added after results were first written enter it only away from their defaults, and an
experiment's own config group (declared ``hash_neutral`` in its EXPERIMENT) only when it is not at
its defaults: sweep directories written before a key existed keep their identities.
"""

from __future__ import annotations

import hashlib
import json
from functools import cache

from attnsvm.composition.resolve import resolve, train_engine
from attnsvm.config.checks import flatten, plain  # noqa: F401  (flatten: re-exported)
from attnsvm.data.sets import hash_neutral_defaults
from attnsvm.experiments import builtin_names, entry, group_of, hash_neutral
from attnsvm.svm.norm_names import DEFAULT as DEFAULT_NORMS

NON_RESULT_KEYS = ("threads", "batch_size", "progress_interval")


# Keys added after results were first written: at these defaults they change no number, so
# they stay out of the hash and earlier sweeps keep their identities (resume, skip). Each data
# set's own keys are so too (``hash_neutral_defaults`` of attnsvm/data/sets/).
HASH_NEUTRAL_DEFAULTS = {
    "parameterization": {"key_query": None},
    "head": {"kwargs": {}, "train": False},
    "optimizer": {
        "kwargs": {},
        "p": 2.0,
        "normalize": True,
        "betas": [0.9, 0.999],
        "gradient": "exact",
    },
    "solver": {"norms": list(DEFAULT_NORMS)},
    "metrics": {"window": 0.5, "gap_shrink": 0.1},
    "": {"loss": "logistic"},  # run-level keys
}


def config_hash(cfg) -> str:
    """Stable 16-hex-digit identity of a run config (results-relevant keys only).

    ``engine`` enters as the engine that trains (``auto`` resolved), so results of the fused
    and the torch engine never share a hash, and ``auto`` and the engine it picks do."""
    cfg = resolve(cfg)
    d = plain(cfg)
    for k in NON_RESULT_KEYS:
        d.pop(k, None)
    neutral = {**HASH_NEUTRAL_DEFAULTS, "dataset": plain(hash_neutral_defaults())}
    for group, defaults in neutral.items():
        for k, default in defaults.items():
            where = d if group == "" else d.get(group)
            if where is not None and where.get(k, default) == default:
                where.pop(k, None)
    for group in neutral_groups(cfg):  # an experiment's group, at its defaults
        d.pop(group)
    if "engine" in d:
        d["engine"] = plain(train_engine(cfg))
    return hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()[:16]


@cache
def _default_plain(config_class: type) -> dict:
    """An experiment group's defaults, as ``plain`` writes them: made once, not per hash (a
    Config() checks its constraints: milliseconds a hash)."""
    return plain(config_class())


def neutral_groups(run) -> list[str]:
    """The hash-neutral experiment groups of ``run`` that are at their defaults."""
    out = []
    for module in map(entry, builtin_names()):
        group = group_of(module)
        if group is not None and hash_neutral(module):
            if plain(getattr(run, group)) == _default_plain(module.Config):
                out.append(group)
    return out
