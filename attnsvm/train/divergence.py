"""Diverged training, found in the checkpoints every engine already records.

A non-finite value never leaves the state of full-batch GD once it is in it (an inf or NaN in W
makes every later score, gradient and step non-finite; a gradient whose norm overflows makes
the same zero step at every later iteration), so the first checkpoint that shows one names the
failure; nothing is checked inside the training loop, and finite runs keep every bit. The
quantities read are the recorded loss, ||grad||, W (and v) and ||W||_F: with entries near 1e300
W can stay finite while its norm, and every metric built on it, overflows float64.

    why = divergence(traj.steps, loss=traj.loss[:, r], grad_norm=..., W=Ws)
    # "||W||_F non-finite (float64 overflow) at step 20, the first checkpoint that shows it"
"""

from __future__ import annotations

import numpy as np

NAMES = {"W": "W", "v": "v", "loss": "loss", "grad_norm": "||grad||", "s": "softmax"}
NORMED = ("W", "v")  # parameters whose Frobenius norm is checked too


def _as_numpy(a) -> np.ndarray:
    return a.detach().cpu().numpy() if hasattr(a, "detach") else np.asarray(a)


def _bad_per_checkpoint(name: str, a: np.ndarray) -> dict[str, np.ndarray]:
    """{quantity: (C,) bool} where ``a`` (C, ...) holds a non-finite value (or norm)."""
    flat = a.reshape(a.shape[0], -1).astype(np.float64)
    bad = {NAMES.get(name, name): ~np.isfinite(flat).all(-1)}
    if name in NORMED:
        with np.errstate(over="ignore", invalid="ignore"):
            norm = np.sqrt(np.einsum("ci,ci->c", flat, flat))
        bad[f"||{name}||_F (float64 overflow)"] = ~np.isfinite(norm) & ~bad[NAMES[name]]
    return bad


def divergence(steps, **quantities) -> str | None:
    """None when every checkpoint of one seed is finite; else the reason of status
    ``diverged``: which quantities are non-finite at the first checkpoint that shows one, and
    its step. ``quantities``: name -> (C, ...) per-checkpoint values (tensors or arrays)."""
    bad: dict[str, np.ndarray] = {}
    for name, a in quantities.items():
        if a is not None:
            bad.update(_bad_per_checkpoint(name, _as_numpy(a)))
    any_bad = np.logical_or.reduce(list(bad.values()))
    if not any_bad.any():
        return None
    c = int(np.argmax(any_bad))
    what = ", ".join(q for q, b in bad.items() if b[c])
    return f"{what} non-finite at step {int(steps[c])}, the first checkpoint that shows it"
