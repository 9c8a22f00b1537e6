"""Your own instances, without editing attnsvm: ``dataset=file`` and ``dataset=callable``.

    python -m attnsvm.run dataset=file dataset.path=my_tokens.npz seeds=4
    python -m attnsvm.run dataset=callable dataset.target=mylab.data:make dataset.n=5

Arrays (R instances; for a file, instance r is the row of ``seed = r``):

    X  (R, n, T, d) or (n, T, d)   tokens
    Y  (R, n)       or (n,)        labels in {-1, +1}
    v  (R, d)       or (d,)        linear head (the token scores are Y_i v^T x_it)
    V  (R, d, d)    or (d, d)      ReLU-head value matrix (instead of, or beside, v)
    Z  (R, n, d)    or (n, d)      queries; absent: z_i = x_{i, query_index} (self-attention)

A file is checked when the config is composed (missing array, wrong shape, NaN, labels not
+-1, fewer instances than ``seed + seeds``): the error names the array and the expected shape,
and nothing runs. Its SHA-256 enters the resolved config (``dataset.sha256``), so the job's
identity follows the file's content; set it yourself to pin a data set.

A callable ``make(seeds, n, T, d, **kwargs)`` (``dataset.target`` its dotted name,
``dataset.kwargs`` the keyword arguments) returns a dict of these arrays for the given seeds
(first axis ``len(seeds)``), each seed's instance independent of the others; target and kwargs
are part of the job's identity.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

import numpy as np

from attnsvm.config.checks import ConfigError, fill_shape, require
from attnsvm.config.input_checks import (
    check_callable_target,
    check_data_file,
    check_scale,
    real_float64,
    shown,
)
from attnsvm.config.plugins import load_object

REQUIRED = ("X", "Y")
HEADS = ("v", "V")


def _expected(n, T, d) -> dict[str, tuple]:
    return {"X": (n, T, d), "Y": (n,), "v": (d,), "V": (d, d), "Z": (n, d)}


def check_arrays(arrays: dict, source: str) -> tuple[int, int, int, int]:
    """Validate the arrays of ``source`` (all with a leading instance axis); (R, n, T, d)."""
    for name in REQUIRED:
        if name not in arrays:
            raise ConfigError(f"{source}: array {name!r} is missing (X (R, n, T, d), Y (R, n))")
    if not any(h in arrays for h in HEADS):
        raise ConfigError(f"{source}: needs a head: array 'v' (R, d) or 'V' (R, d, d)")
    X = arrays["X"]
    if X.ndim != 4:
        raise ConfigError(f"{source}: array 'X' must be (R, n, T, d); got shape {X.shape}")
    R, n, T, d = X.shape
    if T < 2:
        raise ConfigError(f"{source}: array 'X' has T={T} tokens per sequence; at least 2")
    for name, shape in _expected(n, T, d).items():
        if name in arrays and arrays[name].shape != (R, *shape):
            want = ", ".join(["R", *map(str, shape)])
            raise ConfigError(
                f"{source}: array {name!r} must have shape ({want}) = {(R, *shape)} to match X "
                f"{X.shape}; got {arrays[name].shape}"
            )
    for name, a in arrays.items():
        if not np.all(np.isfinite(a)):
            raise ConfigError(f"{source}: array {name!r} holds NaN or inf")
    if not np.isin(arrays["Y"], (-1, 1)).all():
        raise ConfigError(f"{source}: array 'Y' must hold labels -1 or +1 only")
    check_scale(arrays, source)  # products neither overflow nor underflow float64
    return R, n, T, d


def _with_instance_axis(arrays: dict) -> dict:
    """A single instance (X of 3 dims) gets the leading instance axis, R = 1."""
    if arrays.get("X") is not None and arrays["X"].ndim == 3:
        return {k: a[None] for k, a in arrays.items()}
    return arrays


@functools.cache
def _read(path: str, mtime_ns: int) -> tuple[dict, str, tuple]:
    source = f"dataset.path={path}"
    try:
        with np.load(path, allow_pickle=False) as f:
            arrays = {k: real_float64(f[k], k, source) for k in f.files}
    except ConfigError:
        raise
    except (OSError, ValueError, EOFError) as exc:
        raise ConfigError(f"{source}: not a readable .npz file ({exc})") from None
    arrays = _with_instance_axis(arrays)
    shape = check_arrays(arrays, source)
    digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    return arrays, digest, shape


def read_file(path: str) -> tuple[dict, str, tuple[int, int, int, int]]:
    """(arrays with the instance axis, SHA-256 of the file, (R, n, T, d)); cached per version."""
    p = check_data_file(path)  # exists, not empty, an .npz archive
    return _read(str(p.resolve()), p.stat().st_mtime_ns)


def file_instances(cfg, seeds: list[int]):
    """The instances of ``seeds`` (rows of the file), as the generators return them."""
    arrays, _, (R, *_) = read_file(cfg.path)
    if max(seeds) >= R:
        raise ConfigError(f"dataset.path={cfg.path} holds {R} instances; seed {max(seeds)} asked")
    return _tensors({k: a[seeds] for k, a in arrays.items()}, cfg.query_index)


def callable_instances(cfg, seeds: list[int]):
    """Call the user's generator for ``seeds`` and check what it returns."""
    fn = load_object(cfg.target, "dataset.target")
    out = fn(list(seeds), cfg.n, cfg.T, cfg.d, **dict(cfg.kwargs))
    source = f"dataset.target={cfg.target}"
    if not isinstance(out, dict):
        raise ConfigError(f"{source} returned {type(out).__name__}, not a dict of arrays")
    arrays = {k: real_float64(_host(v), k, source) for k, v in out.items()}
    R, n, T, d = check_arrays(arrays, source)
    if (R, n, T, d) != (len(seeds), cfg.n, cfg.T, cfg.d):
        raise ConfigError(
            f"{source} returned X of shape {(R, n, T, d)}; expected (len(seeds), n, T, d) = "
            f"{(len(seeds), cfg.n, cfg.T, cfg.d)}"
        )
    return _tensors(arrays, cfg.query_index)


