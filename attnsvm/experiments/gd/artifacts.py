"""gd's arrays.npz (attnsvm/results/artifacts.py): per seed, what a re-analysis needs to solve
new SVMs and recompute the metrics without training (attnsvm/experiments/gd/reanalysis.py).

Seeds are the first axis, or the second where there is one entry per checkpoint:

    seeds (R,)  draw_sha256 (R,)  opt (R, n)            the draw: rebuilt from seed and meta
    steps (C,)  selected (C, R, n)  loss, grad_norm, softmax_max, softmax_min_max (C, R)
                                                        (C = 1, the last, without checkpoints)
    W (R, d, d)  v (R, d)  final_softmax (R, n, T)      the final parameters (W = K Q^T)
    W_checkpoints (C, R, d, d)  v_checkpoints (C, R, d)  with artifact_checkpoints=true
    svm_opt_<norm>, svm_sel_<norm> (R, d, d)            the SVMs at opt / at the selected
                                                        tokens (NaN where none was found)
"""

from __future__ import annotations

import logging

import numpy as np
import torch

from attnsvm.config.checks import plain
from attnsvm.results.artifacts import ArtifactError, draw_digest, meta, read_meta
from attnsvm.svm import norms
from attnsvm.train.state import Trajectory

log = logging.getLogger("attnsvm")
PER_CHECKPOINT = ("selected", "loss", "grad_norm", "softmax_max", "softmax_min_max")
PER_CHECKPOINT += ("W_checkpoints", "v_checkpoints")  # seeds on axis 1 (axis 0: checkpoints)
SVM_PREFIXES = ("svm_opt_", "svm_sel_")


def _numpy(t: torch.Tensor) -> np.ndarray:
    return t.detach().cpu().numpy()


def svm_arrays(svms: tuple) -> dict:
    """The SVM solutions of a batch, (at opt, at the selected tokens where they moved; None for
    an SVM-only job), as ``svm_opt_<norm>`` / ``svm_sel_<norm>`` (R, d, d); NaN where a seed's
    solution has no W, nothing where no seed's has."""
    at_opt, at_sel = svms
    seeds = range(len(at_opt))
    picks = {"svm_opt_": [at_opt[r] for r in seeds]}
    if at_sel is not None:
        picks["svm_sel_"] = [at_sel.get(r, at_opt[r]) for r in seeds]
    out = {}
    for prefix, per_seed in picks.items():
        for name in at_opt[0]:
            sols = [s[name] for s in per_seed]
            shape = next((np.shape(s.W) for s in sols if s.W is not None), None)
            if shape is not None:
                out[f"{prefix}{norms.column(name)}"] = np.stack(
                    [np.full(shape, np.nan) if s.W is None else np.asarray(s.W) for s in sols]
                )
    return out


def batch_arrays(cfg, inst, traj: Trajectory | None, svms: tuple) -> dict:
    """One batch's arrays (``traj`` None: an SVM-only job); {} with ``artifacts=false``."""
    if not cfg.artifacts:
        return {}
    R = len(inst.seeds)
    out = {
        "seeds": np.asarray(inst.seeds, dtype=np.int64),
        "opt": _numpy(inst.opt),
        "draw_sha256": np.array([draw_digest(*_draw(inst, r)) for r in range(R)]),
    }
    if traj is not None:  # per checkpoint: every one where their W are kept, else the last
        at = slice(None) if cfg.artifact_checkpoints else slice(-1, None)
        out["steps"] = np.asarray(traj.steps[at], dtype=np.int64)
        out.update({name: _numpy(getattr(traj, name)[at]) for name in PER_CHECKPOINT[:5]})
        out["W"] = _numpy(traj.W[-1])
        out["final_softmax"] = _numpy(traj.final_softmax)
        if traj.v is not None:
            out["v"] = _numpy(traj.v[-1])
        if cfg.artifact_checkpoints:
            out["W_checkpoints"] = _numpy(traj.W)
            if traj.v is not None:
                out["v_checkpoints"] = _numpy(traj.v)
    out.update(svm_arrays(svms))
    return out


def _draw(inst, r: int) -> tuple:
    return tuple(_numpy(t[r]) for t in (inst.X, inst.Y, inst.Z))


def _or_nan(batch: dict, name: str, like: np.ndarray, axis: int) -> np.ndarray:
    """The batch's array ``name``, or NaN for each of its seeds where it has none (an SVM no
    seed of this batch solved, which another batch did): as svm_arrays fills one seed."""
    if name in batch:
        return batch[name]
    shape = list(like.shape)
    shape[axis] = len(batch["seeds"])
    return np.full(shape, np.nan)


def join_batches(cfg, batches: list[dict]) -> dict:
    """The job's arrays from its batches' (seeds concatenated), with ``meta``: the data set
    and what else rebuilds each seed's draw; {} with ``artifacts=false``, or when they would
    take more than ``artifact_max_mb`` (uncompressed; the log says so)."""
    batches = [b for b in batches if b]
    if not batches:
        return {}
    out = {}
    for name in dict.fromkeys(k for b in batches for k in b):  # every batch's, in order
        like = next(b[name] for b in batches if name in b)
        if name == "steps":
            out[name] = like
            continue
        axis = 1 if name in PER_CHECKPOINT else 0
        out[name] = np.concatenate([_or_nan(b, name, like, axis) for b in batches], axis=axis)
    out["meta"] = meta(
        experiment="gd",
        dataset=plain(cfg.dataset),
        dtype=plain(cfg.dtype),
        parameterization=plain(cfg.parameterization),
        checkpoints=bool(cfg.artifact_checkpoints and "steps" in out),
    )
    size = sum(a.nbytes for a in out.values()) / 1e6
    if cfg.artifact_max_mb and size > cfg.artifact_max_mb:
        log.warning(
            "arrays.npz not written: %.1f MB of arrays, over artifact_max_mb=%g (raise it to "
            "keep them)", size, cfg.artifact_max_mb,
        )  # fmt: skip
        return {}
    return out


def check_draw(inst, arrays: dict) -> None:
    """The rebuilt draw is the one GD trained on, seed by seed (``draw_sha256``)."""
    for r, (seed, want) in enumerate(zip(arrays["seeds"], arrays["draw_sha256"], strict=True)):
        if draw_digest(*_draw(inst, r)) != str(want):
            raise ArtifactError(
                f"seed {seed}: the data rebuilt from the seed differs from the draw GD trained "
                f"on (arrays.npz's draw_sha256); data set: {read_meta(arrays)['dataset']}"
            )


def trajectory(arrays: dict) -> tuple[Trajectory, bool]:
    """The batch's ``Trajectory`` from its arrays, and whether it holds every checkpoint
    (``W_checkpoints`` kept); else only the last checkpoint."""
    kept = "W_checkpoints" in arrays
    W = arrays["W_checkpoints"] if kept else arrays["W"][None]
    v = arrays.get("v_checkpoints") if kept else arrays.get("v")
    if v is not None and not kept:
        v = v[None]
    return Trajectory(
        steps=[int(s) for s in arrays["steps"]],
        W=torch.from_numpy(W),
        final_softmax=torch.from_numpy(arrays["final_softmax"]),
        v=None if v is None else torch.from_numpy(v),
        **{name: torch.from_numpy(arrays[name]) for name in PER_CHECKPOINT[:5]},
    ), kept
