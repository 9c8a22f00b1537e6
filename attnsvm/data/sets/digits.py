"""dataset=digits: scikit-learn's 8x8 digits as patch tokens, an experiment's own data: drawn
by the experiment whose entry declares it (``datasets``, ``data_set_code``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from attnsvm.config.constraints import Options, Satisfies
from attnsvm.data.data_set import DataSet

PATCHES = (2, 4)  # patch sides that tile the 8x8 image into more than one token


def _two_digits(c) -> bool:
    return len(c) == 2 and c[0] != c[1] and all(0 <= x <= 9 for x in c)


@dataclass
class Config:
    classes: list[int] = field(default_factory=lambda: [0, 1])  # Y = +1, -1
    patch: int = 4  # patch side (2 or 4): T = (8 / patch)^2 tokens
    positions: bool = False  # append the patch centre (row, col) to each token

    CONSTRAINTS: ClassVar = {
        "classes": Satisfies("two different digits in 0-9, e.g. [0, 1]", _two_digits),
        "patch": Options(*PATCHES),
    }


# its keys only: its draw and resolution are its experiment's (data_set_code; the head v is the
# hard-margin classifier of the pooled tokens, an SVM, which sits above the data)
DATA_SET = DataSet(
    Config=Config,
    order=5,  # its keys' place among the data sets' keys (columns of the runs table)
    shape_from_data=True,
    doc=__doc__,
)
