"""What every job's hash held before each experiment had its own job config, when every job's
config was experiment=gd's with every experiment's group: the groups a job config now lacks
were there, at these values, in every old hash (a value away from them was refused then).

gd's hash keeps holding multitoken's and regpath's groups at these values (its entry's
``hash_legacy``), so gd's identities never changed; the other experiments' old identities are
recomputed from LEGACY_BASE to carry their old sweeps over (attnsvm/composition/migrate.py).
"""

from __future__ import annotations

# the two experiment groups that always entered every job's hash, at their defaults
LEGACY_GROUPS = {  # in their fields' order: the order of their columns in gd's rows
    "multitoken": {
        "threshold": 0.001,
        "zero_threshold": 1e-06,
        "target_accepted": None,
        "max_tried": 1000000,
    },
    "regpath": {
        "r_min": 0.5,
        "r_max": 200.0,
        "points": 12,
        "steps": 500,
        "lr": 0.1,
        "svm_start_noise": 0.1,
    },
}

# every old hash's keys at experiment=gd's defaults (as hashed: hash-neutral keys left out)
LEGACY_BASE = {
    "dataset": {
        "T": 8, "attention": "cross", "causal": False, "d": 10, "generator": "random", "n": 6,
        "query_index": 0,
    },
    "device": "cpu",
    "dtype": "float64",
    "head": {"kind": "linear", "lam": 0.0},
    "metrics": {"delta": 0.001, "epsilon": 0.01},
    "optimizer": {
        "checkpoint_every": 20, "eps": 2.220446049250313e-16, "kind": "ngd", "lr": 0.1,
        "steps": 2000,
    },
    "parameterization": {
        "cone_scale": 100.0, "init": "torch", "init_scale": 0.1, "kind": "w", "m": None,
        "penalty": 2.220446049250313e-16,
    },
    "seed": 0,
    "seeds": 8,
    "solver": {
        "backend": "IPM", "feas_tol": 1e-06, "frobenius": "nnls", "max_iters": 500,
        "rank_rtol": 1e-06, "support_tol": 1e-06, "tol": 1e-10,
    },
    "train": True,
    **LEGACY_GROUPS,
}  # fmt: skip

# the experiments' own groups that entered the old hash only away from their defaults
LEGACY_NEUTRAL = ("benign", "icl", "nexttoken", "rankdyn")
