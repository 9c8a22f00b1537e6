"""The ``nexttoken`` config group: shapes of values only (imports nothing of attnsvm but the config
checks), so the core composes it without loading the experiment."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import ClassVar

from attnsvm.config.constraints import Interval, check_constraints


class NexttokenLoss(str, Enum):
    """Losses of experiment=nexttoken (docs/nexttoken.md)."""

    nll = "nll"  # -log(attention mass on the label's id) (global notebook)
    lsq2 = "lsq2"  # (1 - softmax_k(e_k^T X^T s)_y)^2, a vocabulary classifier (local notebook)


@dataclass
class NexttokenConfig:
    """Next-token prediction (docs/math.md#next-token-prediction): loss, local selection, which SVMs
    are solved."""

    loss: NexttokenLoss = NexttokenLoss.nll
    local_threshold: float = 0.01  # selected ids C_i = {k : attention mass on k > threshold}
    nuclear: bool | None = None  # solve the nuclear graph-SVMs; null: with parameterization=kq

    CONSTRAINTS: ClassVar = {"local_threshold": Interval(float, 0, 1, closed="neither")}

    def __post_init__(self) -> None:
        check_constraints(self, "nexttoken")
