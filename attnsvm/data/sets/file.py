"""dataset=file: your instances from an .npz (attnsvm/data/userdata.py says which arrays)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from attnsvm.config.constraints import Satisfies
from attnsvm.data.data_set import DataSet


@dataclass
class Config:
    path: str | None = None  # the .npz
    sha256: str | None = None  # the file's digest (filled in; set it to pin)

    CONSTRAINTS: ClassVar = {"path": Satisfies("the path of an .npz file", bool)}


def check_run(run) -> None:
    """The file holds seed + seeds instances."""
    from attnsvm.data.userdata import check_instances_held

    check_instances_held(run)


DATA_SET = DataSet(
    Config=Config,
    order=1,  # its keys' place among the data sets' keys (columns of the runs table)
    instances="attnsvm.data.userdata:file_instances",
    resolve="attnsvm.data.userdata:resolve_file",
    shape_from_data=True,
    values="attnsvm.data.userdata:file_gives_values",  # when the file holds V
    check_run=check_run,
    doc=__doc__,
)
