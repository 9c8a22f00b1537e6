"""dataset=maxmargin: the published examples of max-margin token selection for the p-model
(``dataset.example`` picks one), an experiment's own data: drawn by the experiment whose entry
declares it (``datasets``, ``data_set_code``)."""

from __future__ import annotations

from dataclasses import dataclass

from attnsvm.data.data_set import DataSet


@dataclass
class Config:
    example: str | None = None  # which published example (single, multi, joint, loss, ...)


# its keys and what it gives only: its draw, resolution, rules and sweep-file resolvers are its
# experiment's (data_set_code)
DATA_SET = DataSet(
    Config=Config,
    order=4,  # its keys' place among the data sets' keys (columns of the runs table)
    extra=("p0",),  # the example's published start of p, per seed
    shape_from_data=True,
    inits=True,
    doc=__doc__,
)
