"""dataset=digits: scikit-learn's 8x8 digits as patch tokens (attnsvm/data/digits.py)."""

from __future__ import annotations

from dataclasses import dataclass, field

INSTANCES = "attnsvm.data.digits:digits_instances"
RESOLVE = "attnsvm.data.digits:resolve_dataset"
SHAPE_FROM_DATA = True

ORDER = 5  # its keys' place among the data sets' keys (columns of the runs table)


@dataclass
class Config:
    classes: list[int] = field(default_factory=lambda: [0, 1])  # Y = +1, -1
    patch: int = 4  # patch side (2 or 4): T = (8 / patch)^2 tokens
    positions: bool = False  # append the patch centre (row, col) to each token
