"""The ``regpath`` config group: shapes of values only (imports nothing of attnsvm but the config
checks), so the core composes it without loading the experiment."""

from __future__ import annotations

from dataclasses import dataclass

from attnsvm.config.checks import check_finite, coerce_enums, require


@dataclass
class RegpathConfig:
    """Regularization path: min L s.t. ||W||_F <= R, or ||K||^2 + ||Q||^2 <= 2R for (K,Q)."""

    r_min: float = 0.5
    r_max: float = 200.0
    points: int = 12  # geometric grid of R
    steps: int = 500  # projected GD steps per R (warm-started from the previous R)
    lr: float = 0.1  # normalized step, relative to R
    svm_start_noise: float = 0.1  # second start: SVM direction + this relative Gaussian noise

    def __post_init__(self) -> None:
        coerce_enums(self, "regpath")
        require(
            0 < self.r_min < self.r_max,
            "regpath.r_min/r_max",
            "0 < r_min < r_max",
            (self.r_min, self.r_max),
        )
        require(self.points >= 2, "regpath.points", "integers >= 2", self.points)
        require(self.steps >= 1, "regpath.steps", "integers >= 1", self.steps)
        require(self.lr > 0, "regpath.lr", "floats > 0", self.lr)
        require(
            self.svm_start_noise >= 0,
            "regpath.svm_start_noise",
            "floats >= 0",
            self.svm_start_noise,
        )
        check_finite(self, "regpath", ("r_min", "r_max", "lr", "svm_start_noise"))
