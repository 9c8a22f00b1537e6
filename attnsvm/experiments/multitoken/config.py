"""The ``multitoken`` config group: shapes of values only (imports nothing of attnsvm but the config
checks), so the core composes it without loading the experiment."""

from __future__ import annotations

from dataclasses import dataclass

from attnsvm.config.checks import coerce_enums, require


@dataclass
class MultitokenConfig:
    """Multi-token SVM-equivalence (docs/math.md#nonlinear-heads-and-svm-equivalence) and the
    published acceptance filters."""

    threshold: float = 1e-3  # O_i = {t : s_it >= threshold} (published 1e-3)
    zero_threshold: float = 1e-6  # a masked prob counts as zero below it (published 1e-6)
    target_accepted: int | None = None  # draw and train seeds until this many are accepted
    max_tried: int = 1_000_000  # stop drawing after this many seeds, accepted or not

    def __post_init__(self) -> None:
        coerce_enums(self, "multitoken")
        require(
            0 < self.zero_threshold <= self.threshold < 1,
            "multitoken.zero_threshold/threshold",
            "0 < zero_threshold <= threshold < 1",
            (self.zero_threshold, self.threshold),
        )
        require(
            self.target_accepted is None or self.target_accepted >= 1,
            "multitoken.target_accepted",
            "null or integers >= 1",
            self.target_accepted,
        )
        require(self.max_tried >= 1, "multitoken.max_tried", "integers >= 1", self.max_tried)