def _host(a):
    """A torch tensor returned by a generator, on a GPU or with autograd, as a CPU array."""
    return a.detach().cpu().numpy() if hasattr(a, "detach") else a


def _tensors(arrays: dict, query_index: int):
    """(X, Y, Z, v[, V]) as torch tensors; Z absent: the query token x_{i, query_index}."""
    import torch

    t = {k: torch.as_tensor(a) for k, a in arrays.items()}
    X = t["X"]
    Z = t["Z"] if "Z" in t else X[:, :, query_index].clone()
    d = X.shape[-1]
    v = t["v"] if "v" in t else torch.full((X.shape[0], d), d**-0.5, dtype=X.dtype)
    return (X, t["Y"], Z, v, t["V"]) if "V" in t else (X, t["Y"], Z, v)


def resolve_callable(ds) -> dict:
    """The target imported and its signature checked (nothing to fill in)."""
    check_callable_target(ds.target, ds.kwargs, ds.n, ds.T, ds.d)
    return {}


def resolve_file(ds) -> dict:
    """n, T, d from the file (null) or checked against it; sha256 filled in or checked."""
    _, digest, (_, *shape) = read_file(ds.path)
    out = fill_shape(ds, dict(zip(("n", "T", "d"), shape, strict=True)), f"dataset.path={ds.path}")
    if ds.sha256 not in (None, digest):
        raise ConfigError(f"dataset.sha256={ds.sha256} pins another file: {ds.path} has {digest}")
    return {**out, "sha256": digest}


def check_instances_held(run) -> None:
    """The file holds an instance for every seed of the run."""
    _, _, (R, *_) = read_file(run.dataset.path)
    require(
        run.seed + run.seeds <= R,
        "seed/seeds",
        f"seed + seeds <= {R}, the instances in dataset.path={run.dataset.path}",
        (run.seed, run.seeds),
    )


def file_gives_values(run) -> bool:
    """A file gives head=relu its value matrix when it holds V."""
    return "V" in read_file(run.dataset.path)[0]


def check_callable_output(run) -> None:
    """What ``dataset=callable``'s generator returns for the first two seeds, checked before a
    job directory is written: a wrong return is a one-line error, not a failed job."""
    ds = run.dataset
    if getattr(ds.generator, "value", ds.generator) != "callable":
        return
    seeds = run.seed_list[:2]
    try:
        callable_instances(ds, seeds)
    except ConfigError:
        raise
    except Exception as exc:  # the user's code: whatever it raises is reported in one line
        raise ConfigError(
            f"dataset.target={ds.target!r} raised {type(exc).__name__} for seeds {seeds}: "
            f"{shown(str(exc), 200)}"
        ) from None
