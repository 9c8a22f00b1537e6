"""Real data: scikit-learn's bundled 8x8 handwritten digits as token sequences (no download).

Each image (pixels 0..16, scaled to [0, 1]) is cut into (8 / patch)^2 non-overlapping
patch x patch tokens, row-major, each flattened to patch^2 features (plus, with
``dataset.positions``, the patch centre's row and column in [-1, 1]). Two digit classes give
Y = +1 (``dataset.classes[0]``) and -1. Seed s picks n images at random from the two classes
(numpy Generator seeded s). The head v is fitted first on the mean-pooled tokens and frozen
(or trained on with head.train=true): the hard-margin classifier without intercept if the
pooled tokens are separable, else least squares; scaled to unit length. z_i (for the W-model)
is the mean-pooled token, the query of a CLS-like token.

gd's own data (experiment=gd alone reads dataset=digits): the entry attnsvm/data/sets/digits.py
declares its keys, gd's entry this module's draw and resolution (examples/__init__.py).

    python -m attnsvm.run dataset=digits parameterization=p dataset.n=20 dataset.patch=2
    python -m attnsvm.run -m +sweeps=digits
    python -m attnsvm.aggregate outputs/sweeps/digits
"""

from __future__ import annotations

from functools import cache

import numpy as np
import torch

from attnsvm.config.checks import ConfigError, require
from attnsvm.svm.solve import least_distance_dual


@cache
def _digits() -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import load_digits

    data = load_digits()
    return data.images / 16.0, data.target


def available(classes) -> int:
    """How many images the two classes hold."""
    _, target = _digits()
    return int(np.isin(target, classes).sum())


def tokens(images: np.ndarray, patch: int, positions: bool) -> np.ndarray:
    """(m, 8, 8) images -> (m, T, d) patch tokens, row-major."""
    m, k = images.shape[0], 8 // patch
    x = images.reshape(m, k, patch, k, patch).transpose(0, 1, 3, 2, 4).reshape(m, k * k, -1)
    if positions:
        centre = (np.arange(k) + 0.5) / k * 2 - 1  # in [-1, 1]
        rows, cols = np.meshgrid(centre, centre, indexing="ij")
        pos = np.broadcast_to(np.stack([rows, cols], -1).reshape(1, k * k, 2), (m, k * k, 2))
        x = np.concatenate([x, pos], -1)
    return x


def pick(classes, n: int, seed: int) -> np.ndarray:
    """The indices of the n images of seed ``seed`` (among the two classes' images)."""
    _, target = _digits()
    pool = np.flatnonzero(np.isin(target, classes))
    return np.sort(np.random.default_rng(seed).choice(pool, size=n, replace=False))


def pooled_head(X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """Unit v fitted on the mean-pooled tokens: hard margin if separable, else least squares."""
    rows = Y[:, None] * X.mean(1)  # (n, d)
    u, slack = least_distance_dual(rows @ rows.T)
    v = rows.T @ u / slack if slack > 1e-12 else np.linalg.lstsq(X.mean(1), Y, rcond=None)[0]
    return v / np.linalg.norm(v)


def digits_instances(cfg, seeds: list[int]):
    """(X, Y, Z, v) stacked over ``seeds``, float32 like every generator's draws."""
    images, target = _digits()
    out = []
    for seed in seeds:
        idx = pick(cfg.classes, cfg.n, seed)
        X = tokens(images[idx], cfg.patch, cfg.positions)
        Y = np.where(target[idx] == cfg.classes[0], 1.0, -1.0)
        Z = X.mean(1)
        Z = Z / np.maximum(np.linalg.norm(Z, axis=-1, keepdims=True), 1e-12)
        out.append((X, Y, Z, pooled_head(X, Y)))
    return tuple(torch.tensor(np.stack([o[k] for o in out]), dtype=torch.float32) for k in range(4))


def resolve_dataset(ds) -> dict:
    """T, d from the patch size; n checked against the data (the classes and the patch size
    are checked at construction: attnsvm/data/sets/digits.py)."""
    c = ds.classes
    T, d = (8 // ds.patch) ** 2, ds.patch**2 + 2 * ds.positions
    for key, value in (("T", T), ("d", d)):
        if getattr(ds, key) not in (None, value):
            raise ConfigError(
                f"dataset.{key}={getattr(ds, key)} but dataset.patch={ds.patch} "
                f"(positions={ds.positions}) gives {key}={value}: set dataset.{key}="
                f"{value} or null"
            )
    have = available(c)
    require(
        ds.n is not None and 1 <= ds.n <= have,
        "dataset.n",
        f"1..{have}, the images of digits {c[0]} and {c[1]}",
        ds.n,
    )
    return {"T": T, "d": d}
