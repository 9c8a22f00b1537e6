"""The ``multitoken`` config group: shapes of values only (imports nothing of attnsvm but the config
checks), so the core composes it without loading the experiment."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from attnsvm.config.constraints import Interval, NoneOr, Rule, check_constraints


@dataclass
class MultitokenConfig:
    """Multi-token SVM-equivalence (docs/math.md#nonlinear-heads-and-svm-equivalence) and the
    published acceptance filters."""

    threshold: float = 1e-3  # O_i = {t : s_it >= threshold} (published 1e-3)
    zero_threshold: float = 1e-6  # a masked prob counts as zero below it (published 1e-6)
    target_accepted: int | None = None  # draw and train seeds until this many are accepted
    max_tried: int = 1_000_000  # stop drawing after this many seeds, accepted or not

    CONSTRAINTS: ClassVar = {
        "threshold": Interval(float, 0, 1, closed="neither"),
        "zero_threshold": Interval(float, 0, 1, closed="neither"),
        "target_accepted": NoneOr(Interval(int, 1)),
        "max_tried": Interval(int, 1),
    }
    RULES: ClassVar = (
        Rule(
            "zero_threshold",
            "floats <= multitoken.threshold",
            lambda c: c.zero_threshold <= c.threshold,
            actual=lambda c: f"{c.threshold:g}",
        ),
    )

    def __post_init__(self) -> None:
        check_constraints(self, "multitoken")
