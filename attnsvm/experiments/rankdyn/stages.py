"""Stages of incremental rank learning, read off one seed's checkpoints.

A stage is a rise of the effective rank: eff_rank = #{sigma_k > rank_frac * sigma_max} of
K Q^T. From a random start the spectrum first *collapses* (the top direction outgrows the rest,
eff_rank falls to its lowest value), so only rises after that lowest point count. A rise is a
new record above everything since the lowest point: a rank that flickers across the threshold
(2, 1, 2) counts once. The loss between two rises is a plateau; ``plateau_losses`` is the loss
just before each rise (the level the stage leaves).

    st = detect_stages(steps, eff_rank, loss)
    st.stage_steps      # [step of each rise]
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class Stages:
    """What ``detect_stages`` found in one seed's (steps, eff_rank, loss)."""

    lowest_step: int  # first step at which eff_rank reaches its minimum
    lowest_rank: int
    stage_steps: list[int] = field(default_factory=list)  # steps at which eff_rank rises
    stage_ranks: list[int] = field(default_factory=list)  # eff_rank right after each rise
    plateau_losses: list[float] = field(default_factory=list)  # loss just before each rise

    @property
    def n_stages(self) -> int:
        return len(self.stage_steps)


def effective_rank(sv: np.ndarray, rank_frac: float) -> np.ndarray:
    """#{sigma_k > rank_frac * sigma_max} over the last axis of singular values (..., d),
    sorted descending; 0 where sigma_max is 0."""
    top = sv[..., :1]
    return ((sv > rank_frac * top) & (top > 0)).sum(-1)


def detect_stages(steps, eff_rank, loss) -> Stages:
    """Rises of ``eff_rank`` (C,) after its lowest point, with the loss (C,) before each."""
    steps, ranks, loss = np.asarray(steps), np.asarray(eff_rank), np.asarray(loss, float)
    low = int(np.argmin(ranks))  # first occurrence of the minimum: the end of the collapse
    out = Stages(int(steps[low]), int(ranks[low]))
    best = ranks[low]
    for c in range(low + 1, len(ranks)):
        if ranks[c] > best:
            best = ranks[c]
            out.stage_steps.append(int(steps[c]))
            out.stage_ranks.append(int(ranks[c]))
            out.plateau_losses.append(float(loss[c - 1]))
    return out


def half_drop_step(steps, loss) -> int | None:
    """First step at which the loss has made half of its total decrease (the escape from the
    small start, a loss-only stage time); None if it never decreased."""
    loss = np.asarray(loss, float)
    drop = loss[0] - loss.min()
    if not drop > 0:
        return None
    return int(np.asarray(steps)[np.argmax(loss <= loss[0] - drop / 2)])


def joined(values) -> str:
    """A list as one parquet-friendly string: "120,3400" ("" for none)."""
    return ",".join(f"{v:.6g}" if isinstance(v, float) else str(v) for v in values)
